"""Exported MatMulNBits inputs run in onnxruntime's CPU provider and match A @ dequantize(W).

The matrix: bits 2, 4 and 8; block sizes 16, 32, 64 and 128; implicit, packed and floating zero
points; K not a multiple of the block size. ORT's CPU provider has no 8-bit path with floating
zero points: that cell asserts that ORT still refuses it.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper

from hurray_decl.onnx_light import (
    QuantizationFormat as F,
    dequantize_value,
    export_matmul_nbits_inputs,
    make_matmul_nbits_plan,
    quantize_array,
)
from tests.helpers import covers
from tests.onnx_light.support import edit_blocks

ORT = {2: F.ORT_MATMULNBITS_INT2, 4: F.ORT_MATMULNBITS_INT4, 8: F.ORT_MATMULNBITS_INT8}
N, M = 5, 3


def _model(inputs, k):
    initializers = [inputs.weights, inputs.scales]
    names = ["A", inputs.weights.name, inputs.scales.name]
    if inputs.zero_points is not None:
        initializers.append(inputs.zero_points)
        names.append(inputs.zero_points.name)
    node = helper.make_node("MatMulNBits", names, ["Y"], domain="com.microsoft", K=inputs.k, N=inputs.n,
                            bits=inputs.bits, block_size=inputs.block_size)
    graph = helper.make_graph(
        [node], "matmul_nbits", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [M, k])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [M, inputs.n])], initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("com.microsoft", 1)])
    onnx.checker.check_model(model)
    return model


def _session(model):
    options = ort.SessionOptions()
    options.log_severity_level = 4
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _encoded(bits, block, zero_points, seed):
    rng = np.random.default_rng(seed)
    k = 2 * block + 5                      # never a multiple of the block size
    groups = -(-k // block)
    blocks = N * groups
    scales = rng.uniform(0.01, 0.1, blocks) * rng.choice([-1, 1], blocks)
    hi = (1 << bits) - 1
    if zero_points == "implicit":
        zps = [1 << (bits - 1)] * blocks
    elif zero_points == "packed":
        zps = rng.integers(0, hi + 1, blocks).tolist()
        zps[0] = 0                                  # at least one away from the midpoint
    else:
        zps = (rng.integers(0, hi, blocks) + 0.5).tolist()
    plan = edit_blocks(make_matmul_nbits_plan(ORT[bits], k, N, block), scale=scales.tolist(), zero_point=zps)
    w = rng.uniform(-0.05 * hi, 0.05 * hi, (k, N)).astype(np.float32)
    return quantize_array(w, plan), k, rng


@covers("OL-ORT-30")
@pytest.mark.parametrize("zero_points", ["implicit", "packed", "float"])
@pytest.mark.parametrize("block", [16, 32, 64, 128])
@pytest.mark.parametrize("bits", [2, 4, 8])
def test_matmul_nbits_in_onnxruntime(bits, block, zero_points):
    encoded, k, rng = _encoded(bits, block, zero_points, seed=bits * 1000 + block + len(zero_points))
    inputs = export_matmul_nbits_inputs(encoded)
    assert (inputs.zero_points is None) == (zero_points == "implicit")
    if inputs.zero_points is not None:
        assert (inputs.zero_points.data_type == TensorProto.UINT8) == (zero_points == "packed")
    model = _model(inputs, k)
    if bits == 8 and zero_points == "float":
        # ORT's CPU provider lacks the 8-bit unpacked-compute path; the codec still supports it (OD-09).
        with pytest.raises(ort.capi.onnxruntime_pybind11_state.Fail, match="8-bit weights with floating-point zero"):
            _session(model)
        return
    a = rng.standard_normal((M, k)).astype(np.float32)
    w = dequantize_value(encoded).astype(np.float64)
    (y,) = _session(model).run(None, {"A": a})
    expected = a.astype(np.float64) @ w
    bound = (np.abs(a).astype(np.float64) @ np.abs(w)) * 1e-6 + 1e-7
    assert np.all(np.abs(y - expected) <= bound), np.max(np.abs(y - expected) - bound)


@pytest.mark.parametrize("bits, zero_points", [(4, "implicit"), (4, "packed"), (4, "float"), (8, "implicit"),
                                               (8, "packed")])
def test_float16_matrices_in_onnxruntime(bits, zero_points):
    rng = np.random.default_rng(bits)
    k, block = 45, 16
    zps = {"implicit": None, "packed": 3, "float": 3.5}[zero_points]
    plan = make_matmul_nbits_plan(ORT[bits], k, N, block)
    if zps is not None:
        edit_blocks(plan, zero_point=zps, scale=0.0625)
    encoded = quantize_array(rng.uniform(-1, 1, (k, N)).astype(np.float16), plan)
    inputs = export_matmul_nbits_inputs(encoded)
    initializers = [t for t in (inputs.weights, inputs.scales, inputs.zero_points) if t is not None]
    node = helper.make_node("MatMulNBits", ["A"] + [t.name for t in initializers], ["Y"], domain="com.microsoft",
                            K=k, N=N, bits=bits, block_size=block)
    graph = helper.make_graph([node], "f16", [helper.make_tensor_value_info("A", TensorProto.FLOAT16, [M, k])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT16, [M, N])],
                              initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("com.microsoft", 1)])
    a = rng.standard_normal((M, k)).astype(np.float16)
    (y,) = _session(model).run(None, {"A": a})
    w = dequantize_value(encoded).astype(np.float64)
    expected = a.astype(np.float64) @ w
    bound = (np.abs(a).astype(np.float64) @ np.abs(w)) * 2e-3 + 2e-3   # float16 rounding and accumulation
    assert np.all(np.abs(y - expected) <= bound), np.max(np.abs(y - expected) - bound)
