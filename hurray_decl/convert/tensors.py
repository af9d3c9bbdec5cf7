"""Whole tensors between formats, one function per (source, target): what the commands run per tensor.

Each function returns the converted tensor or raises the :class:`~hurray_decl.errors.HurrayDeclError`
that says why this tensor has no exact form in the target; a caller converting a model lists
those and goes on.

* GGUF -> Hurray: F32/F16/BF16 as unquantized row-major tensors, Q4_0/Q8_0/Q4_1 as per-block
  affine (:func:`~hurray_decl.convert.gguf.gguf_parts`).
* GGUF -> onnx-light: the quantized types as encoded values
  (:mod:`hurray_decl.convert.onnx_light`), the float types as plain ONNX initializers.
* GGUF / Hurray -> ORT: per-block affine weights as MatMulNBits values (:mod:`.ort`).
* onnx-light -> Hurray and Hurray -> onnx-light: int4/int8 values and affine parts (per-tensor,
  per-channel, per-block); nf4 / mxfp4 / mxfp6 values and NF4 / MXFP (:mod:`.codebook`).
* Hurray / onnx-light -> GGUF: plain row-major tensors of the GGML float and integer types as
  themselves; per-block affine tensors as Q4_0 .. Q8_0 (:func:`~hurray_decl.convert.gguf.parts_blocks`);
  onnx-light affine values as Q4_0 .. Q8_0 and the K-quants
  (:func:`~hurray_decl.convert.onnx_light.onnx_light_to_gguf`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_decl.convert.codebook import codebook_to_hurray, codebook_to_onnx_light
from hurray_decl.convert.gguf import (
    FLOAT_TYPES,
    GGUF_BLOCK,
    GGUF_TYPES,
    MXFP4_NEGATIVE_ZERO,
    SINGLE_LEVEL,
    GgufTensor,
    mxfp4_blocks,
    no_gguf_form,
    parts_blocks,
    sub_blocks,
)
from hurray_decl.convert.gguf_codebook import FORMATS as CODEBOOK_FORMATS
from hurray_decl.convert.hurray import (
    affine_parts,
    block_parts,
    codebook_gguf,
    from_block_parts as tensor_from_parts,
    from_gguf,
    from_gguf_codebook,
    from_gguf_super_blocks,
    plain_blocks_gguf,
    release_pages,
    row_pieces,
    super_blocks_gguf,
)
from hurray_decl.convert.onnx_light import PROFILES, gguf_to_onnx_light, onnx_light_to_gguf
from hurray_decl.convert.ort import empty_model, tensor_to_matmul_nbits
from hurray_decl.convert.parts import BlockParts
from hurray_decl.convert.portable import PORTABLE_FORMATS, SCALE_DATA_TYPES, from_block_parts, to_block_parts
from hurray_decl.errors import ArgumentError, HurrayDeclError, RuleViolation, UnsupportedError
from hurray_decl.hurray.numerics import buffer_contents, dequantize as hurray_dequantize
from hurray_decl.hurray.schemes.ggml_codebook import GgmlCodebook
from hurray_decl.hurray.schemes.ggml_super_block import GgmlSuperBlock
from hurray_decl.hurray.schemes.mxfp import MXFP
from hurray_decl.hurray.schemes.nf4 import NF4
from hurray_decl.hurray.tables import storage as element_storage
from hurray_decl.hurray.tables.element_types import BY_NAME, BY_TAG
from hurray_decl.hurray.tensor import (
    BufferHandle,
    RowMajor,
    TensorDescriptor,
    read_tensor_descriptor,
    validate_buffers,
    write_tensor_descriptor,
)
from hurray_decl.hurray.values import Tensor as HurrayTensor
from hurray_decl.onnx_light import EncodedValueProto, TensorProto

__all__ = [
    "CODEBOOK_TYPES",
    "DEQUANTIZE_DTYPES",
    "GGUF_TARGETS",
    "PRIVATE_TYPES",
    "Tensor",
    "converts_with",
    "dequantized_tensor",
    "dequantizes",
    "float_tensor",
    "gguf_dequantized",
    "gguf_npz",
    "gguf_to_hurray",
    "gguf_to_onnx_light_tensor",
    "gguf_to_ort",
    "hurray_dequantized",
    "hurray_npz",
    "hurray_to_gguf",
    "hurray_to_onnx_light",
    "hurray_to_ort",
    "initializer_to_gguf",
    "initializer_to_hurray",
    "npz_array",
    "onnx_light_model",
    "onnx_light_to_hurray",
]

Tensor = tuple[TensorDescriptor, list[bytes]]
"""A Hurray tensor: its descriptor and its buffers' contents."""

_ONNX_FLOATS = SCALE_DATA_TYPES
"""The ONNX data type of each unquantized float element type (float32, float16, bfloat16)."""
_ONNX_PLAIN = _ONNX_FLOATS | {"float64": TensorProto.DOUBLE, "int8": TensorProto.INT8, "int16": TensorProto.INT16,
                              "int32": TensorProto.INT32, "int64": TensorProto.INT64}
"""The ONNX data type of each unquantized element type a GGUF tensor may have (:data:`FLOAT_TYPES`)
or an initializer converts from and to: the bytes are the same, little-endian."""
_PORTABLE = {bits: fmt for fmt, bits in PORTABLE_FORMATS.items()}


GGUF_TARGETS: dict[str, tuple[str, ...]] = {
    "hurray": (*FLOAT_TYPES, *SINGLE_LEVEL, "MXFP4"),
    "onnx-light": (*FLOAT_TYPES, *PROFILES, "MXFP4"),
    "ort": SINGLE_LEVEL,
}
"""The GGML types each ``convert --to`` target takes from a GGUF file (Q4_1 / Q5_1 to Hurray and
ORT when their offsets are exact; see :func:`gguf_to_hurray`)."""


def converts_with(source: str, target: str) -> tuple[str, ...]:
    """The ``convert`` options that take a GGUF tensor of type ``source`` that ``target`` refused
    (nothing for a source that is not a GGML type name)."""
    private = ("--private-schemes",) if target == "hurray" and source in (*PRIVATE_TYPES, *CODEBOOK_TYPES) else ()
    return private + tuple(f"--to {other}" for other, types in GGUF_TARGETS.items()
                           if other != target and source in types)


def float_tensor(raw: Any, element_type: str, shape: Sequence[int]) -> Tensor:
    """An unquantized row-major tensor of ``element_type`` (float32, float16, bfloat16) holding ``raw``, checked."""
    data = bytes(memoryview(raw).cast("B"))
    descriptor = TensorDescriptor(type_tag=BY_NAME[element_type].tag, shape=tuple(int(n) for n in shape),
                                  layout=RowMajor(), buffers=(BufferHandle(byte_size=len(data)),), quantization=None)
    descriptor = read_tensor_descriptor(write_tensor_descriptor(descriptor))
    validate_buffers(descriptor, [data])
    return descriptor, [data]


_GGML_OF = {element: ggml for ggml, element in FLOAT_TYPES.items()}
"""The GGML type of each Hurray element type that has one."""


def _gguf_tensor(name: str, type_name: str, shape: tuple[int, ...], data: Any) -> GgufTensor:
    if not 1 <= len(shape) <= 4:  # GGML_MAX_DIMS
        raise no_gguf_form(type_name, "a GGUF tensor has 1 to 4 dimensions", "shape", list(shape), "1 .. 4")
    return GgufTensor(name, type_name, shape, np.frombuffer(memoryview(data).cast("B"), np.uint8))


def hurray_to_gguf(name: str, descriptor: TensorDescriptor, buffers: Sequence[Any],
                   ggml_type: str | None = None) -> GgufTensor:
    """A Hurray tensor as a GGUF tensor, exactly: a plain row-major tensor of F32/F16/BF16/F64/I8/I16/I32/I64
    element type as itself, a row-major per-block affine tensor as Q4_0, Q4_1, Q5_0, Q5_1 or Q8_0
    (``ggml_type``, when recorded, or the narrowest that holds it); anything else is refused.
    A large quantized tensor is converted in pieces of rows (:func:`~hurray_decl.convert.hurray.row_pieces`),
    each written into the GGUF bytes as it is made; a refusal, or a type a later piece does not
    fit, is the whole tensor's, converted in one piece."""
    plain = plain_blocks_gguf(descriptor, buffers, ggml_type)
    if plain is not None:
        release_pages(buffers)
        return _gguf_tensor(name, plain[0], tuple(int(n) for n in descriptor.shape), plain[1])
    pieces = row_pieces(descriptor, buffers)
    if pieces is None:
        converted = _hurray_to_gguf(name, descriptor, buffers, ggml_type)
        release_pages(buffers)
        return converted
    rows = int(descriptor.shape[0])
    out = np.empty(0, np.uint8)
    type_name, width = ggml_type, -1
    for start, stop, piece, views in pieces:
        try:
            made = _hurray_to_gguf(name, piece, views, type_name)
        except HurrayDeclError:
            return _hurray_to_gguf(name, descriptor, buffers, ggml_type)
        if width < 0:
            type_name, width = made.type_name, made.data.size // (stop - start)
            out = np.empty(width * rows, np.uint8)
        if made.data.size != width * (stop - start):
            return _hurray_to_gguf(name, descriptor, buffers, ggml_type)
        out[start * width:stop * width] = made.data
        release_pages(views)
    return _gguf_tensor(name, str(type_name), tuple(int(n) for n in descriptor.shape), out)


def _hurray_to_gguf(name: str, descriptor: TensorDescriptor, buffers: Sequence[Any],
                    ggml_type: str | None = None) -> GgufTensor:
    shape = tuple(int(n) for n in descriptor.shape)
    if descriptor.quantization is None:
        element = BY_TAG[descriptor.type_tag].name
        if element not in _GGML_OF or not isinstance(descriptor.layout, RowMajor):
            raise no_gguf_form(element, f"plain GGUF tensors are row-major {', '.join(_GGML_OF)}", "type_tag",
                               (element, type(descriptor.layout).__name__), "a row-major tensor of a GGML type")
        contents = buffer_contents(buffers)
        validate_buffers(descriptor, contents)
        size = int(np.prod(shape)) * np.dtype(element_storage.dtype(element)).itemsize
        plain = np.array(contents[0][descriptor.byte_offset:descriptor.byte_offset + size])  # one copy: the
        return _gguf_tensor(name, _GGML_OF[element], shape, plain)  # source's mapped pages can be released
    if isinstance(descriptor.quantization, MXFP):
        return _gguf_tensor(name, "MXFP4", shape, _mxfp4_data(descriptor, buffers))
    if isinstance(descriptor.quantization, GgmlSuperBlock):
        type_name, data = super_blocks_gguf(descriptor, buffers, ggml_type)
        return _gguf_tensor(name, type_name, shape, data)
    if isinstance(descriptor.quantization, GgmlCodebook):
        type_name, data = codebook_gguf(descriptor, buffers)
        return _gguf_tensor(name, type_name, shape, data)
    type_name, data = parts_blocks(block_parts(descriptor, buffers), ggml_type)
    return _gguf_tensor(name, type_name, shape, data)


def _mxfp4_data(descriptor: TensorDescriptor, buffers: Sequence[Any]) -> np.ndarray:
    """A row-major MXFP tensor of float4_e2m1 elements, blocks of 32 along the last axis, as GGUF
    MXFP4 blocks (the inverse of :func:`~hurray_decl.convert.hurray.from_gguf_mxfp4`); a -0 element
    (code 8) has no MXFP4 form (gguf decodes it as +0)."""
    q = descriptor.quantization
    element = BY_TAG[descriptor.type_tag].name
    shape = tuple(int(n) for n in descriptor.shape)
    if not isinstance(q, MXFP) or element != "float4_e2m1" or not isinstance(descriptor.layout, RowMajor) \
            or q.axis != len(shape) - 1 or q.block_size != GGUF_BLOCK:
        raise no_gguf_form("MXFP4", f"MXFP4 blocks are {GGUF_BLOCK} float4_e2m1 elements along the last axis of a "
                           "row-major tensor", "descriptor -> quantization",
                           (element, getattr(q, "axis", None), getattr(q, "block_size", None)),
                           ("float4_e2m1", len(shape) - 1, GGUF_BLOCK))
    contents = [bytes(memoryview(b).cast("B")) for b in buffers]
    params = validate_buffers(descriptor, contents)
    count = int(np.prod(shape))
    codes = element_storage.unpack_codes(np.frombuffer(contents[0], np.uint8)[descriptor.byte_offset:], 4, count)
    if (codes == MXFP4_NEGATIVE_ZERO).any():
        j = int(np.flatnonzero(codes == MXFP4_NEGATIVE_ZERO)[0])
        raise no_gguf_form("MXFP4", "an element is -0, which MXFP4 decodes as +0", f"elements[{j}]", "-0.0", "+0.0")
    exponents = np.frombuffer(params.raw("scale_buffer_index"), np.uint8)
    return mxfp4_blocks(exponents, codes)


def initializer_to_gguf(value: Any, model: Any = None, ggml_type: str | None = None) -> GgufTensor:
    """An ONNX initializer as a GGUF tensor: an onnx-light affine value as GGUF blocks
    (:func:`~hurray_decl.convert.onnx_light.onnx_light_to_gguf`), a float32/float16/bfloat16
    ``raw_data`` tensor as itself."""
    if isinstance(value, EncodedValueProto) and value.struct_type.name.rsplit("/", 1)[-1] == "mxfp4":
        return hurray_to_gguf(value.name, *codebook_to_hurray(value, model))  # through its exact MXFP form
    if isinstance(value, EncodedValueProto):
        shape = tuple(int(d.dim_value) for d in value.logical_type.tensor_type.shape.dim)
        type_name, data = onnx_light_to_gguf(value, model, ggml_type)
        return _gguf_tensor(value.name, type_name, shape, data)
    descriptor, buffers = initializer_to_hurray(value, model)
    return hurray_to_gguf(value.name, descriptor, buffers)


PRIVATE_TYPES = tuple(name for name, row in GGUF_TYPES.items() if row.two_level or row.has_offset)
"""The GGML types the project's private ggml super-block scheme (0xF0) holds: Q2_K .. Q6_K, which
no public scheme holds, and Q4_1 / Q5_1, whose blocks per-block affine holds only when their
minimum is ``-z * d``."""
CODEBOOK_TYPES = tuple(CODEBOOK_FORMATS)
"""The GGML types the project's private ggml codebook scheme (0xF1) holds: the IQ types, TQ1_0,
TQ2_0 and NVFP4, which no public scheme holds."""


def gguf_to_hurray(tensor: GgufTensor, private_schemes: bool = False) -> Tensor:
    """A GGUF tensor as a Hurray tensor, exactly, or the reason it has no exact form. The K-quants
    (:data:`PRIVATE_TYPES`) go to the project's private ggml super-block scheme only when
    ``private_schemes`` (HQ-EXT-04: a private tag is written only by agreement); otherwise they
    are refused, the scheme named; so are the codebook types (:data:`CODEBOOK_TYPES`, the
    private ggml codebook scheme)."""
    if tensor.type_name in FLOAT_TYPES:
        return float_tensor(tensor.data, FLOAT_TYPES[tensor.type_name], tensor.shape)
    if tensor.type_name in CODEBOOK_TYPES:
        if not private_schemes:
            raise UnsupportedError("HQ-EXT-04", f"{tensor.type_name} takes its values from a codebook, which no "
                                   "public Hurray scheme holds; the project's private scheme ggml_codebook (0xF1) "
                                   "holds them exactly, written only when asked (--private-schemes)",
                                   path="ggml_type", actual=tensor.type_name, expected="--private-schemes")
        return from_gguf_codebook(tensor.data, tensor.type_name, tensor.shape)
    if tensor.type_name in PRIVATE_TYPES and GGUF_TYPES[tensor.type_name].two_level:
        if not private_schemes:
            raise UnsupportedError("HQ-EXT-04", f"{tensor.type_name} has two-level scales, which no public Hurray "
                                   "scheme holds; the project's private scheme ggml_super_block (0xF0) holds them "
                                   "exactly, written only when asked (--private-schemes)", path="ggml_type",
                                   actual=tensor.type_name, expected="--private-schemes")
        return from_gguf_super_blocks(tensor.data, tensor.type_name, tensor.shape)
    try:
        return from_gguf(tensor.data, tensor.type_name, tensor.shape)
    except RuleViolation as err:  # Q4_1 / Q5_1 blocks whose m is no -z * d: the private scheme, when asked
        if err.code != "HQ-PB-22" or not private_schemes or tensor.type_name not in PRIVATE_TYPES:
            raise
        return from_gguf_super_blocks(tensor.data, tensor.type_name, tensor.shape)


DEQUANTIZE_DTYPES = ("float32", "float16", "bfloat16")
"""The element types ``convert --dequantize --dtype`` writes dequantized values in."""
DEQUANTIZE_CHUNK = 1 << 16
"""GGUF blocks decoded at a time by :func:`gguf_dequantized` (its working memory is a few times
this many blocks' values, beside the output)."""


def _rounded(values: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values as ``dtype`` (:data:`DEQUANTIZE_DTYPES`), rounded to nearest, ties to even."""
    if dtype not in DEQUANTIZE_DTYPES:
        raise ArgumentError("dtype", "dequantized values are float32, float16 or bfloat16", actual=dtype,
                            expected=", ".join(DEQUANTIZE_DTYPES))
    return values if dtype == "float32" else values.astype(element_storage.dtype(dtype))


def gguf_dequantized(tensor: GgufTensor, dtype: str = "float32", chunk: int = DEQUANTIZE_CHUNK) -> np.ndarray:
    """A GGUF tensor's values in its NumPy-order shape: a quantized type's as gguf computes them
    in float32 (:func:`~hurray_decl.convert.gguf.sub_blocks` for the types of
    :data:`~hurray_decl.convert.gguf.GGUF_TYPES`, ``chunk`` blocks at a time; gguf-py's
    ``gguf.quants.dequantize`` for the types the package has no decoder of its own for), rounded
    to ``dtype``; a plain type's (:data:`FLOAT_TYPES`) as themselves, whatever ``dtype``. A type
    neither decodes is refused (HE-03)."""
    shape = tuple(int(n) for n in tensor.shape)
    if tensor.type_name in FLOAT_TYPES:
        return np.array(tensor.data.view(element_storage.dtype(FLOAT_TYPES[tensor.type_name])).reshape(shape))
    if tensor.type_name in GGUF_TYPES:
        row = GGUF_TYPES[tensor.type_name]
        size = row.record.itemsize
        blocks = tensor.data.size // size
        out = np.empty(blocks * row.elements, np.float32)
        for start in range(0, blocks, max(1, chunk)):
            stop = min(blocks, start + max(1, chunk))
            out[start * row.elements:stop * row.elements] = sub_blocks(
                tensor.data[start * size:stop * size], row.name, ((stop - start) * row.elements,)).reference()
        return _rounded(out.reshape(shape), dtype)
    import gguf

    kind = getattr(gguf.GGMLQuantizationType, tensor.type_name, None)
    try:
        if kind is None:
            raise NotImplementedError("an unknown GGML type")
        values = gguf.quants.dequantize(tensor.data.reshape(*shape[:-1], -1), kind)
    except (NotImplementedError, ValueError, TypeError) as err:
        raise UnsupportedError("HE-03", f"{tensor.type_name} has no dequantizer here or in gguf-py ({err})",
                               path="ggml_type", actual=tensor.type_name) from None
    return _rounded(np.asarray(values, np.float32).reshape(shape), dtype)


def dequantizes(type_name: str) -> HurrayDeclError | None:
    """None when :func:`gguf_dequantized` takes tensors of the GGML type ``type_name``, else the
    refusal it would raise (HE-03): told from the type alone, before any data is read."""
    if type_name in FLOAT_TYPES or type_name in GGUF_TYPES:
        return None
    import gguf

    kind = getattr(gguf.GGMLQuantizationType, type_name, None)
    if kind is not None and kind in gguf.GGML_QUANT_SIZES:
        try:  # one block of zeros: only the type's support is asked
            gguf.quants.dequantize(np.zeros((1, gguf.GGML_QUANT_SIZES[kind][1]), np.uint8), kind)
            return None
        except NotImplementedError:
            pass
    return UnsupportedError("HE-03", f"{type_name} has no dequantizer here or in gguf-py", path="ggml_type",
                            actual=type_name)


def hurray_dequantized(descriptor: TensorDescriptor, buffers: Sequence[Any], dtype: str = "float32") -> Tensor:
    """A Hurray tensor with its values dequantized (float32, rounded to ``dtype``) as an
    unquantized row-major tensor; an unquantized tensor as it is."""
    if descriptor.quantization is None:
        return descriptor, list(buffers)
    values = _rounded(np.asarray(hurray_dequantize(descriptor, buffers), np.float32), dtype)
    return float_tensor(values.reshape(-1).view(np.uint8), dtype, values.shape)


def npz_array(values: np.ndarray) -> np.ndarray:
    """Values as a ``.npz`` holds them: NumPy's own types as they are, the others (bfloat16)
    widened exactly to float32 (``numpy.load`` has no type for them)."""
    return values if values.dtype.kind in "biufc" else values.astype(np.float32)


def _plain_only(name: str) -> UnsupportedError:
    return UnsupportedError("HT-SEC-01", f"{name} is quantized; a .npz holds plain arrays (--dequantize writes its "
                            "values)", path="descriptor -> quantization", expected="no quantization")


def gguf_npz(tensor: GgufTensor, dequantize: bool, dtype: str = "float32") -> np.ndarray:
    """A GGUF tensor's array for a ``.npz``: a plain type's values, or with ``dequantize`` a
    quantized type's (:func:`gguf_dequantized`); a quantized tensor without it is refused."""
    if tensor.type_name not in FLOAT_TYPES and not dequantize:
        raise _plain_only(f"{tensor.name} ({tensor.type_name})")
    return npz_array(gguf_dequantized(tensor, dtype))


def hurray_npz(name: str, descriptor: TensorDescriptor, buffers: Sequence[Any], dequantize: bool,
               dtype: str = "float32") -> np.ndarray:
    """A Hurray tensor's array for a ``.npz``: an unquantized tensor's values, or with
    ``dequantize`` a quantized one's (float32 rounded to ``dtype``); a quantized tensor without it
    is refused."""
    if descriptor.quantization is not None and not dequantize:
        raise _plain_only(name)
    if descriptor.quantization is not None:
        return npz_array(_rounded(np.asarray(hurray_dequantize(descriptor, buffers), np.float32), dtype))
    return npz_array(HurrayTensor(descriptor, buffers, name).numpy())


def dequantized_tensor(tensor: GgufTensor, dtype: str = "float32") -> Tensor:
    """A GGUF tensor's values (:func:`gguf_dequantized`) as an unquantized row-major Hurray tensor."""
    values = gguf_dequantized(tensor, dtype)
    element = element_storage.element_of_dtype(values.dtype)
    return float_tensor(values.reshape(-1).view(np.uint8), element or "float32", values.shape)


def gguf_to_onnx_light_tensor(tensor: GgufTensor) -> EncodedValueProto | Any:
    """A GGUF tensor as an onnx-light encoded value (quantized types) or an ONNX ``TensorProto`` (float types)."""
    if tensor.type_name in FLOAT_TYPES:
        plain = TensorProto()
        plain.data_type = _ONNX_PLAIN[FLOAT_TYPES[tensor.type_name]]
        plain.dims.extend(tensor.shape)
        plain.raw_data = tensor.data.tobytes()
        return plain
    if tensor.type_name == "MXFP4":  # through its exact MXFP form, to the mxfp4 profile
        return codebook_to_onnx_light(*from_gguf(tensor.data, tensor.type_name, tensor.shape))
    if tensor.type_name not in PROFILES:
        raise UnsupportedError("HE-03", f"{tensor.type_name} has no onnx-light converter here: the converted types "
                               f"are {', '.join(PROFILES)} and {', '.join(FLOAT_TYPES)}", path="ggml_type",
                               actual=tensor.type_name, expected=", ".join((*PROFILES, *FLOAT_TYPES)))
    return gguf_to_onnx_light(tensor.data, tensor.type_name, tensor.shape)


def gguf_to_ort(tensor: GgufTensor, *, scale_type: str | None = "float32") -> EncodedValueProto:
    """A rank-2 GGUF weight ``(N, K)`` as the ORT MatMulNBits value of ``B = W^T`` (via its exact Hurray form)."""
    if tensor.type_name in FLOAT_TYPES:
        raise UnsupportedError("OL-ORT-07", f"{tensor.type_name} has no MatMulNBits form: the tensor is not quantized "
                               "(MatMulNBits nodes hold packed weights only)", path="ggml_type",
                               actual=tensor.type_name, expected="a quantized GGML type")
    if len(tensor.shape) != 2:
        raise UnsupportedError("OL-ORT-07", "a MatMulNBits weight is a matrix", path="shape", actual=list(tensor.shape),
                               expected="rank 2")
    if tensor.type_name in CODEBOOK_TYPES:  # as the block converters refuse a type they lack (HE-03)
        raise UnsupportedError("HE-03", f"no MatMulNBits converter for the GGML type {tensor.type_name}: its values "
                               "come from a codebook", path="ggml_type", actual=tensor.type_name,
                               expected=", ".join(SINGLE_LEVEL))
    return hurray_to_ort(*gguf_to_hurray(tensor), scale_type=scale_type)


def hurray_to_ort(descriptor: TensorDescriptor, buffers: Sequence[Any], *, scale_type: str | None = "float32"):
    """A row-major per-block affine tensor as an ORT MatMulNBits value, float32 by default (see :mod:`.ort`)."""
    return tensor_to_matmul_nbits(descriptor, buffers, scale_type=scale_type)


def hurray_to_onnx_light(descriptor: TensorDescriptor, buffers: Sequence[Any]) -> EncodedValueProto | Any:
    """A Hurray tensor as an onnx-light value with the same float32 values, bit for bit.

    Row-major affine tensors (per-tensor, per-channel, per-block: :func:`~hurray_decl.convert.hurray.affine_parts`)
    of 2-, 4- or 8-bit codes as int4/int8 values (2-bit codes widened to 4); plain row-major
    float32/float16/bfloat16/float64/int8/int16/int32/int64 tensors as ONNX ``TensorProto`` initializers.
    """
    if descriptor.quantization is None:
        element = BY_TAG[descriptor.type_tag].name
        if element not in _ONNX_PLAIN or not isinstance(descriptor.layout, RowMajor):
            raise UnsupportedError("HT-LAY-01", f"plain ONNX initializers here are row-major {', '.join(_ONNX_PLAIN)}",
                                   path="descriptor -> type_tag", actual=(element, type(descriptor.layout).__name__),
                                   expected=f"a row-major tensor of {', '.join(_ONNX_PLAIN)}")
        gguf = hurray_to_gguf("", descriptor, buffers)
        plain = TensorProto()
        plain.data_type = _ONNX_PLAIN[element]
        plain.dims.extend(gguf.shape)
        plain.raw_data = gguf.data.tobytes()
        return plain
    if isinstance(descriptor.quantization, (NF4, MXFP)):
        return codebook_to_onnx_light(descriptor, buffers)
    parts = affine_parts(descriptor, buffers)
    bits = BY_NAME[parts.storage].bits
    if bits == 2:  # 2-bit codes are 4-bit codes too
        parts = BlockParts.from_block_order(parts.codes, parts.storage[:-1] + "4", parts.axis, parts.block_size,
                                            parts.scales, parts.scale_type, parts.zero_points)
        bits = 4
    if bits not in _PORTABLE:
        raise UnsupportedError("HQ-PB-14", "onnx-light int4/int8 values hold 2-, 4- and 8-bit codes", path="storage",
                               actual=parts.storage, expected="int2, uint2, int4, uint4, int8 or uint8")
    return from_block_parts(parts, _PORTABLE[bits], dtype=np.float32)


def onnx_light_to_hurray(value: EncodedValueProto, model: Any = None, ggml_type: str | None = None) -> Tensor:
    """An onnx-light int4/int8 or ORT MatMulNBits value as a per-block affine tensor, codes copied;
    an nf4 / mxfp4 / mxfp6 value as NF4 / MXFP (:mod:`hurray_decl.convert.codebook`).

    A value the direct path refuses that has an exact GGUF form (what ``--to onnx-light`` writes
    for GGUF tensors: offsets of +-2^-1074, scales that are float16 values) goes through it:
    :func:`~hurray_decl.convert.onnx_light.onnx_light_to_gguf` (``ggml_type`` when recorded), then
    :func:`~hurray_decl.convert.hurray.from_gguf`; both steps are exact and checked.
    """
    if value.struct_type.name.rsplit("/", 1)[-1] in ("nf4", "mxfp4", "mxfp6"):
        return codebook_to_hurray(value, model)
    try:
        return tensor_from_parts(to_block_parts(value, model))
    except HurrayDeclError as direct:
        try:
            type_name, raw = onnx_light_to_gguf(value, model, ggml_type)
        except HurrayDeclError:
            raise direct from None
        shape = tuple(int(d.dim_value) for d in value.logical_type.tensor_type.shape.dim)
        return from_gguf(raw, type_name, shape)


def initializer_to_hurray(value: Any, model: Any = None, ggml_type: str | None = None) -> Tensor:
    """An initializer of an ONNX model as a Hurray tensor: onnx-light values as per-block affine
    (:func:`onnx_light_to_hurray`), ``raw_data`` tensors of the plain types (float32, float16,
    bfloat16, float64, int8 .. int64) unquantized."""
    if isinstance(value, EncodedValueProto):
        return onnx_light_to_hurray(value, model, ggml_type)
    elements = {code: name for name, code in _ONNX_PLAIN.items()}
    if value.data_type not in elements or not value.HasField("raw_data"):
        raise ArgumentError("initializer", f"only {', '.join(_ONNX_PLAIN)} initializers with raw_data convert",
                            actual=value.data_type)
    return float_tensor(value.raw_data, elements[value.data_type], tuple(value.dims))


def onnx_light_model(values: Sequence[tuple[str, Any]]) -> Any:
    """An ONNX model whose graph holds the named onnx-light encoded values and plain initializers."""
    model = empty_model("onnx_light")
    for name, value in values:
        graph = model.graph
        slot = (graph.encoded_initializer if isinstance(value, EncodedValueProto) else graph.initializer).add()
        slot.ParseFromString(value.SerializeToString())
        slot.name = name
    return model
