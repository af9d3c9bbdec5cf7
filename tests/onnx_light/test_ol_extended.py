"""OD-02: the original's x86-64 long double steps, on the native and the emulated path.

Every expected value here comes from :class:`X87`, a slow model written for this test from the
rules of OD-02 alone: exact rationals, rounded to a 64-bit significand (ties to even) after each
operation by repeated halving and doubling of an integer, then to double. It shares no code
with ``hurray_decl.onnx_light.extended``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from hurray_decl.onnx_light import (
    QuantizationFormat as F,
    dequantize_value,
    extended,
    make_matmul_nbits_plan,
    make_quantization_plan,
    make_quantization_type,
    quantize_array,
    quantize_with_type,
)
from tests.helpers import covers, raises_rule
from tests.onnx_light.support import edit_blocks, edit_layout

NATIVE_AVAILABLE = extended.native_available()


class X87:
    """Rationals rounded to 64 significant bits at each step, as an x87 with extended precision."""

    @staticmethod
    def r64(v: Fraction) -> Fraction:
        if v == 0:
            return Fraction(0)
        neg = v < 0
        v = -v if neg else v
        e = v.numerator.bit_length() - v.denominator.bit_length() - 63
        v = v / Fraction(2) ** e                       # now within a factor 2 of [2^63, 2^64)
        while v >= 2**64:
            v /= 2
            e += 1
        while v < 2**63:
            v *= 2
            e -= 1
        whole = v.numerator // v.denominator
        rest = v - whole
        if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2 == 1):
            whole += 1
        out = Fraction(whole) * Fraction(2) ** e
        return -out if neg else out

    @classmethod
    def affine_code(cls, x, offset, scale, zp, lo, hi) -> int:
        t = cls.r64(Fraction(x) - Fraction(offset))
        t = cls.r64(t / Fraction(scale))
        t = cls.r64(t + Fraction(zp))
        t = min(max(t, Fraction(lo)), Fraction(hi))
        d = float(t)                                   # round to double, ties to even
        f = np.floor(d)
        fraction = d - f
        return int(f if fraction < 0.5 or (fraction == 0.5 and f % 2 == 0) else f + 1)

    @classmethod
    def dot(cls, row, column) -> Fraction:
        total = Fraction(0)
        for a, b in zip(row, column):
            total = cls.r64(total + cls.r64(Fraction(a) * Fraction(b)))
        return total

    @classmethod
    def distance(cls, residual, entry) -> Fraction:
        total = Fraction(0)
        for r, t in zip(residual, entry):
            d = cls.r64(Fraction(r) - Fraction(t))
            total = cls.r64(total + cls.r64(d * d))
        return total


def exact_code(x, offset, scale, zp, lo, hi) -> int:
    """The withdrawn exact-rational rule, to show the vectors tell the two apart."""
    v = min(max((Fraction(x) - Fraction(offset)) / Fraction(scale) + Fraction(zp), Fraction(lo)), Fraction(hi))
    f = v.numerator // v.denominator
    r = v - f
    return f if r < Fraction(1, 2) or (r == Fraction(1, 2) and f % 2 == 0) else f + 1


@pytest.fixture(params=["native", "emulated"])
def path(request, monkeypatch):
    """Run the codec with numpy.longdouble, then with the double-double emulation."""
    if request.param == "native" and not NATIVE_AVAILABLE:
        pytest.skip("numpy.longdouble is not the x87 format here")
    monkeypatch.setattr(extended, "NATIVE", request.param == "native")
    return request.param


def affine_range(fmt) -> tuple[int, int, float]:
    plan = make_quantization_plan(fmt, 1)
    layout = plan.run(0).layout
    bits = int(layout.bits)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if layout.signed_codes else (0, (1 << bits) - 1)
    return lo, hi, plan.run(0).block(0).zero_point


@covers("OL-NUM-12", "OL-NUM-13")
def test_worked_case_int8_scale_tenth(path):
    x = np.array([0.75])
    plan = edit_blocks(make_quantization_plan(F.INT8, 1), scale=0.1)
    raw = quantize_array(x, plan).raw_data
    assert raw[-1] == 8                                  # the original writes code 8
    assert X87.affine_code(0.75, 0, 0.1, 0, -128, 127) == 8
    assert exact_code(0.75, 0, 0.1, 0, -128, 127) == 7   # exact rationals would say 7


GRID_SCALES = [0.1, 0.3, 1 / 3, 0.7, 0.05]
GRID_OFFSETS = [0.0, 0.3]


def half_steps(lo, hi, scale, offset, zp):
    """Half-step data covering the code range and a little beyond (so clipping runs too)."""
    k = np.arange(2 * (lo - zp) - 6, 2 * (hi - zp) + 7)
    return np.round(k * 0.5 * scale + offset, 12) if scale != 1 else k * 0.5


@pytest.mark.parametrize("fmt", [F.INT8, F.INT4, F.GPTQ])
@covers("OL-NUM-12", "OL-NUM-13")
def test_half_step_grids_follow_the_x87_model(fmt, path):
    lo, hi, zp = affine_range(fmt)
    differs = 0
    for scale in GRID_SCALES:
        for offset in GRID_OFFSETS:
            x = np.concatenate([np.arange(-40, 41) * 0.5, half_steps(lo, hi, scale, offset, zp)])
            plan = edit_blocks(make_quantization_plan(fmt, x.size, x.size), scale=scale, offset=offset)
            got = dequantize_value(quantize_array(x, plan))
            want = [X87.affine_code(v, offset, scale, zp, lo, hi) for v in x]
            expected = (np.array(want, dtype=np.float64) - zp) * scale + offset
            np.testing.assert_array_equal(got, expected, err_msg=f"{fmt.wire_name} scale {scale} offset {offset}")
            differs += sum(w != exact_code(v, offset, scale, zp, lo, hi) for v, w in zip(x, want))
    assert differs > 0   # the grids do reach the cases where the original and exact rationals part


@pytest.mark.parametrize("scale", GRID_SCALES)
@covers("OL-CAL-14", "OL-NUM-12")
def test_calibration_and_type_driven_encode_follow_the_model(scale, path):
    # Explicit scales through the type-driven encode (the Quantize operator's path), and a
    # calibrated block: its codes use the same steps with the calibrated scale.
    lo, hi, _ = affine_range(F.INT8)
    x = np.concatenate([np.arange(-60, 61) * 0.5, [scale * 127]])
    type_ = make_quantization_type(make_quantization_plan(F.INT8, x.size, x.size))
    got = dequantize_value(quantize_with_type(x, type_, scales=np.array([scale])))
    want = np.array([X87.affine_code(v, 0, scale, 0, lo, hi) for v in x], dtype=np.float64) * scale
    np.testing.assert_array_equal(got, want)
    calibrated = quantize_with_type(x, type_)
    cal_scale = float(np.frombuffer(calibrated.raw_data[1:9], "<f8")[0])
    assert cal_scale == max(abs(v) / 128 if v < 0 else v / 127 for v in x)
    want = np.array([X87.affine_code(v, 0, cal_scale, 0, lo, hi) for v in x], dtype=np.float64) * cal_scale
    np.testing.assert_array_equal(dequantize_value(calibrated), want)


@pytest.mark.parametrize("bits_fmt", [(4, F.ORT_MATMULNBITS_INT4), (8, F.ORT_MATMULNBITS_INT8)])
@covers("OL-ORT-15")
def test_ort_codes_follow_the_model(bits_fmt, path):
    bits, fmt = bits_fmt
    k = 64
    x = (np.arange(k * 2).reshape(k, 2) % 33 - 16).astype(np.float32) * np.float32(0.5)
    plan = make_matmul_nbits_plan(fmt, k, 2, 16)
    scales = [0.1, 0.3, 1 / 3, 0.7] * 2
    plan = edit_blocks(plan, scale=scales)
    got = dequantize_value(quantize_array(x, plan))
    zp = 1 << (bits - 1)
    for col in range(2):
        for row in range(k):
            s = float(np.float32(scales[col * 4 + row // 16]))        # the scale rounded to FLOAT
            code = X87.affine_code(float(x[row, col]), 0, s, zp, 0, (1 << bits) - 1)
            assert got[row, col] == np.float32((code - zp) * s), (row, col)


def near_cancelling_rows(rng, count):
    big = rng.integers(1, 1 << 12, size=count) * 2.0 ** rng.integers(50, 70, size=count)
    small = rng.integers(-64, 64, size=(count, 2)) * 0.125
    return np.stack([big, small[:, 0], -big, small[:, 1]], axis=1)


@covers("OL-NUM-09", "OL-NUM-23")
def test_near_cancelling_transform_rows(path):
    rng = np.random.default_rng(12)
    rows = np.concatenate([[[1e20, 1.0, -1e20, 1.0]], near_cancelling_rows(rng, 40)])
    h = np.array([[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]]) * 0.5
    rot = np.array([[0.6, 0.8, 0, 0], [-0.8, 0.6, 0, 0], [0, 0, 0.28, 0.96], [0, 0, -0.96, 0.28]])
    differs = 0
    for forward, inverse in ((h, h), (rot, rot.T)):
        plan = edit_layout(make_quantization_plan(F.TILED_FLOAT, rows.size, rows.size), cast_type=11)
        plan.transform_size = 4
        plan.forward = forward.ravel().tolist()
        plan.inverse = inverse.ravel().tolist()
        encoded = quantize_array(rows.ravel(), plan)
        stored = np.frombuffer(encoded.raw_data[-8 * rows.size:], "<f8").reshape(rows.shape)
        want = np.array([[float(X87.dot(r, forward[:, j])) for j in range(4)] for r in rows])
        np.testing.assert_array_equal(stored, want)
        back = np.array([[float(X87.dot(r, inverse[:, j])) for j in range(4)] for r in stored])
        np.testing.assert_array_equal(dequantize_value(encoded).reshape(rows.shape), back)
        exact = np.array([[float(sum(Fraction(a) * Fraction(b) for a, b in zip(r, forward[:, j])))
                           for j in range(4)] for r in rows])
        differs += int((exact != want).sum())
    assert stored.shape == rows.shape and differs > 0   # e.g. [1e20, 1, -1e20, 1] . h[:, 0] is 0.5, not 1


@covers("OL-PLAN-34")
def test_inverse_check_uses_the_long_double_tolerance(path):
    # off-diagonal entry a + b sits next to 1e-6L, which is not the double 1e-6
    tol = X87.r64(Fraction(1, 10**6))
    a = 1e-6
    verdicts = {}
    for b in (float(tol - Fraction(a)) - 4e-25, float(tol - Fraction(a)) + 4e-25):
        forward = np.array([[1.0, a], [0.0, 1.0]])
        inverse = np.array([[1.0, b], [0.0, 1.0]])
        ok = abs(X87.r64(X87.dot(forward[0], inverse[:, 1]))) <= tol
        verdicts[b] = ok
        plan = edit_layout(make_quantization_plan(F.TILED_FLOAT, 2, 2), cast_type=11)
        plan.transform_size = 2
        plan.forward = forward.ravel().tolist()
        plan.inverse = inverse.ravel().tolist()
        if ok:
            quantize_array(np.zeros(2), plan)
        else:
            with raises_rule("OL-PLAN-34"):
                quantize_array(np.zeros(2), plan)
    assert sorted(verdicts.values()) == [False, True]


@covers("OL-NUM-15")
def test_codebook_distances_follow_the_model(path):
    rng = np.random.default_rng(3)
    entries, vector = 16, 4
    table = np.round(rng.standard_normal(entries * vector) * 64) / 64
    plan = make_quantization_plan(F.STQ1_0, 64 * vector)
    plan = edit_layout(plan, entries=entries, bits=4)
    plan = edit_blocks(plan, codebook=table.tolist())
    # residuals on a fine grid near the midpoints between entries, plus decimal noise
    picks = table.reshape(entries, vector)[rng.integers(0, entries, size=(64, 2))]
    x = (picks[:, 0] + picks[:, 1]) / 2 + rng.integers(-2, 3, size=(64, vector)) * 2.0**-52
    got = dequantize_value(quantize_array(x.ravel(), plan)).reshape(64, vector)
    book = table.reshape(entries, vector)
    for row, value in zip(x, got):
        errors = [X87.distance(row, book[e]) for e in range(entries)]
        best = min(range(entries), key=lambda e: (errors[e], e))
        np.testing.assert_array_equal(value, book[best])


@pytest.mark.skipif(not NATIVE_AVAILABLE, reason="numpy.longdouble is not the x87 format here")
def test_emulation_equals_native_on_hostile_data():
    rng = np.random.default_rng(8)
    raw = rng.integers(0, 2**64, size=6000, dtype=np.uint64).view(np.float64)
    raw = raw[np.isfinite(raw)][:4000]
    grid = (rng.integers(-2**20, 2**20, size=4000) * 2.0**-20).reshape(4, -1)
    x = np.concatenate([raw.reshape(4, -1), grid, grid * 0.1 + 2.0**-64])
    scale = np.abs(np.concatenate([raw[:4], [0.1, 0.3, 1 / 3, 0.7], [0.05, 1e-300, 1e300, 3.0]]))
    scale[~(scale > 0)] = 1.0
    offset = np.concatenate([[0, 0.3, -1e308, 1e-310], raw[4:8], [2.0**-64, 0, 0, 1]])
    zp = np.concatenate([[0, 3, -7, 8] * 3]).astype(np.float64)
    for lo, hi in ((-128, 127), (-2.0**80, 2.0**80)):
        native = extended.affine_values(x, offset, scale, zp, lo, hi, emulate=False, shortcut=False)
        emulated = extended.affine_values(x, offset, scale, zp, lo, hi, emulate=True, shortcut=False)
        np.testing.assert_array_equal(native, emulated)
        # the float64 shortcut keeps only values whose code cannot differ
        shortcut = extended.affine_values(x, offset, scale, zp, lo, hi)
        np.testing.assert_array_equal(np.rint(shortcut), np.rint(native))
    many = np.round(rng.standard_normal((8, 50000)) * 1000) / 1000
    args = (np.array([0, 0.3, 0, 0.1, 0, 0, 0.7, 0]), np.array([0.1, 0.3, 1 / 3, 0.7, 0.05, 1e-3, 0.01, 2.0]),
            np.array([0, 8, 0, 3, 128, 0, 0, 0.0]), -32768, 32767)
    np.testing.assert_array_equal(np.rint(extended.affine_values(many, *args)),
                                  np.rint(extended.affine_values(many, *args, emulate=False, shortcut=False)))
    rows = np.concatenate([near_cancelling_rows(rng, 200), raw[:800].reshape(-1, 4) % 1e150,
                           rng.standard_normal((200, 4)) * 1e300])
    matrix = np.concatenate([rng.standard_normal((2, 4)), raw[800:808].reshape(2, 4) % 1e10])
    native = extended.row_products(rows, matrix, emulate=False)
    emulated = extended.row_products(rows, matrix, emulate=True)
    np.testing.assert_array_equal(native, emulated)
    residual = np.round(rng.standard_normal((3, 500, 4)) * 32) / 32 + rng.integers(-1, 2, (3, 500, 4)) * 2.0**-58
    table = np.round(rng.standard_normal((3, 16, 4)) * 8) / 8
    mask = np.ones((500, 4), dtype=bool)
    mask[-1, 2:] = False
    np.testing.assert_array_equal(extended.nearest_entries(residual, table, mask, emulate=False),
                                  extended.nearest_entries(residual, table, mask, emulate=True))


def test_emulation_handles_ranges_the_double_double_cannot_hold():
    # (x - offset) overflows double but not 80-bit; the quotient comes back into range.
    x = np.array([[1.7e308]])
    got = extended.affine_values(x, np.array([-1.7e308]), np.array([1e305]), np.zeros(1), -32768, 32767,
                                 emulate=True)
    assert got[0, 0] == float(X87.r64(X87.r64(Fraction(1.7e308) + Fraction(1.7e308)) / Fraction(1e305)))
    # products beyond 2^1024 that cancel: finite in the original
    rows = np.array([[1e300, 1e300]])
    matrix = np.array([[1e10], [-1e10]])
    assert extended.row_products(rows, matrix, emulate=True)[0, 0] == 0.0
    assert extended.row_products(np.array([[1e300, 0.0]]), matrix, emulate=True)[0, 0] == np.inf


def test_quantize_operator_follows_the_model(path):
    onnx = pytest.importorskip("onnx")
    from onnx import helper

    from hurray_decl.onnx_light import TypeProto, quantization_operators

    x = np.array([0.75, -0.25, 1.25, 2.75, 0.05], np.float64)
    type_ = make_quantization_type(make_quantization_plan(F.INT8, x.size, x.size))
    attr = onnx.TypeProto.FromString(TypeProto(struct_type=type_).SerializeToString())
    node = helper.make_node("Quantize", ["X", "S"], ["Q"], domain="ai.rt", type=attr)
    ops = {cls.__name__: cls for cls in quantization_operators(None)}
    params = {"opsets": {"": 21, "ai.rt": 1}, "new_ops": {}, "log": lambda *a: None, "verbose": 0}
    (value,) = ops["Quantize"](node, params).run(x, np.array([0.1]))
    got = dequantize_value(value)
    want = np.array([X87.affine_code(v, 0, 0.1, 0, -128, 127) for v in x], dtype=np.float64) * 0.1
    np.testing.assert_array_equal(got, want)
    assert X87.affine_code(0.75, 0, 0.1, 0, -128, 127) == 8
