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

from hurray_decl.onnx_light.ort import decode, descriptor, encode, export, geometry
from hurray_decl.onnx_light.ort.decode import *  # noqa: F403 (each module's __all__)
from hurray_decl.onnx_light.ort.descriptor import *  # noqa: F403 (each module's __all__)
from hurray_decl.onnx_light.ort.encode import *  # noqa: F403 (each module's __all__)
from hurray_decl.onnx_light.ort.export import *  # noqa: F403 (each module's __all__)
from hurray_decl.onnx_light.ort.geometry import *  # noqa: F403 (each module's __all__)

__all__ = [*geometry.__all__, *descriptor.__all__, *encode.__all__, *decode.__all__, *export.__all__]
