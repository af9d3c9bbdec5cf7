"""Chunk boundaries, large odd tensors, size limits (HX-01), bounded memory (HX-02), threads,
and the documented calibration choices, for every scheme and layout.

The per-element reference is the one of test_numerics (written from the scheme texts); here it
runs with chunks of a few elements, so every edge path (partial packing units, partial blocks
at chunk edges, chunks inside one block row, threads) is taken.
"""

from __future__ import annotations

import math
import sys
import threading
import time
import tracemalloc

import construct as cs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import hurray_decl as hd
from hurray_decl.errors import ArgumentError
from hurray_decl.hurray import bench, kernels, numerics as tensor_numerics
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.element_types import BY_NAME, BY_TAG
from hurray_decl.hurray.tensor import BufferHandle, ColumnMajor, Morton, Strided, TensorDescriptor, Tiled
from hurray_decl.hurray.tensor.access import logical_codes, stored_codes_row_major
from tests.helpers import covers, raises_rule
from tests.hurray.test_numerics import NF4_TABLE, quantized_tensors, reference

SCHEMES = [row.name for row in hd.SCHEMES if row.kernel is not None]


@pytest.fixture
def tiny_chunks(monkeypatch):
    """Chunks of 5 elements: odd, smaller than a block, not a whole number of packing units."""
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 5)
    monkeypatch.setattr(hd.hurray.tensor.access, "CHUNK", 7)


def same_bits(ours: np.ndarray, expected: np.ndarray) -> None:
    same = (ours.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(ours) & np.isnan(expected))
    if not same.all():
        first = tuple(int(i) for i in np.argwhere(~same)[0])
        raise AssertionError(f"first mismatch at {first}: ours {ours[first]!r}, reference {expected[first]!r}")


def relay(descriptor, buffers, layout_name, tile=(2, 3)):
    """The same tensor in another layout: column-major, 2x3 tiles, or Morton order."""
    if layout_name == "row-major":
        return descriptor, buffers
    codes = stored_codes_row_major(descriptor, buffers)
    if codes.ndim != 2:
        pytest.skip("re-laid cases are 2-D")
    rows, cols = codes.shape
    bits = BY_TAG[descriptor.type_tag].bits
    if layout_name == "column-major":
        order, layout = codes.T, ColumnMajor()
    elif layout_name == "tiled":
        tr, tc = tile
        grid = np.zeros((-(-rows // tr) * tr, -(-cols // tc) * tc), dtype=codes.dtype)
        grid[:rows, :cols] = codes
        order = grid.reshape(grid.shape[0] // tr, tr, grid.shape[1] // tc, tc).transpose(0, 2, 1, 3)
        layout = Tiled(tile_shape=(tr, tc))
    else:  # Morton: offset = interleaved bits of (i, j), axis 0 in the even bits
        side = max(1, (max(rows, cols) - 1).bit_length())
        order = np.zeros(1 << (2 * side), dtype=codes.dtype)
        i, j = np.indices((rows, cols))
        offset = np.zeros((rows, cols), dtype=np.int64)
        for b in range(side):
            offset |= ((i >> b) & 1) << (2 * b) | ((j >> b) & 1) << (2 * b + 1)
        order[offset] = codes
        layout = Morton(morton_bits=(side, side))
    data = storage.pack_codes(np.ascontiguousarray(order), bits)
    changed = descriptor.replace(layout=layout, buffers=(BufferHandle(byte_size=len(data)),) + descriptor.buffers[1:])
    return hd.read_tensor_descriptor(hd.write_tensor_descriptor(changed)), [data, *buffers[1:]]


@covers("HQ-PT-08", "HQ-PC-12", "HQ-PB-15", "HQ-PB-19", "HQ-NF4-12", "HQ-MX-11", "HX-02")
@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("scheme_name", SCHEMES)
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])  # the fixture is a constant
@given(data=st.data())
def test_tiny_chunks_equal_the_per_element_reference(tiny_chunks, scheme_name, threads, data):
    descriptor, buffers = data.draw(quantized_tensors(scheme_name))
    same_bits(hd.dequantize(descriptor, buffers, threads=threads), reference(descriptor, buffers))


@pytest.mark.parametrize("layout_name", ["column-major", "tiled", "morton"])
@pytest.mark.parametrize("scheme_name", SCHEMES)
@settings(max_examples=10, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_tiny_chunks_on_other_layouts_equal_the_reference(tiny_chunks, scheme_name, layout_name, data):
    descriptor, buffers = data.draw(quantized_tensors(scheme_name))
    if len(descriptor.shape) != 2:
        return
    expected = reference(descriptor, buffers)
    relaid, contents = relay(descriptor, buffers, layout_name)
    same_bits(hd.dequantize(relaid, contents, threads=2), expected)
    assert np.array_equal(logical_codes(relaid, contents), logical_codes(descriptor, buffers))


PACKED = [  # even extents: column-major pairs of 4-bit rows and byte-wide tile rows are moved as bytes
    ("per_block_affine", (12, 40), {"block_size": 8, "storage": "uint4", "symmetric": False}),
    ("per_block_affine", (16, 24), {"axis": 0, "block_size": 4, "storage": "int2"}),
    ("per_tensor_affine", (10, 36), {"storage": "int4", "symmetric": False}),
    ("nf4", (14, 32), {"block_size": 16}),
    ("mxfp", (6, 64), {"block_size": 32, "storage": "float4_e2m1"}),
    ("per_channel_affine", (8, 30), {"axis": 1, "storage": "uint8", "symmetric": False}),
]


@pytest.mark.parametrize("chunk", [24, 96, 1 << 18])
@pytest.mark.parametrize("layout_name", ["column-major", "tiled"])
@pytest.mark.parametrize("scheme_name, shape, options", PACKED, ids=[f"{c[0]}-{c[1]}" for c in PACKED])
def test_byte_moving_paths_equal_the_reference(monkeypatch, scheme_name, shape, options, layout_name, chunk):
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", chunk)
    x = np.random.default_rng(3).standard_normal(shape) * 4
    descriptor, buffers = tensor_numerics.quantize(x, scheme_name, **options)
    expected = reference(descriptor, buffers)
    relaid, contents = relay(descriptor, buffers, layout_name, tile=(2, 4))
    same_bits(hd.dequantize(relaid, contents, threads=2), expected)


LARGE = [  # 10^5 - 10^6 elements, odd shapes, every scheme
    ("per_block_affine", (333, 1001), {"block_size": 32, "storage": "uint4", "symmetric": False,
                                      "scale_type": "float16"}),
    ("per_block_affine", (1001, 333), {"axis": 0, "block_size": 16, "storage": "int2", "scale_type": "bfloat16"}),
    ("per_channel_affine", (517, 389), {"axis": 1, "storage": "uint8", "symmetric": False}),
    ("per_channel_affine", (389, 517), {"axis": 0, "storage": "int4"}),
    ("per_tensor_affine", (7, 99, 151), {"storage": "uint4", "symmetric": False}),
    ("per_tensor_affine", (331, 333), {"storage": "int16"}),
    ("nf4", (257, 999), {"block_size": 64}),
    ("mxfp", (129, 1024), {"block_size": 32, "storage": "float4_e2m1"}),
    ("mxfp", (1024, 131), {"axis": 0, "block_size": 32, "storage": "float6_e3m2"}),
]


def vectorised_reference(descriptor, buffers) -> np.ndarray:
    """The scheme formulas over whole arrays, from the logical codes (written here, not the
    library's kernels): value(q) from ml_dtypes or the integer codes, the parameters per element."""
    q, shape = descriptor.quantization, tuple(descriptor.shape)
    name = BY_TAG[descriptor.type_tag].name
    codes = logical_codes(descriptor, buffers).astype(np.int64)
    kind = BY_NAME[name]
    if name in storage.NARROW_FLOATS:
        values = storage.value_table(name)[codes].astype(np.float64)
    elif isinstance(q, hd.NF4):
        values = np.asarray(NF4_TABLE, dtype=np.float32)[codes].astype(np.float64)
    else:
        values = np.where(codes >= 1 << (kind.bits - 1), codes - (1 << kind.bits), codes) \
            if kind.kind.value == "signed" else codes
    if isinstance(q, hd.PerTensorAffine):
        return (np.float32(values - q.zero_point) * np.float32(q.scale)).astype(np.float32)
    from tests.hurray.test_numerics import element_scales
    if isinstance(q, hd.PerChannelAffine):
        along = [1] * len(shape)
        along[q.axis] = shape[q.axis]
        zeros = 0 if q.symmetric else np.frombuffer(buffers[2], "<i4").reshape(along)
    elif isinstance(q, hd.PerBlockAffine) and not q.symmetric:
        before, after = int(np.prod(shape[: q.axis])), int(np.prod(shape[q.axis + 1:]))
        nb = -(-shape[q.axis] // q.block_size)
        grid = np.frombuffer(buffers[2], "<i4").reshape(before, after, nb).transpose(0, 2, 1)
        zeros = np.repeat(grid, q.block_size, axis=1)[:, : shape[q.axis]].reshape(shape)
    else:
        zeros = 0
    scales = element_scales(descriptor, buffers, shape).astype(np.float32)
    return (np.float32(values - zeros) * scales).astype(np.float32) if not isinstance(q, (hd.MXFP, hd.NF4)) \
        else (values.astype(np.float32) * scales).astype(np.float32)


@pytest.mark.parametrize("layout_name", ["row-major", "column-major", "tiled"])
@pytest.mark.parametrize("scheme_name, shape, options", LARGE, ids=[f"{c[0]}-{c[1]}" for c in LARGE])
def test_large_odd_tensors_equal_the_formulas(scheme_name, shape, options, layout_name):
    x = np.random.default_rng(11).standard_normal(shape) * 5
    descriptor, buffers = tensor_numerics.quantize(x, scheme_name, **options)
    expected = vectorised_reference(descriptor, buffers)
    if layout_name != "row-major" and len(shape) != 2:
        return
    relaid, contents = relay(descriptor, buffers, layout_name)
    out = np.empty(shape, np.float32)
    hd.dequantize(relaid, contents, out=out, threads=2)
    same_bits(out, expected)


# --- limits ---------------------------------------------------------------------------------

def claimed(shape, layout=None, buffer=b"\x00"):
    descriptor = TensorDescriptor(type_tag=BY_NAME["int8"].tag, shape=shape, layout=layout or Strided(
        strides=(0,) * len(shape)), buffers=(BufferHandle(byte_size=len(buffer)),),
        quantization=hd.PerTensorAffine(scale=1.0))
    return hd.read_tensor_descriptor(hd.write_tensor_descriptor(descriptor)), [buffer]


@covers("HX-01")
@pytest.mark.parametrize("shape", [(2 ** 63 - 1, 0), (2 ** 62, 4, 0), (2 ** 62, 4), (2 ** 40,) * 5 + (4,) + (2 ** 40,)])
def test_sizes_past_the_platform_are_refused_before_any_output(shape):
    descriptor, buffers = claimed(shape)
    with raises_rule("HX-01", path="shape"):
        hd.dequantize(descriptor, buffers)
    with raises_rule("HX-01"):
        tensor_numerics.prepare_dequantize(descriptor, buffers)
    if math.prod(n or 1 for n in shape) > sys.maxsize:  # one byte per code: refused past the index range
        with raises_rule("HX-01"):
            logical_codes(descriptor, buffers)
    else:  # representable once each code takes one byte, not four
        assert logical_codes(descriptor, buffers).shape == shape


def test_an_allocation_the_system_refuses_is_hx01(monkeypatch):
    def refuse(*args, **kwargs):
        raise MemoryError

    descriptor, buffers = claimed((4, 4))
    monkeypatch.setattr(storage.np, "empty", refuse)
    with raises_rule("HX-01"):
        hd.dequantize(descriptor, buffers)


@covers("HX-02")
def test_zero_strides_over_16384_squared_stay_within_16_mib():
    descriptor, buffers = claimed((16384, 16384), buffer=b"\x05")
    out = np.empty((16384, 16384), np.float32)
    tracemalloc.start()
    try:
        hd.dequantize(descriptor, buffers, out=out)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2 ** 20, f"peak {peak / 2 ** 20:.1f} MiB"
    assert out[0, 0] == 5 and out[-1, -1] == 5 and out[8191, 77] == 5


def test_out_overlapping_a_buffer_is_refused():
    data = np.zeros(64, np.float32)
    raw = data.view(np.uint8)[:16]
    descriptor = TensorDescriptor(type_tag=BY_NAME["int8"].tag, shape=(4, 4), buffers=(BufferHandle(byte_size=16),),
                                  quantization=hd.PerTensorAffine(scale=1.0))
    descriptor = hd.read_tensor_descriptor(hd.write_tensor_descriptor(descriptor))
    with raises_rule("ARGUMENT", path="out") as info:
        hd.dequantize(descriptor, [raw], out=data[:16].reshape(4, 4))
    assert isinstance(info.value, ArgumentError) and "overlaps buffer 0" in str(info.value)
    assert np.array_equal(hd.dequantize(descriptor, [raw], out=np.empty((4, 4), np.float32)), np.zeros((4, 4)))


@pytest.mark.parametrize("bad", [np.empty((4, 4), np.float64), np.empty((4, 4), np.float32)[:, ::1].T.copy().T,
                                 [[0.0] * 4] * 4, np.empty((2, 8), np.float32)])
def test_a_bad_out_is_an_argument_error(bad):
    descriptor, buffers = claimed((4, 4))
    with raises_rule("ARGUMENT", path="out"):
        hd.dequantize(descriptor, buffers, out=bad)


@pytest.mark.parametrize("threads", [0, -1, 1.5, "2", True])
def test_bad_thread_counts_are_argument_errors(threads):
    descriptor, buffers = claimed((4, 4))
    with raises_rule("ARGUMENT", path="threads"):
        hd.dequantize(descriptor, buffers, threads=threads)


@pytest.mark.parametrize("scheme_name", [row.name for row in hd.SCHEMES])
@pytest.mark.parametrize("array", [np.array(["a", "b"]), object(), np.array([1 + 2j]), {"x": 1}])
def test_quantize_refuses_non_numeric_input_with_argument_error(scheme_name, array):
    with raises_rule("ARGUMENT", path="array"):
        tensor_numerics.quantize(array, scheme_name)


def test_workers_needs_no_affinity_call(monkeypatch):
    monkeypatch.delattr(kernels.os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(kernels.os, "cpu_count", lambda: 3)
    monkeypatch.delattr(kernels.os, "process_cpu_count", raising=False)
    assert kernels.workers() == 3


def test_cached_tables_are_read_only():
    for table in (kernels.code_values("int4"), kernels.code_values("uint4", NF4_TABLE),
                  kernels.affine_table("uint8", 0, 255), storage.value_table("float8_e4m3")):
        with pytest.raises(ValueError):
            table[:] = 0


# --- threads and the registry ---------------------------------------------------------------

@pytest.fixture
def private_tags():
    """Tags the registering thread uses; whatever it left registered is removed afterwards."""
    tags = list(range(0xF0, 0xF8))
    yield tags
    for tag in tags:
        hd.unregister_private_scheme(tag)


class Private(hd.SchemeDescriptor):
    scheme_tag: int = 0xF0


@covers("HX-02")
def test_dequantizing_threads_meet_a_registering_thread(private_tags):
    rng = np.random.default_rng(5)
    cases = [tensor_numerics.quantize(rng.standard_normal((64, 96)), name, **opts) for name, opts in (
        ("per_block_affine", {"block_size": 32, "storage": "uint4", "symmetric": False}), ("nf4", {"block_size": 32}),
        ("mxfp", {"block_size": 32, "storage": "float4_e2m1"}), ("per_channel_affine", {"axis": 1}))]
    expected = [hd.dequantize(d, b, threads=1) for d, b in cases]
    stop = threading.Event()
    errors: list[BaseException] = []

    def register() -> None:
        while not stop.is_set():
            for tag in private_tags:
                hd.register_private_scheme(tag, name=f"private {tag}", fields=[cs.Pass], model=Private)
            for tag in private_tags:
                hd.unregister_private_scheme(tag)

    def dequantize(i: int) -> None:
        try:
            for _ in range(15):
                for (d, b), want in zip(cases, expected):
                    assert hd.dequantize(d, b, threads=2).tobytes() == want.tobytes()
                    hd.validate_buffers(d, b)
                    list(hd.SCHEMES)
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    registrar = threading.Thread(target=register)
    registrar.start()
    workers = [threading.Thread(target=dequantize, args=(i,)) for i in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    registrar.join()
    assert not errors, errors[0]


# --- documented calibration choices, pinned --------------------------------------------------

def test_nf4_ties_go_to_the_lower_level():
    midpoints = [(NF4_TABLE[i] + NF4_TABLE[i + 1]) / 2 for i in range(15)]
    block = np.array([[1.0] + midpoints + [0.0] * 16])  # absmax 1: ratio = value, exactly
    _, buffers = tensor_numerics.quantize(block, "nf4", block_size=32)
    codes = storage.unpack_codes(np.frombuffer(buffers[0], np.uint8), 4, 32)
    assert codes[1:16].tolist() == list(range(15))  # the lower of the two levels each time
    assert codes[0] == 15 and codes[16:].tolist() == [7] * 16


@pytest.mark.parametrize("absmax, name, byte", [
    (448.0, "float8_e4m3", 127),          # 448 / 2^0 = 448, the largest: s = 1
    (448.00001, "float8_e4m3", 128),      # just above: s = 2
    (224.0, "float8_e4m3", 126),          # 224 = 448 / 2: s = 1/2
    (6.0, "float4_e2m1", 127), (6.5, "float4_e2m1", 128), (3.0, "float4_e2m1", 126),
    (127.0, "int8", 127), (127.5, "int8", 128), (7.0, "int4", 127), (7.0 * 2 ** -20, "int4", 107),
    (57344.0, "float8_e5m2", 127),        # e5m2's largest finite value, not its infinity
    (1e-45, "float8_e4m3", 1),            # below 2^-126 * 448: the smallest valid byte
])
def test_mxfp_exponent_is_the_smallest_power_of_two(absmax, name, byte):
    block = np.zeros((1, 32))
    block[0, 3] = -absmax
    _, buffers = tensor_numerics.quantize(block, "mxfp", block_size=32, storage=name)
    assert buffers[1][0] == byte


@pytest.mark.parametrize("value, code", [(1e41, "HQ-MX-10"), (448 * 2.0 ** 127, "HQ-MX-11"), (3.4e38, "HQ-MX-11")])
def test_mxfp_quantize_refuses_what_e8m0_or_float32_cannot_hold(value, code):
    with raises_rule(code):
        tensor_numerics.quantize(np.full((2, 32), value), "mxfp", block_size=32)
    descriptor, buffers = tensor_numerics.quantize(np.full((2, 32), 3e38), "mxfp", block_size=32)
    assert np.isfinite(hd.dequantize(descriptor, buffers)).all()


# --- packing geometry, bench options -------------------------------------------------------

@pytest.mark.parametrize("bits, elements, size", [(1, 8, 1), (2, 4, 1), (4, 2, 1), (6, 4, 3), (8, 1, 1),
                                                  (16, 1, 2), (32, 1, 4), (128, 1, 16)])
def test_one_packing_geometry(bits, elements, size):
    unit = storage.packing(bits)
    assert (unit.elements, unit.size) == (elements, size)
    assert unit.bytes(elements * 3 + 1) == 4 * size


@pytest.mark.parametrize("options", [{"size": 100}, {"size": 0}, {"size": "64"}, {"repeat": 0},
                                     {"threads": 0}, {"layouts": ("diagonal",)}])
def test_bench_options_are_validated(options):
    with raises_rule("ARGUMENT"):
        bench.run(**{"size": 64, "repeat": 1, **options})


def test_bench_reports_every_layout_and_case():
    import io

    text = io.StringIO()
    result = bench.run(size=64, repeat=1, out=text, cases=bench.CASES[:2])
    lines = text.getvalue().splitlines()
    for layout in bench.LAYOUTS:
        assert layout in lines
        for case in bench.CASES[:2]:
            figures = result["cases"][(case.label, layout)]
            assert figures["single_to_copy"] > 0 and figures["peak_bytes"] >= 0
    assert sum(line.strip().startswith(bench.CASES[0].label) for line in lines) == 3


def test_quantize_bench_reports_every_case_against_gguf():
    import io

    text = io.StringIO()
    result = bench.quantize_run(size=64, repeat=1, out=text)
    lines = text.getvalue().splitlines()
    assert lines[0].startswith("quantize 64x64 float32") and "threads = 1" in lines[0]
    for case in bench.QUANTIZE_CASES:
        figures = result["cases"][case.label]
        row = next(line for line in lines if line.strip().startswith(case.label))
        assert figures["to_copy"] == figures["seconds"] / result["copyto"] > 0
        if case.gguf:
            assert figures["to_gguf"] == figures["seconds"] / result["gguf"][case.gguf]
            assert row.split()[-2:] == [case.gguf, f"{figures['to_gguf']:.2f}"]
        else:
            assert "to_gguf" not in figures and row.split()[-2:] == ["-", "-"]
    assert [c.gguf for c in bench.QUANTIZE_CASES[:3]] == ["Q4_0", "Q8_0", "Q4_1"]
    with raises_rule("ARGUMENT"):
        bench.quantize_run(size=100, repeat=1)


@pytest.mark.parametrize("shape, tile", [((64,), (16,)), ((16, 24, 32), (4, 8, 16)), ((5, 40), (2, 16)),
                                         ((6, 48), (3, 24)), ((7, 20), (4, 6)), ((5, 192), (2, 64)),
                                         ((3, 5, 128), (2, 3, 64)), ((5, 100), (2, 64))])
def test_tiles_of_every_rank_move_whole_words_correctly(shape, tile):
    """Tile rows of 64 bytes and more are moved as one raw element, rows of whole 8-byte words as
    uint64, the others code by code: each gives the codes of the tiles laid out here (row-major
    grid of row-major tiles, the edges padded)."""
    x = np.random.default_rng(1).standard_normal(shape)
    descriptor, buffers = tensor_numerics.quantize(x, "per_tensor_affine", storage="int8")
    codes = logical_codes(descriptor, buffers)
    grid = [-(-n // t) for n, t in zip(shape, tile)]
    full = np.zeros([g * t for g, t in zip(grid, tile)], np.uint8)
    full[tuple(slice(0, n) for n in shape)] = codes.view(np.uint8)
    r = len(shape)
    split = full.reshape([v for g, t in zip(grid, tile) for v in (g, t)])
    data = np.ascontiguousarray(split.transpose(list(range(0, 2 * r, 2)) + list(range(1, 2 * r, 2)))).tobytes()
    tiled = hd.read_tensor_descriptor(hd.write_tensor_descriptor(descriptor.replace(
        layout=Tiled(tile_shape=tile), buffers=(BufferHandle(byte_size=len(data)),))))
    assert np.array_equal(logical_codes(tiled, [data]).view(np.uint8), codes.view(np.uint8))
    same_bits(hd.dequantize(tiled, [data]), hd.dequantize(descriptor, buffers))


@pytest.mark.parametrize("storage_name", ["float8_e4m3", "int8"])
def test_pair_tables_of_shared_code_tables_are_built_once(storage_name):
    """Two bytes per take read a 65536-row table (512 KiB): every plan over the same shared code
    table gets the same one, so repeated dequantization keeps no table per call (memory bounded
    whatever the number of calls)."""
    x = np.random.default_rng(5).standard_normal((8, 64))
    plans = [tensor_numerics.prepare_dequantize(*tensor_numerics.quantize(x * scale, "mxfp", block_size=32,
                                                                          storage=storage_name)).plan
             for scale in (1, 3)]
    assert plans[0].pairs is plans[1].pairs and not plans[0].pairs.flags.writeable
    assert plans[0].pairs.shape == (65536,) and plans[0].pairs.dtype == np.uint64


@pytest.mark.parametrize("dtype", ["float16", "float32", "uint16", "uint8"])
def test_broadcast_repeat_is_np_repeat(dtype):
    """Threads expand chunk parameters by a broadcast copy (np.repeat holds the GIL): the same
    array, element for element, as np.repeat."""
    values = np.random.default_rng(6).integers(0, 200, 37).astype(dtype)
    for count in (1, 2, 32):
        ours = kernels.broadcast_repeat(values, count)
        assert ours.dtype == values.dtype and np.array_equal(ours, np.repeat(values, count))


@pytest.mark.parametrize("threads", [2, 3])
def test_threads_report_progress_in_order_and_stop_on_a_failure(monkeypatch, threads):
    """Every thread takes the next chunk in turn: progress counts up to the total, called one at a
    time; an exception in any chunk (here the caller's progress function) stops every thread and
    reaches the caller, with no thread left running."""
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 64)
    x = np.random.default_rng(3).standard_normal((37, 101)).astype(np.float32)
    descriptor, buffers = tensor_numerics.quantize(x, "per_block_affine", block_size=32, storage="uint4",
                                                   symmetric=False, scale_type="float16")
    seen: list[tuple[int, int]] = []
    inside = threading.Semaphore(1)

    def record(done: int, total: int) -> None:
        if not inside.acquire(blocking=False):
            raise AssertionError("progress called by two threads at once")
        seen.append((done, total))
        inside.release()

    same_bits(hd.dequantize(descriptor, buffers, threads=threads, progress=record),
              hd.dequantize(descriptor, buffers, threads=1))
    dones = [done for done, _ in seen]
    assert dones == sorted(dones) and len(set(dones)) == len(dones) and len(seen) > 10
    assert seen[-1][0] == seen[-1][1] == 37 * 128  # the padded row-major order: 4 blocks of 32 per row

    class Stop(Exception):
        pass

    calls = []

    def failing(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 5:
            raise Stop

    before = threading.active_count()
    with pytest.raises(Stop):
        hd.dequantize(descriptor, buffers, threads=threads, progress=failing)
    assert threading.active_count() == before
    assert len(calls) <= 5 + threads  # chunks already taken may finish; no thread takes another


def test_an_interrupt_while_waiting_for_the_threads_stops_them(monkeypatch):
    """Ctrl-C reaches the calling thread, possibly while it waits for the others: it still waits
    for them (they take no further chunk), so no thread works on after the interrupt is raised."""
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 64)
    x = np.random.default_rng(4).standard_normal((64, 96)).astype(np.float32)
    descriptor, buffers = tensor_numerics.quantize(x, "nf4", block_size=32)
    taken: list[int] = []
    real_join = threading.Thread.join
    interrupted = []

    def join(self, timeout=None):
        if not interrupted:  # the first wait is interrupted, as by a signal
            interrupted.append(True)
            raise KeyboardInterrupt
        return real_join(self, timeout)

    monkeypatch.setattr(threading.Thread, "join", join)
    def slow_progress(done: int, total: int) -> None:
        taken.append(done)
        time.sleep(0.002)  # chunks outlast the interrupt

    before = threading.active_count()
    with pytest.raises(KeyboardInterrupt):
        hd.dequantize(descriptor, buffers, threads=3, progress=slow_progress)
    seen = len(taken)
    assert threading.active_count() == before  # every helper was waited for, none is still at work
    time.sleep(0.05)
    assert len(taken) == seen and taken == sorted(taken)
