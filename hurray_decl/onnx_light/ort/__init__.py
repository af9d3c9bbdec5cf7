"""ORT MatMulNBits input layouts: profiles ort_matmulnbits_int2/int4/int8 (DIGEST.md § 10).

These values pack the ``B``, ``scales`` and optional ``zero_points`` inputs of
``com.microsoft::MatMulNBits`` version 1 (``weight_prepacked`` unset) instead of the portable
block records. A ``[K, N]`` weight matrix is cut, column by column, into ``G = ceil(K / block)``
groups along K; block ``col * G + g`` holds rows ``g * block .. g * block + block - 1`` of column
``col``, the rows past K being zero padding codes.

One module per responsibility: :mod:`.geometry` (profiles, block size, the plan factory),
:mod:`.descriptor` (the canonical ORT struct type), :mod:`.encode` (parameter rounding,
zero-point storage, codes and payload), :mod:`.decode` (validation and values) and
:mod:`.export` (MatMulNBits initializers). None of them imports the portable codec.
"""

from __future__ import annotations

from .decode import OrtValue, decode_ort, ort_plan, read_ort
from .descriptor import OrtTypeInfo, ort_type, read_ort_type
from .encode import (
    encode_ort,
    ort_payload,
    quantize_ort,
    quantize_ort_with_type,
    round_parameters,
    source_code,
    zero_point_storage,
)
from .export import MatMulNBitsInputs, export_inputs
from .geometry import (
    FIELDS,
    FLOATING,
    IMPLICIT,
    ORT_FORMATS,
    PACKED,
    SOURCE_DTYPES,
    OrtGeometry,
    check_block_size,
    group_rows,
    is_int,
    make_matmul_nbits_plan,
    ort_bits,
    ort_error,
    ort_header,
    real_rows,
)

__all__ = [
    "ORT_FORMATS",
    "SOURCE_DTYPES",
    "FIELDS",
    "IMPLICIT",
    "PACKED",
    "FLOATING",
    "ort_error",
    "is_int",
    "check_block_size",
    "ort_bits",
    "ort_header",
    "OrtGeometry",
    "make_matmul_nbits_plan",
    "group_rows",
    "real_rows",
    "ort_type",
    "OrtTypeInfo",
    "read_ort_type",
    "round_parameters",
    "zero_point_storage",
    "encode_ort",
    "ort_payload",
    "source_code",
    "quantize_ort",
    "quantize_ort_with_type",
    "OrtValue",
    "read_ort",
    "decode_ort",
    "ort_plan",
    "MatMulNBitsInputs",
    "export_inputs",
]
