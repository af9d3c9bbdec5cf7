"""GGUF block types: the unpacking table against gguf's own dequantize, and the exact Hurray and
onnx-light forms, bit for bit (signed zeros included) on adversarial blocks."""

from __future__ import annotations

import gguf
import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl.convert.gguf import GGUF_TYPES, sub_blocks
from hurray_decl.convert.onnx_light import PROFILES, TINY, gguf_to_onnx_light
from hurray_decl.onnx_light import EncodedValueProto, decode_plan, dequantize_value
from tests.helpers import covers, raises_rule

Q = gguf.GGMLQuantizationType
HALF_SCALES = ("d", "dmin", "m")


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).reshape(-1).view(np.uint32)


def adversarial(name: str, blocks: int, seed: int = 0) -> np.ndarray:
    """Random block bytes whose f16 scales include +0, -0, negatives, the f16 maximum and tiny values."""
    row = GGUF_TYPES[name]
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, (blocks, row.record.itemsize), dtype=np.uint8)
    records = raw.view(row.record).reshape(blocks)
    special = np.array([0.0, -0.0, -1.5, 65504.0, -6e-8, 2.0 ** -14], dtype=np.float16)
    for field in HALF_SCALES:
        if field in row.record.names:
            values = rng.standard_normal(blocks).astype(np.float16)
            values[: special.size] = np.roll(special, HALF_SCALES.index(field))
            records[field] = values
    return raw.reshape(-1)


def test_the_magic_is_gguf_s():
    from hurray_decl.convert.gguf import GGUF_MAGIC

    assert int.from_bytes(GGUF_MAGIC, "little") == gguf.GGUF_MAGIC


@pytest.mark.parametrize("name", list(GGUF_TYPES))
def test_the_block_table_matches_gguf(name):
    row = GGUF_TYPES[name]
    assert gguf.GGML_QUANT_SIZES[Q[name]] == (row.elements, row.record.itemsize)
    raw = adversarial(name, 48)
    split = sub_blocks(raw, name, (3, 16 * row.elements))
    assert split.codes.min() >= row.low and split.codes.max() <= row.high
    assert np.array_equal(bits(split.reference()), bits(gguf.quants.dequantize(raw, Q[name])))


@covers("OL-NUM-14")
@pytest.mark.parametrize("name", list(GGUF_TYPES))
def test_onnx_light_values_decode_to_gguf_bit_for_bit(name):
    row = GGUF_TYPES[name]
    raw = adversarial(name, 40, seed=len(name))
    shape = (2, 5, 4 * row.elements)
    value = EncodedValueProto.FromString(gguf_to_onnx_light(raw, Q[name], shape).SerializeToString())
    assert value.struct_type.name == f"onnx_light.quantization.v1/{PROFILES[name].wire_name}"
    decoded = dequantize_value(value)
    assert decoded.dtype == np.float32 and decoded.shape == shape
    assert np.array_equal(bits(decoded), bits(gguf.quants.dequantize(raw, Q[name])))
    blocks = [b for run in decode_plan(value).runs for b in run.blocks]
    assert len(blocks) == decoded.size // row.sub_block and all(b.scale > 0 for b in blocks)


def test_negative_zero_and_zero_scale_blocks_are_pinned():
    blocks = np.zeros(3, dtype=GGUF_TYPES["Q4_0"].record)
    blocks["d"] = [-0.5, 0.0, -0.0]
    blocks["qs"][0] = 0x88                            # q = 8: gguf gives -0.5 * 0 = -0.0
    blocks["qs"][1] = 0x0F                            # d = +0: q - 8 < 0 gives -0, q - 8 >= 0 gives +0
    raw = blocks.view(np.uint8)
    expected = gguf.quants.dequantize(raw, Q.Q4_0).reshape(3, 32)
    assert np.signbit(expected[0]).all()
    assert not np.signbit(expected[1, :16]).any() and np.signbit(expected[1, 16:]).all()
    value = gguf_to_onnx_light(raw, "Q4_0", (96,))
    assert np.array_equal(bits(dequantize_value(value)), bits(expected))
    first, second, third = decode_plan(value).runs[0].blocks
    assert (first.scale, first.offset) == (0.5, -TINY)  # mirrored codes; the offset turns q = 8 into -0
    assert second.scale == TINY and third.scale == TINY


def test_non_finite_gguf_scales_are_refused():
    blocks = np.zeros(1, dtype=GGUF_TYPES["Q8_0"].record)
    blocks["d"] = np.inf
    with raises_rule("OL-PLAN-10", path="S"):
        gguf_to_onnx_light(blocks.view(np.uint8), "Q8_0", (32,))


NON_FINITE_HALVES = {"inf": 0x7C00, "-inf": 0xFC00, "quiet NaN": 0x7E00, "signalling NaN": 0x7C01}
"""float16 bit patterns of the non-finite scales (a signalling NaN warns when NumPy casts it to float64)."""


@pytest.mark.parametrize("name", list(GGUF_TYPES))
@pytest.mark.parametrize("kind", list(NON_FINITE_HALVES))
def test_non_finite_scales_are_refused_without_a_numpy_warning(name, kind, recwarn):
    """Every type, both converters, an infinite or NaN d (and dmin / m) in a block of zero and of
    random codes: the rule's refusal and no RuntimeWarning (inf * 0 and the NaN casts used to warn)."""
    row = GGUF_TYPES[name]
    raw = adversarial(name, 8, seed=len(kind))
    records = raw.view(row.record)
    for field in HALF_SCALES:
        if field in row.record.names:
            records[field][1:] = np.uint16(NON_FINITE_HALVES[kind]).view(np.float16)
    for field in row.record.names:
        if field not in HALF_SCALES:
            records[field][2] = 0  # block 2: every code and sub-block scale zero (inf * 0)
    shape = (2, 4 * row.elements)
    with raises_rule("OL-PLAN-10", path="S"):
        gguf_to_onnx_light(raw, name, shape)
    with raises_rule("HQ-HDR-09" if row.two_level else "HQ-PB-12"):
        hd.from_gguf(raw, name, shape)
    assert not np.isfinite(sub_blocks(raw, name, shape).reference()).all()  # gguf's NaNs and infinities, silently
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("name", ["Q4_0", "Q5_0", "Q8_0"])
def test_hurray_single_level_blocks_are_exact_with_zero_and_negative_scales(name):
    row = GGUF_TYPES[name]
    raw = adversarial(name, 64, seed=7)
    records = raw.view(row.record)
    zero = np.flatnonzero(records["d"].astype(np.float32) == 0)
    records["qs"][zero] = 5 if name == "Q8_0" else 0x88     # one sign of zero per zero-d block
    if name == "Q5_0":
        records["qh"][zero] = 0xFF                           # q = 0x18 - 16 = 8 > 0
    descriptor, buffers = hd.from_gguf(raw, name, (4, 16 * 32))
    assert np.array_equal(bits(hd.dequantize(descriptor, buffers)), bits(gguf.quants.dequantize(raw, Q[name])))
    records["qs"][zero[0]] = np.arange(-16, 16) if name == "Q8_0" else 0x0F
    if name == "Q5_0":
        records["qh"][zero[0]] = [0xFF, 0xFF, 0, 0]         # q = 15 for elements 0..15, -16 after
    with raises_rule("HQ-PB-13"):                            # d = 0 and zeros of both signs
        hd.from_gguf(raw, name, (4, 16 * 32))


@pytest.mark.parametrize("name", ["Q4_1", "Q5_1"])
def test_hurray_q4_1_with_negative_and_zero_scales(name):
    blocks = np.zeros(4, dtype=GGUF_TYPES[name].record)
    blocks["d"] = [-0.5, -0.25, 0.0, 0.0]
    blocks["m"] = np.array([3 * 0.5, -0.0, 0.75, -0.0], dtype=np.float16)   # m = -z * d with z = 3, 0
    blocks["qs"] = np.arange(16) * 0x11 % 256
    raw = blocks.view(np.uint8)
    descriptor, buffers = hd.from_gguf(raw, name, (128,))
    expected = gguf.quants.dequantize(raw, Q[name]).reshape(4, 32)
    assert np.signbit(expected[0, 19]) == 0 and np.signbit(expected[1, 0])  # q = z: +0 after -d * z + m; -0 + -0
    assert np.array_equal(bits(hd.dequantize(descriptor, buffers)), bits(expected))


# --- fuzzing: arbitrary bytes, types and shapes give a result or a HurrayDeclError ------------------

from hypothesis import (
    given,
    settings,
    strategies as st,
)

from hurray_decl.convert import BlockParts
from hurray_decl.errors import HurrayDeclError


def _check_whole(convert, name, shape, data, result, err):
    """A right-sized input of a known type converts to gguf's values bit for bit, or is refused
    for a reason its bytes show: a scale or offset that is not finite, a form Hurray cannot hold."""
    row = GGUF_TYPES[name]
    with np.errstate(all="ignore"):
        expected = gguf.quants.dequantize(np.frombuffer(data, dtype=np.uint8), Q[name]).reshape(-1)
        split = sub_blocks(data, name, shape)
    finite = np.isfinite(split.scales).all() and (split.offsets is None or np.isfinite(split.offsets).all())
    if err is None:
        decoded = hd.dequantize(*result) if convert is hd.from_gguf else dequantize_value(result)
        assert np.array_equal(bits(decoded), bits(expected)), f"{convert.__name__} {name} differs from gguf"
        return
    if convert is hd.from_gguf:
        reasons = {"HQ-HDR-09": row.two_level, "HQ-PB-12": not finite, "HQ-PB-13": bool((split.scales == 0).any()),
                   "HQ-PB-22": split.offsets is not None}
    else:
        reasons = {"OL-PLAN-10": not np.isfinite(split.scales).all(),
                   "OL-PLAN-13": split.offsets is not None and not np.isfinite(split.offsets).all()}
    assert reasons.get(err.code), f"{convert.__name__} {name} refused {err.code} without its reason: {err}"


@pytest.mark.parametrize("name", list(GGUF_TYPES))
def test_random_right_sized_blocks_convert_exactly_or_are_refused_for_their_reason(name):
    """The fuzz test below rarely draws a right-sized input; these are all right-sized."""
    row = GGUF_TYPES[name]
    rng = np.random.default_rng(len(name))
    outcomes = set()
    for shape in [(1, row.elements), (3, 2 * row.elements), (2, 1, row.elements)] * 3:
        size = int(np.prod(shape)) // row.elements * row.record.itemsize
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        for convert in (hd.from_gguf, gguf_to_onnx_light):
            try:
                result, error = convert(data, name, shape), None
            except HurrayDeclError as err:
                result, error = None, err
            _check_whole(convert, name, shape, data, result, error)
            outcomes.add((convert.__name__, "ok" if error is None else error.code))
    assert ("gguf_to_onnx_light", "ok") in outcomes  # some inputs of each type convert
    assert ("from_gguf", "ok") in outcomes or row.two_level or name in ("Q4_1", "Q5_1")


@settings(max_examples=80)
@given(name=st.sampled_from(list(GGUF_TYPES) + ["Q5_0", "F32", 7, None]),
       shape=st.lists(st.integers(0, 600), min_size=0, max_size=3),
       data=st.binary(max_size=2000), whole=st.booleans())
def test_gguf_converters_take_any_bytes(name, shape, data, whole):
    row = GGUF_TYPES.get(name) if isinstance(name, str) else None
    if whole and row is not None and shape:  # whole blocks along the last axis, at most 3 of them per row
        shape = shape[:-1] + [shape[-1] % 4 * row.elements]
    small = int(np.prod(shape)) <= 1 << 15
    right = whole and small and row is not None and bool(shape)
    if right:  # the right size: decode
        size = int(np.prod(shape)) // row.elements * row.record.itemsize
        data = (data * (size // max(len(data), 1) + 1))[:size] if data else bytes(size)
    for convert in (hd.from_gguf, gguf_to_onnx_light):
        result, error = None, None
        try:
            result = convert(data, name, shape)
        except HurrayDeclError as err:
            assert err.code and str(err)
            error = err
        else:
            assert result is not None
        if right and int(np.prod(shape)):
            _check_whole(convert, name, shape, data, result, error)


@settings(max_examples=80)
@given(shape=st.lists(st.integers(0, 9), min_size=0, max_size=3), axis=st.integers(-4, 4),
       block=st.integers(-2, 20), storage=st.sampled_from(["int4", "uint8", "int2", "float32", ""]),
       scale_type=st.sampled_from(["float16", "bfloat16", "float32", "int8"]),
       grid=st.booleans(), zeros=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_block_parts_take_any_arguments(shape, axis, block, storage, scale_type, grid, zeros, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(-3, 4, shape)
    blocks = int(np.prod(shape)) if shape else 1
    scales = rng.choice([0.5, 1.0, -2.0, 0.1, np.nan], blocks)
    if grid and shape:
        scales = scales.reshape(shape)
    try:
        parts = BlockParts(codes, storage, axis, block, scales, scale_type, codes.copy() if zeros else None)
    except HurrayDeclError as err:
        assert err.code
    else:
        assert parts.scales.ndim == 1 and parts.scales.size == int(np.prod(parts.grid_shape))


def test_float_tensors_keep_their_bytes(tmp_path):
    from hurray_decl.convert.gguf import read_gguf
    from hurray_decl.convert.tensors import gguf_to_hurray, gguf_to_onnx_light_tensor, initializer_to_hurray

    x = np.random.default_rng(9).standard_normal((3, 5)).astype(np.float32)
    path = tmp_path / "floats.gguf"
    writer = gguf.GGUFWriter(str(path), "test")
    writer.add_tensor("bf16", gguf.quants.quantize(x, Q.BF16), raw_dtype=Q.BF16)
    writer.add_tensor("f32", x)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    for tensor in read_gguf(path):
        descriptor, buffers = gguf_to_hurray(tensor)
        assert descriptor.quantization is None and tuple(descriptor.shape) == (3, 5)
        assert buffers == [tensor.data.tobytes()]
        plain = gguf_to_onnx_light_tensor(tensor)
        assert plain.raw_data == tensor.data.tobytes() and list(plain.dims) == [3, 5]
        again, again_buffers = initializer_to_hurray(plain)
        assert again.type_tag == descriptor.type_tag and again_buffers == buffers
