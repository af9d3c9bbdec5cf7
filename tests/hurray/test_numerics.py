"""Dequantization against a per-element reference written here from the scheme texts, and
quantization round trips, for every scheme, storage type, axis and partial-block case."""

from __future__ import annotations

import struct
import tracemalloc

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import hurray_decl as hd
from hurray_decl.hurray import numerics as tensor_numerics
from hurray_decl.hurray.kernels import CHUNK_ELEMENTS
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.element_types import BY_NAME, BY_TAG
from tests.helpers import covers, raises_rule
from tests.hurray.test_storage import formula_values

NF4_TABLE = (  # RULES.md HQ-NF4-11, copied from the rule text
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
    -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
    0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
    0.7229568362236023, 1.0,
)
FLOAT_LAYOUTS = {  # sign bit, exponent bits, mantissa bits, bias (DIGEST § 4.5)
    "float8_e4m3": (7, 4, 3, 7), "float8_e5m2": (7, 5, 2, 15), "float4_e2m1": (3, 2, 1, 1),
    "float6_e2m3": (5, 2, 3, 1), "float6_e3m2": (5, 3, 2, 3),
}


# --- the reference: one element at a time, straight from the formulas -------------------

def element_code(data: bytes, n: int, bits: int) -> int:
    """Raw code of stored element n (DIGEST § 4.4)."""
    if bits >= 8:
        width = bits // 8
        return int.from_bytes(data[n * width:(n + 1) * width], "little")
    if bits == 6:
        group = int.from_bytes(data[3 * (n // 4): 3 * (n // 4) + 3], "little")
        return group >> (6 * (n % 4)) & 0x3F
    per = 8 // bits
    return data[n // per] >> ((n % per) * bits) & ((1 << bits) - 1)


def element_value(code: int, name: str) -> float | int:
    kind = BY_NAME[name]
    if name in FLOAT_LAYOUTS:
        return formula_values(*FLOAT_LAYOUTS[name])[code]
    if kind.kind.value == "signed" and code >= 1 << (kind.bits - 1):
        return code - (1 << kind.bits)
    return code


def scale_value(raw: bytes, index: int, scale_type: str) -> np.float32:
    if scale_type == "float32":
        return np.float32(struct.unpack_from("<f", raw, 4 * index)[0])
    if scale_type == "float16":
        return np.float32(struct.unpack_from("<e", raw, 2 * index)[0])
    top = int.from_bytes(raw[2 * index: 2 * index + 2], "little")  # bfloat16: the top half of a float32
    return np.float32(struct.unpack("<f", (top << 16).to_bytes(4, "little"))[0])


def reference(descriptor, buffers) -> np.ndarray:
    q, shape = descriptor.quantization, tuple(descriptor.shape)
    name = BY_TAG[descriptor.type_tag].name
    bits = BY_NAME[name].bits
    data = bytes(buffers[0])[descriptor.byte_offset:]
    axis = getattr(q, "axis", 0)
    block = getattr(q, "block_size", None)
    extent = shape[axis] if shape else 1
    blocks_per_axis = -(-extent // block) if block else 1
    padded = list(shape)
    if block and shape:
        padded[axis] = blocks_per_axis * block
    out = np.zeros(shape, dtype=np.float32)
    for index in np.ndindex(*shape) if shape else [()]:
        n = int(np.ravel_multi_index(index, padded)) if shape else 0
        value = element_value(element_code(data, n, bits), name)
        if isinstance(q, hd.PerTensorAffine):
            x = np.float32(np.float32(value - q.zero_point) * np.float32(q.scale))
        else:
            rest = [i for k, i in enumerate(index) if k != axis]
            rest_shape = [s for k, s in enumerate(shape) if k != axis]
            outer = int(np.ravel_multi_index(rest, rest_shape)) if rest else 0
            if isinstance(q, hd.PerChannelAffine):
                b, scale_type = index[axis], "float32"
            else:
                b = outer * blocks_per_axis + index[axis] // block
                scale_type = {1: "float16", 2: "bfloat16", 3: "float32"}.get(getattr(q, "scale_type_tag", 3))
            if isinstance(q, hd.MXFP):
                s = np.float32(2.0 ** (bytes(buffers[q.scale_buffer_index])[b] - 127))
                x = np.float32(s * np.float32(value))
            elif isinstance(q, hd.NF4):
                scale = scale_value(bytes(buffers[q.scale_buffer_index]), b, "float32")
                x = np.float32(scale * np.float32(NF4_TABLE[value]))
            else:
                s = scale_value(bytes(buffers[q.scale_buffer_index]), b, scale_type)
                z = 0 if q.symmetric else struct.unpack_from("<i", bytes(buffers[q.zero_point_buffer_index]), 4 * b)[0]
                x = np.float32(np.float32(value - z) * s)
        out[index] = x
    return out


# --- random quantized tensors, built from codes and parameters directly ---------------------

def powers(low: int, high: int) -> list[int]:
    return [1 << e for e in range(low.bit_length() - 1, high.bit_length()) if low <= 1 << e <= high]


@st.composite
def quantized_tensors(draw, scheme_name: str):
    row = hd.scheme(scheme_name)
    storage_name = draw(st.sampled_from(row.storage_types))
    rank = draw(st.integers(1 if scheme_name != "per_tensor_affine" else 0, 3))
    shape = draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    axis = draw(st.integers(0, rank - 1)) if rank else 0
    kind = BY_NAME[storage_name]
    minimum = {"per_block_affine": 2, "nf4": 8, "mxfp": 16}.get(scheme_name)
    block = None
    if minimum:
        if scheme_name == "mxfp":
            block = draw(st.sampled_from([16, 32]))
            shape[axis] = block * draw(st.integers(1, 2))
        else:
            shape[axis] = draw(st.integers(minimum, 3 * minimum))
            block = draw(st.sampled_from(powers(minimum, shape[axis])))
    g = hd.kernels.Geometry(tuple(shape), axis, block or 1)
    stored = g.stored_elements if block else int(np.prod(shape))
    if storage_name in FLOAT_LAYOUTS:
        table = storage.value_table(storage_name)
        codes = draw(st.lists(st.sampled_from([c for c in range(len(table)) if np.isfinite(table[c])]),
                              min_size=stored, max_size=stored))
        elements = table[np.array(codes, dtype=np.int64)]
    else:
        low, high = kind.int_range
        elements = np.array(draw(st.lists(st.integers(low, high), min_size=stored, max_size=stored)), dtype=np.int64)
    if block and g.padded != g.extent:  # padding stays zero codes
        grid = elements.reshape(g.before, g.padded, g.after)
        grid[:, g.extent:] = 0
    scales = st.tuples(st.floats(2.0 ** -10, 2.0 ** 10, width=32), st.booleans()).map(lambda p: p[0] if p[1] else -p[0])
    symmetric = draw(st.booleans())
    zlow, zhigh = kind.zero_point_range or (0, 0)
    params: list[np.ndarray] = []
    if scheme_name == "per_tensor_affine":
        model = hd.PerTensorAffine(scale=draw(scales), zero_point=0 if symmetric else draw(st.integers(zlow, zhigh)))
    elif scheme_name == "per_channel_affine":
        count = shape[axis]
        params.append(np.array(draw(st.lists(scales, min_size=count, max_size=count)), dtype="<f4"))
        if not symmetric:
            params.append(np.array(draw(st.lists(st.integers(zlow, zhigh), min_size=count, max_size=count)), "<i4"))
        model = hd.PerChannelAffine(axis=axis, scale_buffer_index=1, symmetric=symmetric,
                                    zero_point_buffer_index=None if symmetric else 2)
    elif scheme_name == "per_block_affine":
        tag = draw(st.sampled_from([1, 2, 3]))
        dtype = {1: np.float16, 2: ml_dtypes.bfloat16, 3: np.float32}[tag]
        values = np.array(draw(st.lists(scales, min_size=g.num_blocks, max_size=g.num_blocks))).astype(dtype)
        params.append(values)
        if not symmetric:
            params.append(np.array(draw(st.lists(st.integers(zlow, zhigh), min_size=g.num_blocks,
                                                 max_size=g.num_blocks)), "<i4"))
        model = hd.PerBlockAffine(axis=axis, block_size=block, scale_buffer_index=1, symmetric=symmetric,
                                  zero_point_buffer_index=None if symmetric else 2, scale_type_tag=tag)
    elif scheme_name == "nf4":
        params.append(np.abs(np.array(draw(st.lists(scales, min_size=g.num_blocks, max_size=g.num_blocks)), "<f4")))
        model = hd.NF4(axis=axis, block_size=block, scale_buffer_index=1)
    else:
        params.append(np.array(draw(st.lists(st.integers(100, 150), min_size=g.num_blocks, max_size=g.num_blocks)),
                               dtype=np.uint8))
        model = hd.MXFP(axis=axis, block_size=block, scale_buffer_index=1)
    return tensor_numerics.assemble(model, shape, storage_name, elements, params)


@covers("HQ-PT-08", "HQ-PC-12", "HQ-PB-15", "HQ-PB-19", "HQ-PB-21", "HQ-PB-22", "HQ-NF4-12", "HQ-MX-11",
        "HQ-ZP-02", "HE-14", "HE-16", "HE-18", "HE-20", "HE-22")
@pytest.mark.parametrize("scheme_name", [row.name for row in hd.SCHEMES if row.kernel is not None])
@settings(max_examples=40)
@given(data=st.data())
def test_dequantize_equals_the_per_element_reference(scheme_name, data):
    descriptor, buffers = data.draw(quantized_tensors(scheme_name))
    ours = hd.dequantize(descriptor, buffers)
    expected = reference(descriptor, buffers)
    assert ours.dtype == np.float32 and ours.shape == tuple(descriptor.shape)
    same = (ours.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(ours) & np.isnan(expected))
    if not same.all():
        first = tuple(int(i) for i in np.argwhere(~same)[0])
        raise AssertionError(f"first mismatch at {first}: ours {ours[first]!r}, reference {expected[first]!r}")


@covers("HQ-NF4-11")
def test_nf4_table_is_bit_exact():
    from hurray_decl.hurray.schemes.nf4 import LEVELS

    bits = [struct.unpack("<I", struct.pack("<f", v))[0] for v in LEVELS]
    assert bits == [0xBF800000, 0xBF3239B1, 0xBF066B30, 0xBECA32A0, 0xBE91A24D, 0xBE3D353F, 0xBDBA7871, 0x00000000,
                    0x3DA2FAFF, 0x3E24CAE3, 0x3E7C04DD, 0x3EAD033A, 0x3EE1A4B8, 0x3F1007AB, 0x3F3913B3, 0x3F800000]
    assert LEVELS == NF4_TABLE


@covers("HQ-PB-19")
def test_padding_content_never_refuses_dequantization():
    descriptor, buffers = tensor_numerics.quantize(np.arange(6, dtype=np.float32).reshape(2, 3), "per_block_affine",
                                         block_size=2, symmetric=False)
    clean = hd.dequantize(descriptor, buffers)
    dirty = bytearray(buffers[0])
    dirty[3] = 0x7F  # element 3 of row 0 is padding (extent 3, padded to 4)
    bad = [bytes(dirty)] + buffers[1:]
    with raises_rule("HQ-PB-18"):
        hd.validate_buffers(descriptor, bad)
    assert np.array_equal(hd.dequantize(descriptor, bad), clean)


@covers("HQ-PB-21")
def test_half_precision_scales_widen_exactly():
    for scale_type, dtype in (("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16)):
        descriptor, buffers = tensor_numerics.quantize(np.linspace(-3, 3, 64).reshape(2, 32), "per_block_affine",
                                             block_size=32, scale_type=scale_type)
        scales = np.frombuffer(buffers[1], dtype=dtype).astype(np.float32)
        codes = np.frombuffer(buffers[0], dtype=np.int8).reshape(2, 32).astype(np.float32)
        assert np.array_equal(hd.dequantize(descriptor, buffers), codes * scales[:, None])


# --- quantize ---------------------------------------------------------------------------

CASES = [
    ("per_tensor_affine", {}), ("per_tensor_affine", {"symmetric": False, "storage": "uint4"}),
    ("per_tensor_affine", {"storage": "int32"}), ("per_channel_affine", {"axis": 1, "symmetric": False}),
    ("per_channel_affine", {"storage": "int16"}), ("per_block_affine", {"storage": "int4", "block_size": 8}),
    ("per_block_affine",
     {"symmetric": False, "storage": "uint2", "axis": 0, "block_size": 4, "scale_type": "bfloat16"}),
    ("per_block_affine", {"symmetric": False, "scale_type": "float16", "block_size": 16}),
    ("nf4", {"block_size": 8}), ("mxfp", {"block_size": 16}), ("mxfp", {"block_size": 16, "storage": "float8_e5m2"}),
    ("mxfp", {"block_size": 16, "storage": "float4_e2m1"}), ("mxfp", {"block_size": 16, "storage": "float6_e2m3"}),
    ("mxfp", {"block_size": 16, "storage": "float6_e3m2"}), ("mxfp", {"block_size": 16, "storage": "int8"}),
    ("mxfp", {"block_size": 16, "storage": "int4"}),
]


def element_scales(descriptor, buffers, shape) -> np.ndarray:
    """The scale applied to every element, spread over the logical shape."""
    q = descriptor.quantization
    if isinstance(q, hd.PerTensorAffine):
        return np.full(shape, q.scale)
    if isinstance(q, hd.PerChannelAffine):
        along = [1] * len(shape)
        along[q.axis] = shape[q.axis]
        return np.broadcast_to(np.frombuffer(buffers[1], "<f4").reshape(along), shape)
    if isinstance(q, hd.MXFP):
        values = 2.0 ** (np.frombuffer(buffers[1], np.uint8).astype(np.float64) - 127)
    elif isinstance(q, hd.NF4):
        values = np.frombuffer(buffers[1], "<f4")
    else:
        values = np.frombuffer(buffers[1], storage.dtype({1: "float16", 2: "bfloat16", 3: "float32"}[q.scale_type_tag]))
    before, after = int(np.prod(shape[: q.axis])), int(np.prod(shape[q.axis + 1:]))
    nb = -(-shape[q.axis] // q.block_size)
    grid = values.astype(np.float64).reshape(before, after, nb).transpose(0, 2, 1)
    grid = np.repeat(grid, q.block_size, axis=1)[:, : shape[q.axis]]
    return grid.reshape(shape)


@pytest.mark.parametrize("scheme_name, options", CASES, ids=[f"{s}-{o}" for s, o in CASES])
@settings(max_examples=25)
@given(data=st.data())
def test_quantize_stays_within_half_a_step(scheme_name, options, data):
    rows = data.draw(st.integers(options.get("block_size", 1) if options.get("axis") == 0 else 1, 6))
    cols = 32 if scheme_name == "mxfp" else data.draw(st.integers(16, 40))
    x = np.array(data.draw(st.lists(st.floats(-100, 100, width=32), min_size=rows * cols, max_size=rows * cols)),
                 dtype=np.float32).reshape(rows, cols)
    descriptor, buffers = tensor_numerics.quantize(x, scheme_name, **options)
    assert hd.read_tensor_descriptor(hd.write_tensor_descriptor(descriptor)) == descriptor
    hd.validate_buffers(descriptor, buffers)
    y = hd.dequantize(descriptor, buffers).astype(np.float64)
    assert np.isfinite(y).all()
    error = np.abs(y - x)
    scales = np.abs(element_scales(descriptor, buffers, x.shape))
    slack = np.abs(x) * 2.0 ** -22  # the float32 rounding of the product itself
    name = BY_TAG[descriptor.type_tag].name
    if scheme_name == "nf4" or name in FLOAT_LAYOUTS:
        levels = np.array(NF4_TABLE) if scheme_name == "nf4" else storage.value_table(name)
        levels = levels[np.isfinite(levels)].astype(np.float64)
        nearest = np.abs(scales[..., None] * levels - x[..., None]).min(axis=-1)
        assert (error <= nearest + slack).all(), f"max excess {(error - nearest).max()}"
    else:
        assert (error <= scales / 2 + slack).all(), f"max error/scale {(error / scales).max()}"


@pytest.mark.parametrize("scheme_name, options, step", [
    ("per_tensor_affine", {}, 0.25),
    ("per_channel_affine", {"axis": 0}, 0.5),
    ("per_block_affine", {"storage": "int4", "block_size": 8}, 0.125),
])
def test_on_grid_values_come_back_exactly(scheme_name, options, step):
    qmax = BY_NAME[options.get("storage", "int8")].int_range[1]
    codes = np.arange(-qmax, qmax + 1)
    x = (np.resize(codes, 4 * 16 * 4)[: 4 * 16].reshape(4, 16) * step).astype(np.float32)
    x[:, ::8] = qmax * step  # every group reaches the largest code, so calibration finds the grid
    descriptor, buffers = tensor_numerics.quantize(x, scheme_name, **options)
    assert np.array_equal(hd.dequantize(descriptor, buffers), x)


def test_affine_error_is_within_half_a_step():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((8, 96)).astype(np.float32) * 10
    for symmetric in (True, False):
        descriptor, buffers = tensor_numerics.quantize(x, "per_block_affine", block_size=32, symmetric=symmetric,
                                             storage="int4" if symmetric else "uint4")
        scales = np.repeat(np.frombuffer(buffers[1], "<f4").reshape(8, 3), 32, axis=1)
        error = np.abs(hd.dequantize(descriptor, buffers).astype(np.float64) - x)
        assert (error <= scales / 2 * (1 + 1e-6)).all()


@pytest.mark.parametrize("name", ["float8_e5m2", "float8_e4m3", "float6_e3m2", "int4"])
def test_mxfp_exponent_keeps_the_block_finite(name):
    # float8_e5m2's value table holds infinities: the scale must come from its largest finite value.
    x = np.linspace(-100, 100, 32, dtype=np.float32).reshape(1, 32)
    descriptor, buffers = tensor_numerics.quantize(x, "mxfp", block_size=32, storage=name)
    y = hd.dequantize(descriptor, buffers)
    assert np.isfinite(y).all() and np.abs(y - x).max() < 20


def test_nf4_picks_the_nearest_level():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    descriptor, buffers = tensor_numerics.quantize(x, "nf4", block_size=64)
    absmax = np.frombuffer(buffers[1], "<f4")[:, None]
    y = hd.dequantize(descriptor, buffers)
    candidates = absmax[..., None] * np.array(NF4_TABLE, dtype=np.float32)
    nearest = np.abs(x[..., None] - candidates).min(axis=-1)
    assert np.allclose(np.abs(y - x), nearest, rtol=0, atol=1e-6)


def test_quantize_refuses_non_finite_input():
    with raises_rule("HQ-PT-03", path="[1]"):
        tensor_numerics.quantize(np.array([1.0, np.nan]), "per_tensor_affine")


def test_mxfp_quantize_refuses_a_partial_block():
    with raises_rule("HQ-MX-08"):
        tensor_numerics.quantize(np.zeros((2, 24), np.float32), "mxfp", block_size=16)


# --- the dequantize contract --------------------------------------------------------------

def test_dequantize_refuses_opaque_schemes():
    descriptor, buffers = tensor_numerics.quantize(np.ones((2, 4), np.float32), "per_tensor_affine")
    data = bytearray(hd.write_tensor_descriptor(descriptor))
    at = data.index(hd.encode_quantization(descriptor.quantization))
    data[at] = 0x3A  # an unassigned scheme tag, skipped in permissive mode
    opaque = hd.read_tensor_descriptor(bytes(data), permissive=True)
    with raises_rule("HQ-EXT-02"):
        hd.dequantize(opaque, buffers)


def test_dequantize_refuses_unquantized_tensors():
    descriptor, buffers = tensor_numerics.quantize(np.ones((2, 4), np.float32), "per_tensor_affine")
    plain = descriptor.replace(quantization=None, type_tag=BY_NAME["int8"].tag)
    with raises_rule("HT-SEC-01"):
        hd.dequantize(plain, buffers)


def test_dequantize_checks_parameter_data_first():
    descriptor, buffers = tensor_numerics.quantize(np.ones((2, 32), np.float32), "per_block_affine", block_size=16)
    scales = bytearray(buffers[1])
    scales[0:4] = struct.pack("<f", float("inf"))
    with raises_rule("HQ-PB-12"):
        hd.dequantize(descriptor, [buffers[0], bytes(scales)])


def test_out_must_fit():
    descriptor, buffers = tensor_numerics.quantize(np.ones((2, 4), np.float32), "per_tensor_affine")
    with raises_rule("ARGUMENT", path="out"):
        hd.dequantize(descriptor, buffers, out=np.empty((4, 2), np.float32))


def test_large_dequantization_stays_within_its_memory_bound(tmp_path):
    rows, cols = 512, 4096  # 2 Mi elements, 8 MiB of float32 output
    rng = np.random.default_rng(0)
    descriptor, buffers = tensor_numerics.quantize(rng.standard_normal((rows, cols)).astype(np.float32),
                                                   "per_block_affine", block_size=32, storage="int4",
                                                   scale_type="float16", symmetric=False)
    out = np.lib.format.open_memmap(tmp_path / "out.npy", mode="w+", dtype=np.float32, shape=(rows, cols))
    seen = []
    tracemalloc.start()
    hd.dequantize(descriptor, buffers, out=out, progress=lambda done, total: seen.append((done, total)))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    parameters = sum(len(b) for b in buffers[1:])
    # Stated bound: a few chunk temporaries per thread plus two copies of the parameters.
    bound = 8 * 4 * CHUNK_ELEMENTS * 4 + 4 * parameters * 2
    assert peak < bound, f"peak {peak} bytes over the bound {bound}"
    assert seen[-1][0] == seen[-1][1] and len(seen) > 1
    assert np.array_equal(np.asarray(out), hd.dequantize(descriptor, buffers))


@pytest.mark.parametrize("scheme_name", [row.name for row in hd.SCHEMES])
def test_quantize_refuses_a_storage_type_the_scheme_does_not_list(scheme_name):
    row = hd.scheme(scheme_name)
    foreign = next(t.name for t in BY_NAME.values() if t.name not in row.storage_types)
    with raises_rule(row.storage_rule, path="storage"):
        tensor_numerics.quantize(np.ones((2, 64), np.float32), scheme_name, storage=foreign)


def test_symmetric_unsigned_storage_refuses_negative_values():
    with raises_rule("HQ-ZP-02", path="symmetric"):
        tensor_numerics.quantize(-np.ones((2, 64), np.float32), "per_block_affine", storage="uint4", symmetric=True)
    descriptor, buffers = tensor_numerics.quantize(np.full((2, 64), 3.0, np.float32), "per_block_affine",
                                                   storage="uint4")
    assert np.array_equal(hd.dequantize(descriptor, buffers), np.full((2, 64), 3.0, np.float32))
