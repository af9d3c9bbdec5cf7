"""GGUF -> Hurray row by row (``convert.hurray.by_rows``, under ``from_gguf`` and
``from_gguf_super_blocks``): chunks of a few rows give the same
descriptor and buffers, byte for byte, as one call on the whole tensor, for every type the
converters take (tiny chunks, so that many boundaries are crossed, and a row count no chunk
divides); a refusal in a late chunk is the whole tensor's, its block index counted from the
tensor's first block."""

from __future__ import annotations

import gguf
import numpy as np
import pytest

from hurray_decl.convert.gguf import GGUF_TYPES, gguf_parts, parts_blocks
from hurray_decl.convert.hurray import (
    block_parts,
    from_block_parts,
    from_gguf,
    from_gguf_super_blocks,
    nibble_codes,
    plain_blocks_gguf,
)
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray.quantization import register_project_schemes
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tensor import write_tensor_descriptor
from tests.convert.test_gguf_write import canonical_k

Q = gguf.GGMLQuantizationType
ROWS = 37  # no chunk of 2, 3 or 5 rows divides it


def whole_and_rows(raw, name, shape, chunk):
    convert = from_gguf_super_blocks if name != "MXFP4" and GGUF_TYPES[name].two_level else from_gguf
    return convert(raw, name, shape, chunk=raw.size), convert(raw, name, shape, chunk=chunk)


def blocks(rng, name, shape):
    if name in ("Q4_0", "Q8_0", "Q5_0"):
        x = rng.standard_normal(shape).astype(np.float32)
        x.reshape(ROWS, -1)[3, :64] = 0  # blocks of zeros: d = 0, which per-block affine holds another way
        return np.asarray(gguf.quants.quantize(x, Q[name])).reshape(-1)
    if name == "MXFP4":
        raw = rng.integers(0, 256, (int(np.prod(shape)) // 32, 17), dtype=np.uint8)
        raw[:, 0] = rng.integers(100, 150, raw.shape[0])
        raw[:, 1:] &= 0x77  # no code 8 (-0)
        return raw.reshape(-1)
    return canonical_k(rng, name, int(np.prod(shape)) // GGUF_TYPES[name].elements)


@pytest.mark.parametrize("name", ["Q4_0", "Q5_0", "Q8_0", "Q4_K", "Q6_K", "Q2_K", "MXFP4"])
@pytest.mark.parametrize("rows_per_chunk", [1, 3, 5])
def test_rows_give_the_whole_tensor_s_bytes(name, rows_per_chunk):
    register_project_schemes()
    shape = (ROWS, 3, 256) if name in ("Q6_K", "Q8_0") else (ROWS, 3 * 256)  # 28,416 elements
    raw = blocks(np.random.default_rng(rows_per_chunk), name, shape)
    width = raw.size // ROWS
    (d1, b1), (d2, b2) = whole_and_rows(raw, name, shape, rows_per_chunk * width)
    assert write_tensor_descriptor(d1) == write_tensor_descriptor(d2)
    assert [bytes(b) for b in b1] == [bytes(b) for b in b2]


def test_a_refusal_in_a_late_chunk_is_located_in_the_whole_tensor():
    shape = (ROWS, 256)
    raw = np.asarray(gguf.quants.quantize(np.random.default_rng(2).standard_normal(shape).astype(np.float32),
                                          Q.Q4_0)).reshape(-1).copy()
    records = raw.view(GGUF_TYPES["Q4_0"].record)
    records["d"][30 * 8 + 5] = np.inf  # row 30, block 5: block 245 of the tensor
    with pytest.raises(HurrayDeclError) as whole:
        from_gguf(raw, "Q4_0", shape, chunk=raw.size)
    with pytest.raises(HurrayDeclError) as rows:
        from_gguf(raw, "Q4_0", shape, chunk=2 * 144)
    assert (rows.value.code, rows.value.path, str(rows.value)) == (whole.value.code, whole.value.path, str(whole.value))
    assert "245" in rows.value.path


@pytest.mark.parametrize("name", ["Q4_0", "Q8_0"])
@pytest.mark.parametrize("shape", [(ROWS, 3 * 256), (ROWS, 3, 96), (2, 32)])
def test_the_block_re_layout_gives_the_parts_bytes(name, shape):
    """Q4_0 / Q8_0 blocks of non-zero finite d: the NumPy re-layout of their bytes (tiny chunks)
    gives what gguf_parts and from_block_parts make of the same blocks, descriptor and buffers."""
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    raw = np.asarray(gguf.quants.quantize(x, Q[name])).reshape(-1)
    assert GGUF_TYPES[name].record and raw.view(GGUF_TYPES[name].record)["d"].all()
    d1, b1 = from_block_parts(gguf_parts(raw, name, shape))
    d2, b2 = from_gguf(raw, name, shape, chunk=3 * GGUF_TYPES[name].record.itemsize)
    assert write_tensor_descriptor(d1) == write_tensor_descriptor(d2)
    assert [bytes(b) for b in b1] == [bytes(b) for b in b2]


@pytest.mark.parametrize("name", ["Q4_0", "Q8_0"])
@pytest.mark.parametrize("shape", [(ROWS, 3 * 256), (ROWS, 3, 96), (2, 32)])
def test_the_blocks_come_back_as_parts_blocks_makes_them(name, shape):
    """A per-block affine int4 / int8 tensor back to Q4_0 / Q8_0 by the NumPy re-layout (tiny
    chunks) gives parts_blocks' bytes, the blocks of zero codes (d = +-0) included, and the
    GGUF file's own blocks."""
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    x.reshape(-1, 32)[1] = 0  # a block of zeros: Q8_0 writes d = +0, Q4_0 d = -0
    raw = np.asarray(gguf.quants.quantize(x, Q[name])).reshape(-1)
    descriptor, buffers = from_gguf(raw, name, shape)
    expected = parts_blocks(block_parts(descriptor, buffers), name)
    got = plain_blocks_gguf(descriptor, buffers, name, chunk=2 * GGUF_TYPES[name].record.itemsize)
    assert got is not None and got[0] == expected[0] == name
    assert bytes(got[1]) == bytes(expected[1]) == raw.tobytes()
    if name == "Q8_0":  # int8 codes become Q8_0 only when the GGUF type is recorded
        assert plain_blocks_gguf(descriptor, buffers) is None


def test_q4_k_nibbles_are_the_codes_hurray_packs():
    """Q4_K's codes by the table (:func:`nibble_codes` on groups of 32 bytes) are the uint4 codes
    of the type's declared bit fields, packed as Hurray packs them."""
    row = GGUF_TYPES["Q4_K"]
    raw = np.random.default_rng(4).integers(0, 256, 7 * row.record.itemsize, dtype=np.uint8)
    records = raw.view(row.record)
    packed = storage.encode(row.codes(records).reshape(-1), "uint4")
    assert bytes(nibble_codes(records["qs"].reshape(-1, 32), 0).reshape(-1)) == bytes(packed)


def test_blocks_that_are_not_bytes_are_refused_as_before():
    with pytest.raises(HurrayDeclError, match="bytes-like"):
        from_gguf(object(), "Q4_0", (1, 32))
