"""NF4 and MXFP (float4_e2m1, float6_e3m2 elements) between Hurray and onnx-light, bit for bit or refused.

Both sides decode ``table[code] * scale`` per block: Hurray NF4 ``scale[b] * NF4[q]`` (float32
absmax) and MXFP ``2^(e - 127) * value(q)``; onnx-light's ``nf4``, ``mxfp4`` (E2M1) and ``mxfp6``
(E3M2) codebook profiles ``scale * table[index]`` in double, rounded to the logical float32. A
float32 times a table entry of at most 24 significant bits is exact in double, so the one
rounding left is float32's own: the values agree when the codes, tables and scales do. The
element types must agree (MXFP float8 and int elements have no onnx-light profile with their
table here), blocks run along the last axis and fill it (onnx-light blocks are contiguous in
element order), and every conversion is decoded again and compared with its source, signed
zeros included: onnx-light sums codebook entries from +0, so an element whose value is -0 (the
E2M1 and E3M2 code of -0) has no exact form. A zero NF4 absmax is onnx-light's smallest scale,
2^-1074, which gives the same signed zeros.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hurray_decl.errors import UnsupportedError
from hurray_decl.hurray.numerics import assemble, assemble_data, buffer_contents, dequantize
from hurray_decl.hurray.schemes.mxfp import MXFP
from hurray_decl.hurray.schemes.nf4 import LEVELS as NF4_LEVELS, NF4
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.element_types import BY_TAG
from hurray_decl.hurray.tensor import RowMajor, TensorDescriptor, validate_buffers
from hurray_decl.onnx_light import (
    EncodedValueProto,
    QuantizationFormat,
    dequantize_value,
    make_quantization_plan,
    make_quantization_type,
    quantize_with_type,
)
from hurray_decl.onnx_light.codec import unwrap_value
from hurray_decl.onnx_light.packing import pack_bits, unpack_bits
from hurray_decl.onnx_light.portable import build_payload, open_value, read_portable

__all__ = ["MXFP_FORMATS", "bitsandbytes_nf4_to_hurray", "codebook_to_hurray", "codebook_to_onnx_light",
           "mxfp4_blocks_to_hurray"]

F = QuantizationFormat
MXFP_FORMATS = {"float4_e2m1": F.MXFP4, "float6_e3m2": F.MXFP6}
"""The MXFP element types whose table an onnx-light profile holds, and that profile."""
_MXFP_ELEMENTS = {fmt: name for name, fmt in MXFP_FORMATS.items()}
TINY = 2.0 ** -1074


def _refuse(code: str, why: str, path: str, actual: Any = None, expected: Any = None) -> UnsupportedError:
    return UnsupportedError(code, why, path=path, actual=actual, expected=expected)


def _bits(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float32).reshape(-1).view(np.uint32)


def codebook_to_onnx_light(descriptor: TensorDescriptor, buffers: Sequence[Any]) -> EncodedValueProto:
    """A row-major NF4 tensor, or MXFP of float4_e2m1 / float6_e3m2, as an onnx-light nf4 / mxfp4 / mxfp6 value."""
    q = descriptor.quantization
    element = BY_TAG[descriptor.type_tag].name
    if isinstance(q, NF4):
        fmt = F.NF4
    elif isinstance(q, MXFP):
        if element not in MXFP_FORMATS:
            raise _refuse("HQ-MX-09", f"onnx-light's MXFP profiles hold {', '.join(MXFP_FORMATS)} elements",
                          "descriptor -> type_tag", element, ", ".join(MXFP_FORMATS))
        fmt = MXFP_FORMATS[element]
    else:
        raise _refuse("HQ-PB-01", "codebook conversions take NF4 and MXFP tensors", "descriptor -> quantization",
                      type(q).__name__, "NF4 or MXFP")
    shape = tuple(int(n) for n in descriptor.shape)
    if not isinstance(descriptor.layout, RowMajor) or not shape or q.axis != len(shape) - 1 \
            or shape[-1] % q.block_size:
        raise _refuse("HQ-PB-15", "onnx-light blocks are contiguous in element order: blocks along the last axis "
                      "that fill it", "descriptor -> quantization -> axis", (q.axis, q.block_size, list(shape)),
                      "the last axis, a multiple of block_size")
    contents = buffer_contents(buffers)
    params = validate_buffers(descriptor, contents)
    target = np.asarray(dequantize(descriptor, contents), np.float32)
    if fmt == F.NF4:
        scales = params.array("scale_buffer_index", "<f4").astype(np.float64)
        scales = np.where(scales == 0, TINY, scales)
    else:
        exponents = np.frombuffer(params.raw("scale_buffer_index"), np.uint8).astype(np.int64)
        scales = np.ldexp(1.0, exponents - 127)
    plan = make_quantization_plan(fmt, target.size, block_size=q.block_size)
    value = quantize_with_type(target, make_quantization_type(plan), scales=scales)
    # the codes are the tensor's own: a nearest-entry search cannot tell -0 from +0 (E2M1 has both)
    codes = storage.unpack_codes(np.frombuffer(contents[0], np.uint8)[descriptor.byte_offset:],
                                 BY_TAG[descriptor.type_tag].bits, target.size).astype(np.uint32)
    decoded = read_portable(value, None)
    packed, start = [], 0
    for run in decoded.prepared.runs:
        count = int(run.layout.count) * run.blocks
        packed.append(pack_bits(codes[start:start + count].reshape(run.blocks, -1), int(run.layout.bits)))
        start += count
    value.raw_data = build_payload(decoded.prepared.geometry(), decoded.prepared, decoded.saved, packed)
    got = dequantize_value(value, None, np.float32)
    same = _bits(got) == _bits(target)
    if not same.all():
        j = int(np.flatnonzero(~same)[0])
        why = (" (onnx-light sums a codebook's entries from +0, so an entry -0 decodes as +0)"
               if _bits(target)[j] == 0x80000000 else "")
        raise _refuse("OL-NUM-14", f"element {j} decodes to another float32 in {fmt.wire_name}{why}",
                      f"elements[{j}]", float(got.reshape(-1)[j]),
                      float(target.reshape(-1)[j]))
    return value


def codebook_to_hurray(encoded: Any, model: Any = None) -> tuple[TensorDescriptor, list[bytes]]:
    """An onnx-light nf4 / mxfp4 / mxfp6 value as a Hurray NF4 / MXFP tensor with the same values.

    Blocks of one power-of-two size filling the last axis, no permutation, transform, outliers,
    offsets or zero points; NF4 scales that are float32 values (2^-1074 is 0), MXFP scales powers
    of two 2^-126 .. 2^127 (float8_e8m0 bytes 1 .. 254, HD-08).
    """
    encoded, model = unwrap_value(encoded, model)
    opened = open_value(encoded, model)
    fmt = opened.format
    if fmt not in (F.NF4, *_MXFP_ELEMENTS):
        raise _refuse("OL-PROF-02", "only nf4, mxfp4 and mxfp6 values convert to NF4 / MXFP",
                      "value -> struct_type -> name", opened.resolved.name, "nf4, mxfp4 or mxfp6")
    decoded = read_portable(opened.value, model, opened)
    p = decoded.prepared
    shape = tuple(decoded.shape)
    counts = np.concatenate([np.full(r.blocks, int(r.layout.count), np.int64) for r in p.runs])
    block = int(counts[0]) if counts.size else 0
    offsets = np.concatenate([r.offset for r in p.runs])
    zeros = np.concatenate([r.zero_point for r in p.runs])
    if p.transform or p.outliers.size or p.permutation.size or (offsets != 0).any() or (zeros != 0).any():
        raise _refuse("HQ-PB-15", "a permutation, transform, outliers, offsets or zero points have no NF4 / MXFP form",
                      "value", None, "none")
    if not shape or block < 2 or block & (block - 1) or (counts != block).any() or shape[-1] % block:
        raise _refuse("HQ-PB-15", "NF4 / MXFP blocks here fill the last axis, one power-of-two size",
                      "value -> blocks", counts[:4].tolist(), "blocks of one power-of-two size")
    codes = np.concatenate([unpack_bits(data, int(run.layout.count), int(run.layout.bits), f"value -> runs[{i}]")
                            .astype(np.int64).ravel() for i, (run, data) in enumerate(zip(p.runs, decoded.codes))])
    scales = np.concatenate([r.scale for r in p.runs])
    axis = len(shape) - 1
    if fmt == F.NF4:
        scales = np.where(scales == TINY, 0.0, scales)
        narrow = scales.astype(np.float32)
        if (narrow.astype(np.float64) != scales).any():
            raise _refuse("HQ-NF4-08", "an NF4 absmax is a float32 value", "value -> scales",
                          repr(float(scales[np.flatnonzero(narrow.astype(np.float64) != scales)[0]])), "float32")
        tensor = assemble(NF4(axis=axis, block_size=block, scale_buffer_index=1), shape, "uint4", codes, [narrow])
    else:
        mantissa, exponent = np.frexp(scales)
        e8m0 = exponent - 1 + 127
        if ((mantissa != 0.5) | (e8m0 < 1) | (e8m0 > 254)).any():
            raise _refuse("HQ-MX-10", "an MXFP scale is a power of two 2^-126 .. 2^127", "value -> scales",
                          None, "2^(e - 127), e in 1 .. 254")
        element = _MXFP_ELEMENTS[fmt]
        values = codes.astype(np.uint8).view(storage.NARROW_FLOATS[element]).astype(np.float32)
        tensor = assemble(MXFP(axis=axis, block_size=block, scale_buffer_index=1), shape, element, values,
                          [e8m0.astype(np.uint8)])
    got = dequantize(*tensor)
    want = dequantize_value(encoded, model, np.float32)
    if not (_bits(got) == _bits(want)).all():
        raise _refuse("OL-NUM-14", "the Hurray tensor decodes to other float32 values", "value")
    return tensor


def mxfp4_blocks_to_hurray(blocks: Any, scales: Any, name: str = "tensor") -> tuple[TensorDescriptor, list[bytes]]:
    """gpt-oss MXFP4 (``*_blocks`` uint8 ``(*prefix, G, 16)``: 32 E2M1 values a block, element
    2k in the low nibble of byte k; ``*_scales`` uint8 ``(*prefix, G)``: E8M0 exponents, the
    value ``2^(scale - 127) * value(q)``) as a Hurray MXFP tensor ``(*prefix, G * 32)``, blocks
    of 32 along the last axis. The bytes are Hurray's as they are: float4_e2m1 packs element 2k
    in the low nibble too (HE-14) and the scales are in block order (HQ-PB-15); scale bytes
    0x00 and 0xFF are refused (HQ-MX-10)."""
    packed, exponents = np.asarray(blocks), np.asarray(scales)
    if packed.dtype != np.uint8 or exponents.dtype != np.uint8 or packed.ndim < 2 or packed.shape[-1] != 16 \
            or exponents.shape != packed.shape[:-1]:
        raise _refuse("HQ-MX-08", f"{name}: MXFP4 blocks are whole, uint8 (*prefix, G, 16), one uint8 scale a block "
                      "(*prefix, G)",
                      f"{name} -> blocks", f"{list(packed.shape)} {packed.dtype}, {list(exponents.shape)} "
                      f"{exponents.dtype}", "uint8 (*prefix, G, 16) and (*prefix, G)")
    shape = (*packed.shape[:-2], packed.shape[-2] * 32)
    model = MXFP(axis=len(shape) - 1, block_size=32, scale_buffer_index=1)
    return assemble_data(model, shape, "float4_e2m1", packed.reshape(-1), [exponents.reshape(-1)])


def bitsandbytes_nf4_to_hurray(packed: Any, absmax: Any, quant_map: Any, state: Mapping[str, Any],
                               nested: tuple[Any, Any] | None = None,
                               name: str = "tensor") -> tuple[TensorDescriptor, list[bytes]]:
    """A bitsandbytes NF4 weight (``Linear4bit``'s state dict: ``W`` uint8, two codes a byte,
    element 2k in the HIGH nibble; ``W.absmax`` float32, one a block of ``blocksize`` elements
    of the flattened tensor; ``W.quant_map`` the 16 levels; ``W.quant_state.bitsandbytes__nf4``
    the JSON ``state``: ``quant_type``, ``blocksize``, ``shape``) as a Hurray NF4 tensor of
    ``shape``, blocks along the last axis, the nibbles swapped into Hurray's order (HE-14).

    ``x = quant_map[q] * absmax[b]`` in float32, the levels those of HQ-NF4-11 (another map is
    refused). A nested (double-quantized) absmax, ``nested = (nested_absmax, nested_quant_map)``
    with ``state``'s ``nested_blocksize`` and ``nested_offset``, is materialized as bitsandbytes
    computes it in float32, ``nested_quant_map[a] * nested_absmax[i // nested_blocksize] +
    offset``: the float32 scales it dequantizes with. Blocks that run across rows (a last axis
    not a multiple of ``blocksize``) are refused (HQ-PB-15)."""
    levels = np.asarray(quant_map, np.float32).reshape(-1)
    if state.get("quant_type") != "nf4" or levels.size != 16 or levels.tobytes() != np.asarray(
            NF4_LEVELS, np.float32).tobytes():
        raise _refuse("HQ-NF4-11", f"{name}: the quant_map is not the NF4 levels", f"{name} -> quant_map",
                      str(state.get("quant_type")), "nf4 with the levels of HQ-NF4-11")
    shape = tuple(int(n) for n in state.get("shape") or ())
    block = state.get("blocksize")
    if not shape or not isinstance(block, int) or isinstance(block, bool) or shape[-1] % block:
        raise _refuse("HQ-PB-15", f"{name}: bitsandbytes blocks of {block} elements of the flattened tensor are "
                      "Hurray NF4 blocks only when they tile the last axis", f"{name} -> quant_state -> blocksize",
                      block, f"a divisor of {shape[-1] if shape else 'the last dimension'}")
    count = int(np.prod(shape))
    codes = np.asarray(packed).view(np.uint8).reshape(-1)
    scales = np.asarray(absmax).reshape(-1)
    if nested is not None:
        quantized, (outer, table) = scales, (np.asarray(v, np.float32).reshape(-1) for v in nested)
        step, offset = state.get("nested_blocksize"), np.float32(state.get("nested_offset", 0.0))
        if quantized.dtype != np.uint8 or not isinstance(step, int) or isinstance(step, bool) or step < 1 \
                or table.size != 256 or outer.size != -(-quantized.size // step):
            raise _refuse("HQ-NF4-08", f"{name}: a nested absmax is uint8 codes of a 256-entry map, one float32 "
                          "scale a nested block", f"{name} -> absmax", str(quantized.dtype), "uint8")
        scales = table[quantized] * outer[np.arange(quantized.size) // step] + offset
    if codes.size != -(-count // 2) or scales.size != count // block or scales.dtype != np.float32:
        raise _refuse("HQ-NF4-01", f"{name}: {codes.size} packed bytes and {scales.size} absmax for shape "
                      f"{list(shape)} in blocks of {block}", f"{name} -> absmax", scales.size, count // block)
    swapped = ((codes & 0x0F) << 4) | (codes >> 4)  # element 2k: high nibble there, low nibble here
    model = NF4(axis=len(shape) - 1, block_size=block, scale_buffer_index=1)
    return assemble_data(model, shape, "uint4", swapped.astype(np.uint8), [scales])
