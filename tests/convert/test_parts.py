"""BlockParts checks its geometry on creation, and the public GGUF -> Hurray -> ORT path runs in onnxruntime."""

from __future__ import annotations

import gguf
import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl import onnx_light as ol
from hurray_decl.convert import BlockParts, hurray as hurray_parts, portable
from hurray_decl.convert.ort import matmul_nbits_model, tensor_to_matmul_nbits, to_matmul_nbits
from tests.helpers import raises_rule

Q = gguf.GGMLQuantizationType


def parts_6x64(**changes) -> BlockParts:
    rng = np.random.default_rng(0)
    fields = dict(codes=rng.integers(-8, 8, (6, 64)), storage="int4", axis=1, block_size=32,
                  scales=np.arange(1, 13, dtype=np.float16).reshape(6, 2), scale_type="float16", zero_points=None)
    fields.update(changes)
    return BlockParts(**fields)


def test_scales_in_the_grid_shape_are_kept_in_block_order():
    parts = parts_6x64()
    assert parts.grid_shape == (6, 2)
    assert np.array_equal(parts.scales, np.arange(1, 13))              # b = row * 2 + block along the row
    assert np.array_equal(parts.grid(parts.scales), np.arange(1, 13).reshape(6, 2))
    along_rows = BlockParts(np.zeros((64, 6), int), "int4", 0, 32, np.arange(1, 13, dtype=np.float16).reshape(2, 6),
                            "float16")
    assert np.array_equal(along_rows.scales, np.arange(1, 13).reshape(2, 6).T.ravel())  # b = column * 2 + block


def test_scales_in_the_wrong_order_are_refused():
    grid = np.arange(1, 13, dtype=np.float16).reshape(6, 2)
    with raises_rule("HQ-PB-15", path="scales") as info:     # the (blocks, rows) transpose of the grid
        parts_6x64(scales=grid.T)
    assert "[6, 2]" in str(info.value)
    with raises_rule("HQ-PB-15", path="scales") as info:     # flat: two readings are possible
        parts_6x64(scales=grid.ravel())
    assert "from_block_order" in str(info.value)
    with raises_rule("HQ-PB-15", path="zero_points"):
        parts_6x64(storage="uint4", codes=np.zeros((6, 64), int), zero_points=np.zeros((2, 6), int))
    flat = BlockParts.from_block_order(np.zeros((6, 64), int), "int4", 1, 32, grid.ravel(), "float16")
    assert np.array_equal(flat.scales, parts_6x64().scales)
    single = BlockParts(np.zeros((1, 64), int), "int4", 1, 32, np.ones(2, np.float16), "float16")  # one reading only
    assert single.grid_shape == (1, 2)


@pytest.mark.parametrize("changes, code", [
    (dict(storage="int3"), "HQ-PB-14"),
    (dict(axis=2), "HQ-PB-02"),
    (dict(block_size=24), "HQ-PB-03"),
    (dict(block_size=1), "HQ-PB-04"),
    (dict(scale_type="float64"), "HQ-PB-08"),
    (dict(codes=np.full((6, 64), 8)), "ARGUMENT"),                                  # past int4
    (dict(codes=np.zeros((6, 64)) + 0.5), "ARGUMENT"),                              # not integers
    (dict(scales=np.full((6, 2), 0.1), scale_type="float16"), "ARGUMENT"),          # would round
    (dict(storage="uint4", codes=np.zeros((6, 64), int), zero_points=np.full((6, 2), 16)), "HQ-PB-22"),
])
def test_unusable_parts_are_refused(changes, code):
    with raises_rule(code):
        parts_6x64(**changes)


def test_transposed_parts_hold_the_transposed_tensor():
    rng = np.random.default_rng(3)
    parts = BlockParts(rng.integers(0, 16, (5, 64)), "uint4", 1, 16, rng.uniform(0.5, 2, (5, 4)).astype(np.float32),
                       "float32", rng.integers(0, 16, (5, 4)))
    flipped = parts.transposed()
    assert (flipped.axis, flipped.codes.shape, flipped.grid_shape) == (0, (64, 5), (4, 5))
    assert np.array_equal(hd.dequantize(*hurray_parts.from_block_parts(flipped)),
                          hd.dequantize(*hurray_parts.from_block_parts(parts)).T)
    assert np.array_equal(flipped.transposed().scales, parts.scales)


def test_from_gguf_file_runs_in_onnxruntime_through_public_functions(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(4)
    weight = rng.standard_normal((40, 96)).astype(np.float32)   # (N, K): blocks along K, as GGUF stores it
    path = tmp_path / "w.gguf"
    writer = gguf.GGUFWriter(str(path), "test")
    for kind in (Q.Q4_0, Q.Q8_0):
        writer.add_tensor(kind.name, gguf.quants.quantize(weight, kind), raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    a = rng.standard_normal((7, 96)).astype(np.float32)
    for kind in (Q.Q4_0, Q.Q8_0):
        descriptor, buffers = hd.from_gguf_file(path, kind.name)
        value = tensor_to_matmul_nbits(descriptor, buffers, scale_type="float32")
        session = ort.InferenceSession(matmul_nbits_model([("w", value)]).SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        (y,) = session.run(None, {"w.A": a})
        expected = a.astype(np.float64) @ hd.dequantize(descriptor, buffers).astype(np.float64).T
        np.testing.assert_allclose(y, expected, rtol=0, atol=1e-4 * np.abs(expected).max())
        if kind == Q.Q4_0:  # the same through onnx-light's own export, the parts transposed explicitly
            parts = hurray_parts.block_parts(descriptor, buffers)
            with raises_rule("OL-ORT-07"):  # (N, K) along K is W, not MatMulNBits' B
                portable.from_block_parts(parts, ol.QuantizationFormat.ORT_MATMULNBITS_INT4)
            direct = portable.from_block_parts(parts.transposed(), ol.QuantizationFormat.ORT_MATMULNBITS_INT4)
            expected16 = hd.dequantize(descriptor, buffers).T.astype(np.float16)  # an f16 matrix: one rounding
            assert np.array_equal(ol.dequantize_value(direct), expected16)
    with raises_rule("ARGUMENT", path="parts"):
        to_matmul_nbits((descriptor, buffers))
