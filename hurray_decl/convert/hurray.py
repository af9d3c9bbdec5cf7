"""GGUF, GPTQ and AWQ weights as Hurray per-block affine tensors, bit for bit or refused.

Each function splits its source into :class:`~hurray_decl.convert.parts.BlockParts`
(:mod:`.gguf`, :mod:`.group`) and builds the tensor with :func:`from_block_parts`,
which checks it by the same rules as any input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hurray_decl.convert.gguf import (
    GGUF_BLOCK,
    GGUF_TYPES,
    MXFP4_NEGATIVE_ZERO,
    block_data,
    gguf_parts,
    gguf_type,
    mxfp4_codes,
    pack_blocks,
    read_gguf,
)
from hurray_decl.convert.gguf_codebook import FORMATS, decode_blocks, encode_blocks
from hurray_decl.convert.group import awq_parts, gptq_parts
from hurray_decl.convert.parts import BlockParts
from hurray_decl.errors import ArgumentError, HurrayDeclError, RuleViolation, UnsupportedError
from hurray_decl.hurray import kernels
from hurray_decl.hurray.numerics import assemble, assemble_data, buffer_contents
from hurray_decl.hurray.quantization import register_project_schemes
from hurray_decl.hurray.schemes.ggml_codebook import BY_ID, GgmlCodebook
from hurray_decl.hurray.schemes.ggml_super_block import ADDED_MINIMUM, GgmlSuperBlock
from hurray_decl.hurray.schemes.mxfp import INVALID_SCALE_BYTES, MXFP
from hurray_decl.hurray.schemes.per_block_affine import PerBlockAffine
from hurray_decl.hurray.schemes.per_channel_affine import PerChannelAffine
from hurray_decl.hurray.schemes.per_tensor_affine import PerTensorAffine
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.codes import ScaleType
from hurray_decl.hurray.tables.element_types import BY_TAG
from hurray_decl.hurray.tensor import (
    BufferHandle,
    RowMajor,
    TensorDescriptor,
    read_tensor_descriptor,
    validate_buffers,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.validate import DataContext

__all__ = [
    "CHUNK_BYTES",
    "affine_parts",
    "block_parts",
    "by_rows",
    "codebook_gguf",
    "from_awq",
    "from_block_parts",
    "from_gguf",
    "from_gguf_codebook",
    "from_gguf_file",
    "from_gguf_mxfp4",
    "from_gguf_super_blocks",
    "from_gptq",
    "plain_blocks_gguf",
    "release_pages",
    "row_pieces",
    "super_blocks_gguf",
]


CHUNK_BYTES = 1 << 18
"""Source bytes converted at a time by :func:`by_rows` (the working memory of a conversion is a
few times this, beside the source and the output)."""


def by_rows(raw: Any, shape: Sequence[int], convert: Callable[[np.ndarray, tuple[int, ...]], Any],
            chunk: int = CHUNK_BYTES) -> tuple[TensorDescriptor, list[Any]]:
    """``convert(raw, shape)`` (GGUF blocks, blocks along the last axis, to a row-major Hurray
    tensor whose buffers are laid out row after row) run on rows (along the first axis) of about ``chunk`` source
    bytes at a time, each piece's buffers copied into the tensor's as they are made: the same
    descriptor and buffers as one call on the whole tensor, with working memory of a few chunks
    rather than a few times the tensor. A refusal is raised by one call on the whole tensor, so
    that its block and byte offsets are the tensor's. The buffers are writable memory views."""
    shape = tuple(int(n) for n in shape)
    try:
        data = np.frombuffer(memoryview(raw).cast("B"), dtype=np.uint8)
    except TypeError:  # not bytes-like: refused by the conversion, as it says
        return convert(raw, shape)
    lines = shape[0] if len(shape) > 1 else 1
    if len(shape) < 2 or data.size <= chunk or data.size % lines:
        return convert(data, shape)
    width = data.size // lines
    step = max(1, chunk // width)
    descriptor: TensorDescriptor | None = None
    outputs: list[np.ndarray] = []
    per_row: list[int] = []
    for start in range(0, lines, step):
        stop = min(lines, start + step)
        try:
            piece, buffers = convert(data[start * width:stop * width], (stop - start, *shape[1:]))
        except HurrayDeclError:
            convert(data, shape)  # the refusal, located in the whole tensor
            raise
        contents = [np.frombuffer(memoryview(b).cast("B"), np.uint8) for b in buffers]
        if descriptor is None:
            if piece.byte_offset or any(len(c) % step for c in contents):
                return convert(data, shape)  # buffers not laid out row after row: converted whole
            descriptor, per_row = piece, [len(c) // step for c in contents]
            outputs = [np.empty(n * lines, np.uint8) for n in per_row]
        if [len(c) for c in contents] != [n * (stop - start) for n in per_row]:
            return convert(data, shape)
        for out, c, n in zip(outputs, contents, per_row):
            out[start * n:stop * n] = c
    if descriptor is None:
        return convert(data, shape)
    return _grown(descriptor, shape, outputs)


def _grown(piece: TensorDescriptor, shape: tuple[int, ...], outputs: Sequence[np.ndarray]) -> tuple[TensorDescriptor,
                                                                                                  list[Any]]:
    """The tensor of ``shape`` whose buffers are ``outputs``, described as ``piece`` (a few of its
    rows) is, checked by the same rules as any input."""
    views = [memoryview(out.data) for out in outputs]
    whole = piece.replace(shape=shape, buffers=tuple(BufferHandle(byte_size=len(out)) for out in outputs))
    whole = read_tensor_descriptor(write_tensor_descriptor(whole))
    validate_buffers(whole, views)
    return whole, views


def _pair_table(flip: int) -> np.ndarray:
    """Two bytes (a uint16) of nibbles in GGUF's order to the same nibbles in Hurray's: byte 2k
    of a group holds elements 2k (low nibble) and h + 2k (high), byte 2k + 1 elements 2k + 1 and
    h + 2k + 1, for h half the group's elements; Hurray's bytes are ``e[2k] | e[2k + 1] << 4``
    (HE-14) of the first half, then of the second. ``flip`` is XORed into each nibble (8 turns
    a GGUF code q + 8 into the int4 q)."""
    p = np.arange(1 << 16, dtype=np.uint32)
    low = ((p & 0xF) | ((p >> 4) & 0xF0)) ^ (flip * 0x11)
    high = (((p >> 4) & 0xF) | ((p >> 8) & 0xF0)) ^ (flip * 0x11)
    return (low | (high << 8)).astype("<u2")


PAIRS = {flip: _pair_table(flip) for flip in (0, 8)}
"""The nibble re-layout tables of :func:`nibble_codes`, by the XOR they apply."""


def nibble_codes(qs: np.ndarray, flip: int) -> np.ndarray:
    """GGUF nibbles (rows of bytes, byte i holding element i in its low nibble and element
    ``width + i`` in its high one, for a row of ``width`` bytes) as Hurray's packed 4-bit codes
    (element 2k in the low nibble of byte k), one table look-up per two bytes (:data:`PAIRS`)."""
    pairs = PAIRS[flip][np.ascontiguousarray(qs).view("<u2")].view(np.uint8)
    half = qs.shape[1] // 2
    out = np.empty(qs.shape, np.uint8)
    out[:, :half] = pairs[:, 0::2]
    out[:, half:] = pairs[:, 1::2]
    return out


def _gguf_pair_table(flip: int) -> np.ndarray:
    """The inverse of :func:`_pair_table`: Hurray's bytes k and h + k (a uint16, k low) to GGUF's
    bytes 2k and 2k + 1, ``flip`` XORed into each nibble."""
    p = np.arange(1 << 16, dtype=np.uint32)
    a, b = p & 0xFF, p >> 8
    low = ((a & 0xF) | ((b & 0xF) << 4)) ^ (flip * 0x11)
    high = ((a >> 4) | (b & 0xF0)) ^ (flip * 0x11)
    return (low | (high << 8)).astype("<u2")


GGUF_PAIRS = {flip: _gguf_pair_table(flip) for flip in (0, 8)}
"""The tables of :func:`gguf_nibbles`, by the XOR they apply."""


def gguf_nibbles(codes: np.ndarray, flip: int) -> np.ndarray:
    """The inverse of :func:`nibble_codes`: rows of Hurray's packed 4-bit codes as GGUF's nibbles."""
    half = codes.shape[1] // 2
    index = codes[:, :half].astype("<u2") | (codes[:, half:].astype("<u2") << 8)
    return GGUF_PAIRS[flip][index].view(np.uint8).reshape(codes.shape)


def plain_blocks_gguf(descriptor: TensorDescriptor, buffers: Sequence[Any],
                      ggml_type: str | None = None, chunk: int = CHUNK_BYTES) -> tuple[str, np.ndarray] | None:
    """A row-major symmetric per-block affine tensor of int4 codes (as Q4_0, unless ``ggml_type``
    says otherwise) or of int8 codes recorded as Q8_0, blocks of 32 along the last axis and float16
    scales, as GGUF blocks re-laid out with NumPy passes over its buffers, ``chunk`` bytes at a time:
    the bytes :func:`~hurray_decl.convert.gguf.parts_blocks` makes of its parts (a block of zero
    codes gets ``d`` = +-0, the sign of its scale). None for any other tensor."""
    q = descriptor.quantization
    shape = tuple(int(n) for n in descriptor.shape)
    element = BY_TAG[descriptor.type_tag].name
    name = {"int4": "Q4_0", "int8": "Q8_0"}.get(element)
    if not isinstance(q, PerBlockAffine) or not q.symmetric or not isinstance(descriptor.layout, RowMajor) \
            or descriptor.byte_offset or not shape or not all(shape) or q.axis != len(shape) - 1 \
            or q.block_size != GGUF_BLOCK \
            or shape[-1] % GGUF_BLOCK or ScaleType(q.scale_type_tag).title != "float16" or name is None \
            or (ggml_type or "Q4_0") != name:
        return None
    contents = buffer_contents(buffers)
    validate_buffers(descriptor, contents)
    row = GGUF_TYPES[name]
    blocks = int(np.prod(shape)) // GGUF_BLOCK
    codes = np.frombuffer(contents[0], np.uint8)[:blocks * row.elements * row.bits // 8].reshape(blocks, -1)
    scales = np.frombuffer(contents[q.scale_buffer_index], "<u2")[:blocks]
    out = np.empty(blocks, row.record)
    step = max(1, chunk // row.record.itemsize)
    for start in range(0, blocks, step):
        part = codes[start:start + step]
        d = scales[start:start + step] & np.where(part.any(axis=1), 0xFFFF, 0x8000).astype("<u2")
        out["d"][start:start + step] = d.view("<f2")
        out["qs"][start:start + step] = gguf_nibbles(part, 8) if name == "Q4_0" else part
    return name, out.view(np.uint8)


def _plain_blocks(data: np.ndarray, name: str, shape: tuple[int, ...], chunk: int) -> tuple[TensorDescriptor,
                                                                                              list[Any]] | None:
    """Q4_0 / Q8_0 blocks whose ``d`` are all finite and non-zero, re-laid out with NumPy passes
    over the blocks, ``chunk`` bytes at a time: the codes (Q4_0's nibbles through :func:`nibble_codes`,
    Q8_0's bytes as they are) and the ``d`` as float16 scales, exactly what :func:`gguf_parts`
    and :func:`from_block_parts` make of them (a block of ``d`` = 0 is written another way, by
    them). None for other blocks."""
    row = GGUF_TYPES[name]
    if name not in ("Q4_0", "Q8_0") or len(shape) < 2 or shape[-1] % row.elements \
            or data.size != int(np.prod(shape)) // row.elements * row.record.itemsize or not data.size:
        return None
    records = data.view(row.record)
    d = records["d"]
    if not (np.isfinite(d).all() and d.all()):
        return None
    piece, _ = from_block_parts(gguf_parts(data[:data.size // shape[0]], name, (1, *shape[1:])))
    code_bytes = row.elements * (4 if name == "Q4_0" else 8) // 8
    codes = np.empty((records.size, code_bytes), np.uint8)
    step = max(1, chunk // row.record.itemsize)
    for start in range(0, records.size, step):
        qs = records["qs"][start:start + step]
        codes[start:start + step] = nibble_codes(qs, 8) if name == "Q4_0" else qs
    return _grown(piece, shape, [codes.reshape(-1), np.ascontiguousarray(d).view(np.uint8)])


def row_pieces(descriptor: TensorDescriptor, buffers: Sequence[Any],
               chunk: int = CHUNK_BYTES) -> Iterator[tuple[int, int, TensorDescriptor, list[memoryview]]] | None:
    """A row-major quantized tensor whose blocks run along its last axis, in pieces of rows along
    its first axis of about ``chunk`` buffer bytes: (first row, end row, the piece's descriptor,
    its buffers as views of ``buffers``), each piece a tensor in itself (the inverse of
    :func:`by_rows`). None when the tensor is small, unquantized, or its buffers are not laid out
    row after row (each buffer's size a multiple of the row count, no byte offset)."""
    q = descriptor.quantization
    shape = tuple(int(n) for n in descriptor.shape)
    sizes = [h.byte_size for h in descriptor.buffers]
    if q is None or len(shape) < 2 or not isinstance(descriptor.layout, RowMajor) or descriptor.byte_offset \
            or getattr(q, "axis", None) != len(shape) - 1 or sum(sizes) <= chunk or any(n % shape[0] for n in sizes) \
            or len(buffers) != len(sizes):
        return None
    contents = buffer_contents(buffers)
    if [len(c) for c in contents] != sizes:
        return None
    per_row = [n // shape[0] for n in sizes]
    step = max(1, chunk // sum(per_row))

    def pieces() -> Iterator[tuple[int, int, TensorDescriptor, list[memoryview]]]:
        for start in range(0, shape[0], step):
            stop = min(shape[0], start + step)
            handles = tuple(h.model_copy(update={"byte_size": n * (stop - start)})
                            for h, n in zip(descriptor.buffers, per_row))
            piece = descriptor.replace(shape=(stop - start, *shape[1:]), buffers=handles)
            yield start, stop, piece, [c[start * n:stop * n] for c, n in zip(contents, per_row)]

    return pieces()


def release_pages(buffers: Sequence[Any]) -> None:
    """Let the system drop the pages of each buffer that is a view of a read-only memory map (a
    container or model file opened by path): they are read again from the file if used later,
    so a converter going tensor by tensor through a mapped file holds one tensor's pages, not
    the file's. Other buffers (bytes, arrays, writable maps, whose pages may hold the only copy)
    are left alone."""
    import mmap

    if not hasattr(mmap, "MADV_DONTNEED"):
        return
    page = mmap.PAGESIZE
    for buffer in buffers:
        owner = buffer.obj if isinstance(buffer, memoryview) else None
        if not isinstance(owner, mmap.mmap) or not len(buffer) or owner.closed:
            continue
        whole = memoryview(owner)
        if not whole.readonly:
            continue
        base = np.frombuffer(whole, np.uint8).ctypes.data
        start = np.frombuffer(buffer.cast("B"), np.uint8).ctypes.data - base
        first = start // page * page
        end = min(len(owner), start + buffer.nbytes)
        # only whole pages of the buffer: a page it shares with a neighbour is left as it is
        stop = end if end == len(owner) else end // page * page
        if stop > first:
            owner.madvise(mmap.MADV_DONTNEED, first, stop - first)


def from_gguf(raw: Any, ggml_type: Any, shape: Sequence[int], *,
              chunk: int = CHUNK_BYTES) -> tuple[TensorDescriptor, list[Any]]:
    """GGUF Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 blocks (blocks along the last axis of ``shape``) as
    per-block affine; MXFP4 blocks as MXFP (:func:`from_gguf_mxfp4`); row by row (:func:`by_rows`)."""
    name = getattr(ggml_type, "name", ggml_type)
    if name == "MXFP4":
        return by_rows(raw, shape, from_gguf_mxfp4, chunk)
    if name in ("Q4_0", "Q8_0"):
        try:
            data = np.frombuffer(memoryview(raw).cast("B"), dtype=np.uint8)
        except TypeError:
            data = None
        fast = None if data is None else _plain_blocks(data, name, tuple(int(n) for n in shape), chunk)
        if fast is not None:
            return fast
    return by_rows(raw, shape, lambda data, part: from_block_parts(gguf_parts(data, ggml_type, part)), chunk)


def from_gguf_super_blocks(raw: Any, ggml_type: Any, shape: Sequence[int], *,
                           chunk: int = CHUNK_BYTES) -> tuple[TensorDescriptor, list[Any]]:
    """GGUF K-quant blocks (Q2_K .. Q6_K), or Q4_1 / Q5_1 blocks, as the project's private ggml
    super-block scheme (0xF0, :mod:`hurray_decl.hurray.schemes.ggml_super_block`, registered
    here): the codes in the narrowest storage holding them, the float16 ``d`` (and ``dmin``, or
    Q4_1's ``m`` with ADDED_MINIMUM) with their bits as they are, the sub-block scale (and
    minimum) codes as integers (1 for Q4_1 / Q5_1). The values are gguf's bit for bit, and
    :func:`super_blocks_gguf` gives the blocks back byte for byte. Row by row (:func:`by_rows`)."""
    return by_rows(raw, shape, lambda data, part: _super_blocks(data, ggml_type, part), chunk)


def _super_blocks(raw: Any, ggml_type: Any, shape: Sequence[int]) -> tuple[TensorDescriptor, list[bytes]]:
    row = gguf_type(ggml_type)
    single = not row.two_level
    if single and not row.has_offset:
        raise UnsupportedError("HQ-EXT-03", f"{row.name} is per-block affine exactly: it has no ggml super-block "
                               "form here", path="ggml_type", actual=row.name, expected="Q2_K .. Q6_K, Q4_1, Q5_1")
    shape, data = block_data(raw, row.name, shape, row.elements, row.record.itemsize)
    blocks = data.size // row.record.itemsize
    records = data.view(row.record)
    register_project_schemes()
    model = GgmlSuperBlock(axis=len(shape) - 1, super_block=row.elements, sub_block=row.sub_block,
                           d_buffer_index=1, scale_buffer_index=2, dmin_buffer_index=3 if row.has_offset else None,
                           min_buffer_index=4 if row.has_offset else None, flags=ADDED_MINIMUM if single else 0)
    if single:  # d * q + m: one sub-block of scale code 1, the minimum m times 1, added
        ones = np.ones(blocks, np.int8)
        params = [records["d"].astype("<f2"), ones, records["m"].astype("<f2"), ones.view(np.uint8)]
    else:
        levels = row.read_levels(records)
        params = [records["d"].astype("<f2"), levels["sc"].astype(np.int8)]
        if row.has_offset:
            params += [records["dmin"].astype("<f2"), levels["mn"].astype(np.uint8)]
    if row.name == "Q4_K":  # 4-bit codes, in groups of 32 bytes as Q4_0's in 16: one table look-up
        return assemble_data(model, shape, row.storage, nibble_codes(records["qs"].reshape(-1, 32), 0).reshape(-1),
                             params)
    codes = row.codes(records).reshape(shape)
    return assemble(model, shape, row.storage, codes, params)


def from_gguf_codebook(raw: Any, ggml_type: Any, shape: Sequence[int]) -> tuple[TensorDescriptor, list[bytes]]:
    """GGUF IQ, TQ or NVFP4 blocks (:data:`~hurray_decl.convert.gguf_codebook.FORMATS`) as the
    project's private ggml codebook scheme (0xF1, :mod:`hurray_decl.hurray.schemes.ggml_codebook`,
    registered here): every element's codebook value as its code, the float16 ``d`` with its bits
    as they are, the sub-block scale codes. The values are gguf's bit for bit, and
    :func:`codebook_gguf` gives the blocks back byte for byte (blocks that would not come back are
    refused, CV-GGML-01)."""
    name = str(getattr(ggml_type, "name", ggml_type))
    if name not in FORMATS:
        raise UnsupportedError("HE-03", f"{name} is no ggml codebook type", path="ggml_type", actual=name,
                               expected=", ".join(FORMATS))
    form = FORMATS[name]
    shape, data = block_data(raw, name, shape, form.elements, form.size)
    arrays = decode_blocks(data, name)
    kind = form.kind
    register_project_schemes()
    model = GgmlCodebook(axis=len(shape) - 1, ggml_type=kind.ggml_type, super_block=kind.super_block,
                         sub_block=kind.sub_block, exponent=kind.exponent, d_buffer_index=1, scale_buffer_index=2)
    return assemble(model, shape, kind.storage, arrays.q.reshape(shape), [arrays.d, arrays.sc])


def codebook_gguf(descriptor: TensorDescriptor, buffers: Sequence[Any]) -> tuple[str, np.ndarray]:
    """A row-major ggml codebook tensor as GGUF blocks of its ``ggml_type`` (the inverse of
    :func:`from_gguf_codebook`); codes off the type's codebook, or scales it has no field for,
    are refused. Returns the type name and the bytes."""
    q, contents, params = _row_major(descriptor, buffers, (GgmlCodebook,), "HQ-EXT-03",
                                     "GGUF codebook blocks come from row-major ggml codebook tensors", "GgmlCodebook")
    kind = BY_ID[q.ggml_type]  # the descriptor was checked: a type of the table
    count = int(np.prod(descriptor.shape))
    data = np.frombuffer(contents[0], dtype=np.uint8)[descriptor.byte_offset:]
    codes = storage.decode(data, BY_TAG[descriptor.type_tag].name, count)
    return kind.name, encode_blocks(kind.name, codes, params.array("d_buffer_index", "float16"),
                                    params.array("scale_buffer_index", "int8"))


def _row_major(descriptor: TensorDescriptor, buffers: Sequence[Any], schemes: tuple[type, ...], code: str,
               message: str, expected: str) -> tuple[Any, list[memoryview], DataContext]:
    """(quantization, buffer contents, checked parameter buffers) of a row-major tensor of one of
    ``schemes``; anything else refused as ``code`` with ``message``."""
    q = descriptor.quantization
    if not isinstance(q, schemes) or not isinstance(descriptor.layout, RowMajor):
        raise UnsupportedError(code, message, path="descriptor -> quantization", actual=type(q).__name__,
                               expected=expected)
    contents = buffer_contents(buffers)
    return q, contents, validate_buffers(descriptor, contents)


def super_blocks_gguf(descriptor: TensorDescriptor, buffers: Sequence[Any],
                      ggml_type: str | None = None) -> tuple[str, np.ndarray]:
    """A row-major ggml super-block tensor as GGUF blocks (the inverse of
    :func:`from_gguf_super_blocks`): the K-quant whose super-block, sub-block, storage and
    minimums it has (``ggml_type`` when recorded and the same), codes and scale codes checked
    against the type's ranges. Returns the type name and the bytes."""
    q, contents, params = _row_major(descriptor, buffers, (GgmlSuperBlock,), "HQ-EXT-03",
                                     "GGUF K-quant blocks come from row-major ggml super-block tensors",
                                     "GgmlSuperBlock")
    element = BY_TAG[descriptor.type_tag].name
    kinds = [r for r in GGUF_TYPES.values() if r.two_level != q.added and r.storage == element
             and r.sub_block == q.sub_block and r.elements == q.super_block and r.has_offset == q.minimums]
    if ggml_type is not None:
        kinds = [r for r in kinds if r.name == ggml_type]
    if not kinds:
        raise ArgumentError("descriptor -> quantization", f"no GGML K-quant has {element} codes in sub-blocks of "
                            f"{q.sub_block} of {q.super_block}{' with' if q.minimums else ' without'} minimums"
                            + (f" as {ggml_type}" if ggml_type else ""), actual=(element, q.sub_block, q.minimums))
    row = kinds[0]
    count = int(np.prod(descriptor.shape))
    data = np.frombuffer(contents[0], dtype=np.uint8)[descriptor.byte_offset:]
    codes = storage.decode(data, element, count).astype(np.int64).reshape(-1, row.elements)
    per = row.elements // row.sub_block
    levels = {"d": params.array("d_buffer_index", "float16").copy(),
              "sc": params.array("scale_buffer_index", "int8").astype(np.int64).reshape(-1, per)}
    ranges = (row.scale_codes, row.min_codes) if row.two_level else ((1, 1), (1, 1))  # Q4_1 / Q5_1: codes 1
    checks = [("codes", codes, (row.low, row.high)), ("scale codes", levels["sc"], ranges[0])]
    if row.has_offset:
        levels |= {"dmin": params.array("dmin_buffer_index", "float16").copy(),
                   "mn": params.array("min_buffer_index", "uint8").astype(np.int64).reshape(-1, per)}
        checks.append(("minimum codes", levels["mn"], ranges[1]))
    if not row.two_level:
        levels = {"d": levels["d"], "m": levels["dmin"]}
    for what, values, (lo, hi) in checks:
        out = (values < lo) | (values > hi)
        if out.any():
            j = int(np.flatnonzero(out.ravel())[0])
            raise ArgumentError(f"{what}[{j}]", f"no exact {row.name} form: {what} of {row.name} are {lo} .. {hi}",
                                actual=int(values.ravel()[j]), expected=f"{lo} .. {hi}")
    return row.name, pack_blocks(row.name, codes, levels)


def from_gguf_mxfp4(raw: Any, shape: Sequence[int]) -> tuple[TensorDescriptor, list[bytes]]:
    """GGUF MXFP4 blocks as MXFP (0x05) of float4_e2m1 elements, blocks of 32 along the last axis:
    the exponent bytes and the codes themselves, so the values are gguf's, bit for bit, and the
    blocks come back byte for byte. Refused: a block whose exponent byte is 0x00 or 0xFF (HQ-MX-10:
    Hurray MXFP has no such scale), and a code 8, which gguf decodes as +0 and HQ-MX-11 as -0."""
    exponents, codes = mxfp4_codes(raw, shape)
    bad = np.isin(exponents, INVALID_SCALE_BYTES)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise RuleViolation("HQ-MX-10", f"MXFP4 block {j} has the exponent byte 0x{int(exponents[j]):02X}, which "
                            "makes an MXFP descriptor invalid", path=f"raw -> blocks[{j}] -> e",
                            actual=int(exponents[j]), expected="1 .. 254")
    negative_zero = codes == MXFP4_NEGATIVE_ZERO
    if negative_zero.any():
        j = int(np.flatnonzero(negative_zero.any(axis=1))[0])
        raise RuleViolation("HQ-MX-11", f"MXFP4 block {j} holds the code 8, which gguf decodes as +0 and MXFP "
                            "float4_e2m1 as -0: no exact MXFP form", path=f"raw -> blocks[{j}] -> qs",
                            actual=MXFP4_NEGATIVE_ZERO, expected="codes other than 8")
    shape = tuple(int(n) for n in shape)
    model = MXFP(axis=len(shape) - 1, block_size=GGUF_BLOCK, scale_buffer_index=1)
    data = np.frombuffer(storage.pack_codes(codes.reshape(-1), 4), np.uint8)
    return assemble_data(model, shape, "float4_e2m1", data, [exponents])


def from_gguf_file(path: str | Path, tensor_name: str) -> tuple[TensorDescriptor, list[bytes]]:
    """One tensor of a ``.gguf`` file (read with the ``gguf`` package) as per-block affine.

    A name the file does not hold is an :class:`~hurray_decl.errors.ArgumentError` listing the
    names it does hold.
    """
    tensors = read_gguf(path)
    for tensor in tensors:
        if tensor.name == tensor_name:
            return from_gguf(tensor.data, tensor.type_name, tensor.shape)
    names = [t.name for t in tensors]
    shown = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")
    raise ArgumentError("tensor_name", f"{path} has no tensor named {tensor_name!r}; it holds: {shown or 'none'}",
                        actual=tensor_name)


def from_gptq(qweight: Any, qzeros: Any, scales: Any, *, bits: int = 4, group_size: int = 128,
              g_idx: Any = None) -> tuple[TensorDescriptor, list[bytes]]:
    """A GPTQ linear weight (in_features, out_features) as per-block affine along axis 0."""
    return from_block_parts(gptq_parts(qweight, qzeros, scales, bits=bits, group_size=group_size, g_idx=g_idx))


def from_awq(qweight: Any, qzeros: Any, scales: Any, *, group_size: int = 128) -> tuple[TensorDescriptor, list[bytes]]:
    """An AWQ (GEMM packing) linear weight (in_features, out_features) as per-block affine along axis 0."""
    return from_block_parts(awq_parts(qweight, qzeros, scales, group_size=group_size))


def from_block_parts(parts: BlockParts) -> tuple[TensorDescriptor, list[bytes]]:
    """A per-block affine tensor from converter output (zero points kept exactly as given).

    ``parts`` is a checked :class:`~hurray_decl.convert.BlockParts`; the tensor is then checked
    by the same rules as any input (non-zero, finite scales: HQ-PB-12, HQ-PB-13).
    """
    if not isinstance(parts, BlockParts):
        raise ArgumentError("parts", "from_block_parts takes BlockParts", actual=type(parts).__name__,
                            expected="BlockParts")
    scale_tag = int(ScaleType.named(parts.scale_type))
    symmetric = parts.zero_points is None
    model = PerBlockAffine(axis=parts.axis, block_size=parts.block_size, scale_buffer_index=1,
                           zero_point_buffer_index=None if symmetric else 2, symmetric=symmetric,
                           scale_type_tag=scale_tag)
    geometry = kernels.Geometry(parts.codes.shape, parts.axis, parts.block_size)
    codes = kernels.padded_codes(parts.codes, geometry)
    params = [parts.scales]
    if parts.zero_points is not None:
        params.append(parts.zero_points.astype("<i4"))
    return assemble(model, parts.codes.shape, parts.storage, codes, params)


def block_parts(descriptor: TensorDescriptor, buffers: Sequence[Any]) -> BlockParts:
    """The pieces of a row-major per-block affine tensor: the inverse of :func:`from_block_parts`."""
    q, contents, params = _row_major(descriptor, buffers, (PerBlockAffine,), "HQ-PB-01",
                                     "block parts exist for row-major per-block affine tensors only", "PerBlockAffine")
    name = BY_TAG[descriptor.type_tag].name
    g = kernels.Geometry(tuple(descriptor.shape), q.axis, q.block_size)
    data = np.frombuffer(contents[0], dtype=np.uint8)[descriptor.byte_offset:]
    stored = storage.decode(data, name, g.stored_elements).astype(np.int16)  # signed, and 2 bytes a code
    codes = stored.reshape(g.before, g.padded, g.after)[:, : g.extent].reshape(descriptor.shape)
    scale_type = ScaleType(q.scale_type_tag).title
    zeros = None if q.symmetric else params.array("zero_point_buffer_index", "<i4").astype(np.int64)
    return BlockParts.from_block_order(codes, name, q.axis, q.block_size,
                                       params.array("scale_buffer_index", scale_type).copy(), scale_type, zeros)


def affine_parts(descriptor: TensorDescriptor, buffers: Sequence[Any]) -> BlockParts:
    """Any row-major affine tensor as per-block parts with the same values, ``scale * (q - z)`` bit for bit.

    Per-block affine: :func:`block_parts`. Per-tensor affine: blocks along the last axis, one per
    row (the next power of two at least as long as the row), all with the tensor's scale and zero
    point. Per-channel affine along axis ``a``: blocks along another axis ``b`` (the last one other
    than ``a``), one per line, each with its channel's scale and zero point: every element of a
    line along ``b`` has the same ``i_a``. Refused: other schemes (HQ-PB-01), storage that
    per-block affine does not have (int16, int32: HQ-PB-14), a rank-1 per-channel tensor (a block
    per element, HQ-PB-04), zero points outside the storage range (HQ-PB-22).
    """
    if isinstance(descriptor.quantization, PerBlockAffine):
        return block_parts(descriptor, buffers)
    q, contents, params = _row_major(descriptor, buffers, (PerTensorAffine, PerChannelAffine), "HQ-PB-01",
                                     "per-block parts exist for row-major affine tensors only (per-tensor, "
                                     "per-channel, per-block)", "an affine scheme")
    name = BY_TAG[descriptor.type_tag].name
    shape = tuple(int(n) for n in descriptor.shape)
    count = int(np.prod(shape))
    data = np.frombuffer(contents[0], dtype=np.uint8)[descriptor.byte_offset:]
    codes = storage.decode(data, name, count).astype(np.int64).reshape(shape)
    if isinstance(q, PerTensorAffine):
        axis = len(shape) - 1
        lines = count // shape[axis] if shape[axis] else 0
        scales = np.full(lines, q.scale, np.float32)
        zeros = None if q.zero_point == 0 else np.full(lines, q.zero_point, np.int64)
    else:
        if len(shape) < 2:
            raise UnsupportedError("HQ-PB-04", "a rank-1 per-channel tensor has a scale per element: blocks of one",
                                   path="descriptor -> shape", actual=list(shape), expected="rank >= 2")
        axis = max(b for b in range(len(shape)) if b != q.axis)
        channel = params.array("scale_buffer_index", "<f4")
        zero = None if q.symmetric else params.array("zero_point_buffer_index", "<i4").astype(np.int64)
        index = np.moveaxis(np.indices(shape)[q.axis], axis, -1)[..., 0].reshape(-1)  # i_a of each line, block order
        scales = channel[index].astype(np.float32)
        zeros = None if zero is None else zero[index]
    block = 1 << max(1, (max(shape[axis], 1) - 1).bit_length())
    return BlockParts.from_block_order(codes, name, axis, block, scales, "float32", zeros)
