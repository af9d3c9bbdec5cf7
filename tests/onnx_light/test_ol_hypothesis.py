"""Property tests: random plans round-trip, re-encode to identical bytes, and mutated values
raise only HurrayDeclError.

Random plans mix run layouts and bit widths, permutations, power-of-two signed-permutation
transforms, outliers, empty and scalar tensors and all four source dtypes. Values and
parameters are drawn on dyadic grids small enough to be exact in every source dtype, so the
reference quantizer in support.py gives the exact expected output.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from hurray_decl.errors import HurrayDeclError
from hurray_decl.onnx_light import (
    PROFILES,
    EncodedValueProto,
    QuantizationBlockParameters,
    QuantizationFormat as F,
    QuantizationPlan,
    QuantizationRun,
    StructTypeProto,
    decode_plan,
    dequantize_value,
    quantize_array,
)
from hurray_decl.onnx_light.plan import default_layout
from tests.onnx_light.support import reference

DTYPES = [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]
# Largest affine width whose reconstructions stay exact (and finite) in each dtype.
MAX_BITS = {"float32": 16, "float64": 16, "float16": 9, "bfloat16": 6}
PORTABLE = [f for f in F if f.portable]


@st.composite
def shapes(draw):
    kind = draw(st.sampled_from(["scalar", "empty", "vector", "matrix"]))
    if kind == "scalar":
        return ()
    if kind == "empty":
        return draw(st.sampled_from([(0,), (2, 0), (0, 3)]))
    if kind == "vector":
        return (draw(st.integers(1, 24)),)
    return (draw(st.integers(1, 5)), draw(st.integers(1, 5)))


@st.composite
def run_layouts(draw, fmt, count, dtype):
    """A layout for ``count``-element blocks and a function drawing one block's parameters."""
    layout = default_layout(fmt, count)
    d = PROFILES[fmt]
    method = int(layout.method)
    if method == 0:
        layout.bits = draw(st.integers(1, MAX_BITS[dtype.name]))
        layout.signed_codes = draw(st.integers(0, 1))
        lo, hi = ((-(1 << (layout.bits - 1)), (1 << (layout.bits - 1)) - 1) if layout.signed_codes
                  else (0, (1 << layout.bits) - 1))

        def block(draw):
            scale = 2.0 ** draw(st.integers(-3, 2))
            return QuantizationBlockParameters(scale, float(draw(st.integers(lo, hi))),
                                               draw(st.integers(-4, 4)) * scale, [])
    elif method == 2:
        layout.cast_type = draw(st.sampled_from([1, 11, 10, 16]))

        def block(draw):
            return QuantizationBlockParameters(2.0 ** draw(st.integers(-2, 2)), 0.0, 0.0, [])
    elif d.table:
        def block(draw):
            return QuantizationBlockParameters(2.0 ** draw(st.integers(-3, 2)), 0.0, 0.0, list(d.table_values))
    else:
        layout.books = 2 if fmt == F.AQLM else 1
        layout.vector_size = draw(st.integers(1, 4))
        layout.bits = draw(st.integers(1, 4))
        layout.entries = draw(st.integers(1, 1 << layout.bits))

        def block(draw):
            entries, vector = layout.entries, layout.vector_size
            first = draw(st.lists(st.integers(-24, 24), min_size=entries * vector, max_size=entries * vector))
            if layout.books == 1:
                table = [k / 4 for k in first]
            else:
                # additive: book 0 on distinct integers per component, book 1 strictly inside half a step
                base = draw(st.lists(st.integers(-24, 24), min_size=entries, max_size=entries, unique=True))
                fine = draw(st.lists(st.integers(-3, 3), min_size=entries * vector, max_size=entries * vector))
                table = [float(b) for b in base for _ in range(vector)] + [k / 8 for k in fine]
            return QuantizationBlockParameters(2.0 ** draw(st.integers(-2, 1)), 0.0, 0.0, table)
    return layout, block


@st.composite
def cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    fmt = draw(st.sampled_from(PORTABLE))
    shape = draw(shapes())
    n_elements = int(np.prod(shape)) if shape else 1
    plan = QuantizationPlan(fmt)
    runs = []
    left = n_elements
    while left:
        count = draw(st.integers(1, left))
        blocks = draw(st.integers(1, left // count))
        layout, block = draw(run_layouts(fmt, count, dtype))
        runs.append(QuantizationRun(layout, [block(draw) for _ in range(blocks)]))
        left -= count * blocks
    plan.runs = runs
    if n_elements and draw(st.booleans()):
        plan.permutation = draw(st.permutations(range(n_elements)))
    # An outlier inside a vector-codebook vector changes that vector's other components on the
    # way back (the restored value replaces a decoded one), so re-encoding could pick another
    # entry; outliers are drawn only for scalar layouts.
    scalar = all(r.layout.vector_size == 1 for r in runs)
    if n_elements and scalar and draw(st.booleans()):
        plan.outliers = draw(st.lists(st.integers(0, n_elements - 1), unique=True, max_size=3))
    if PROFILES[fmt].needs_transform or draw(st.booleans()):
        n = draw(st.sampled_from([k for k in (1, 2, 3, 4) if n_elements % k == 0]))
        order = draw(st.permutations(range(n)))
        signs = draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=n, max_size=n))
        power = 2.0 ** draw(st.integers(-1, 1))
        matrix = np.zeros((n, n))
        matrix[np.arange(n), order] = np.array(signs) * power
        plan.transform_size = n
        plan.forward = matrix.ravel().tolist()
        plan.inverse = np.linalg.inv(matrix).ravel().tolist()
    values = draw(st.lists(st.integers(-160, 160), min_size=n_elements, max_size=n_elements))
    x = (np.array(values, dtype=np.float64) / 16).astype(dtype).reshape(shape)
    return x, plan


@given(cases())
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
def test_random_plans_roundtrip_and_reencode(case):
    x, plan = case
    try:
        encoded = quantize_array(x, plan)
    except HurrayDeclError as err:
        # A cast of a tiny block can only fail on overflow, which these ranges never reach.
        raise AssertionError(f"valid random plan refused: {err}") from err
    parsed = EncodedValueProto.FromString(encoded.SerializeToString())
    decoded = dequantize_value(parsed)
    assert decoded.dtype == x.dtype and decoded.shape == x.shape
    expected = reference(x, plan).astype(x.dtype)
    np.testing.assert_array_equal(decoded.astype(np.float64), expected.astype(np.float64))
    again = quantize_array(decoded, decode_plan(parsed))
    assert again.struct_type.SerializeToString() == encoded.struct_type.SerializeToString()
    assert again.raw_data == encoded.raw_data
    np.testing.assert_array_equal(dequantize_value(again).astype(np.float64), decoded.astype(np.float64))


@given(cases(), st.data())
def test_mutated_payloads_raise_only_hurray_errors(case, data):
    x, plan = case
    encoded = quantize_array(x, plan)
    raw = bytearray(encoded.raw_data)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))] + bytes(data.draw(st.integers(0, 9)))
    mutated = EncodedValueProto()
    mutated.CopyFrom(encoded)
    mutated.raw_data = bytes(raw)
    try:
        dequantize_value(mutated)
    except HurrayDeclError:
        pass


@given(cases(), st.data())
def test_mutated_descriptors_raise_only_hurray_errors(case, data):
    x, plan = case
    encoded = quantize_array(x, plan)
    wire = bytearray(encoded.struct_type.SerializeToString())
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(wire) - 1))
        wire[at] = data.draw(st.integers(0, 255))
    try:
        struct_type = StructTypeProto.FromString(bytes(wire))
    except DecodeError:  # protobuf refuses the bytes before our decoder sees them
        assume(False)
        return
    mutated = EncodedValueProto()
    mutated.CopyFrom(encoded)
    mutated.struct_type.CopyFrom(struct_type)
    try:
        dequantize_value(mutated)
    except HurrayDeclError:
        pass
