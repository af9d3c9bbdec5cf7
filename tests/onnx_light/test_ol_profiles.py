"""The profile catalogue: order, names, defaults and fixed tables (OL-PROF)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hurray_decl.onnx_light import (
    PROFILES,
    QuantizationFormat as F,
    dequantize_value,
    make_quantization_plan,
    parse_quantization_format,
    quantization_format_name,
    quantization_formats,
    quantize_array,
)
from hurray_decl.onnx_light.profiles import FIXED_TABLES
from tests.helpers import covers, raises_rule

ORDER = (
    "int8 int8_per_channel int4 gptq awq eetq matmulnbits q2_k q3_k q4_k q5_k q6_k hqq exl2 exl3 nf4 "
    "iq4_nl binary ternary tq1_0 tq2_0 bitnet paretoq tequila stq1_0 iq1_s aqlm quip_sharp spqr "
    "squeezellm log fp6_llm fp8_e4m3 mxfp4 mxfp6 nvfp4 quarot smoothquant tiled_float column_major "
    "ort_matmulnbits_int2 ort_matmulnbits_int4 ort_matmulnbits_int8"
).split()


def tail(fmt: F) -> tuple[int, ...]:
    """The header after count, from a fresh plan."""
    return make_quantization_plan(fmt, 4).run(0).layout.header()[1:]


@covers("OL-PROF-01")
def test_order_and_names():
    formats = quantization_formats()
    assert len(formats) == 43
    assert [quantization_format_name(f) for f in formats] == ORDER
    assert [int(f) for f in formats] == list(range(43))
    assert all(f.name == name.upper() for f, name in zip(formats, ORDER))
    assert [f.portable for f in formats] == [True] * 40 + [False] * 3
    for name in ORDER:
        assert quantization_format_name(parse_quantization_format(name)) == name


@pytest.mark.parametrize("name", ["INT4", "QUAROT", "", "unknown", "int4 ", "Int8", None, 2])
def test_parse_rejects(name):
    with raises_rule("OL-PROF-02"):
        parse_quantization_format(name)


def test_unknown_name_in_layout_is_refused():
    encoded = quantize_array(np.zeros(2, np.float32), make_quantization_plan(F.INT4, 2))
    encoded.struct_type.name = "onnx_light.quantization.v1/INT4"
    with raises_rule("OL-PROF-02"):
        dequantize_value(encoded)


def test_enum_value_43_refused_at_encoding():
    plan = make_quantization_plan(F.INT4, 2)
    object.__setattr__(plan, "_format", 43)  # only reachable by bypassing the property
    with raises_rule("OL-PROF-03"):
        quantize_array(np.zeros(2, np.float32), plan)


@pytest.mark.parametrize("bad", ["int4", 2, 2.0, None])
def test_format_accepts_only_the_enum(bad):
    with raises_rule("OL-PROF-04") as info:
        make_quantization_plan(bad, 4)
    assert isinstance(info.value, TypeError)
    plan = make_quantization_plan(F.INT4, 4)
    with raises_rule("OL-PROF-04") as info:
        plan.format = bad
    assert isinstance(info.value, TypeError)
    with raises_rule("OL-PROF-04"):
        quantization_format_name(bad)


@covers("OL-PROF-05")
def test_baseline():
    plan = make_quantization_plan(F.INT4, 300)
    assert [len(r) for r in plan.runs] == [2, 1]
    assert plan.run(0).layout.count == 128 and plan.run(1).layout.count == 44
    block = plan.run(0).block(0)
    assert (block.scale, block.zero_point, block.offset, block.codebook) == (1.0, 0.0, 0.0, [])
    for fmt in quantization_formats()[:40]:
        d = PROFILES[fmt]
        if d.method == 0:
            assert tail(fmt)[2:] == (1, 1, 0, 1, 0, 10) or tail(fmt)[2] == 0
    assert plan.matrix_shape == []


@covers("OL-PROF-06")
def test_int8_family():
    for fmt in (F.INT8, F.INT8_PER_CHANNEL, F.EETQ):
        assert tail(fmt) == (0, 8, 1, 1, 0, 1, 0, 10)


@covers("OL-PROF-07")
def test_int4_family():
    for fmt in (F.INT4, F.HQQ, F.EXL2, F.EXL3, F.SPQR):
        assert tail(fmt) == (0, 4, 1, 1, 0, 1, 0, 10)


@covers("OL-PROF-08")
def test_unsigned_int4_family():
    for fmt in (F.GPTQ, F.AWQ, F.MATMULNBITS):
        assert tail(fmt) == (0, 4, 0, 1, 0, 1, 0, 10)
        assert make_quantization_plan(fmt, 4).run(0).block(0).zero_point == 8


@covers("OL-PROF-09")
def test_k_quants():
    for fmt, bits in zip((F.Q2_K, F.Q3_K, F.Q4_K, F.Q5_K, F.Q6_K), range(2, 7)):
        assert tail(fmt) == (0, bits, 1, 1, 0, 1, 0, 10)


@covers("OL-PROF-10", "OL-PROF-11")
def test_transform_profiles():
    assert tail(F.QUAROT) == (0, 4, 1, 1, 0, 1, 0, 10) and PROFILES[F.QUAROT].needs_transform
    assert tail(F.SMOOTHQUANT) == (0, 8, 1, 1, 0, 1, 0, 10) and PROFILES[F.SMOOTHQUANT].needs_transform
    assert [f for f in F if PROFILES[f].needs_transform] == [F.QUIP_SHARP, F.QUAROT, F.SMOOTHQUANT]


@covers("OL-PROF-12")
def test_nf4_table():
    expected = bytes.fromhex(
        "000000000000F0BF" "000000203647E6BF" "0000000066CDE0BF" "000000005446D9BF"
        "000000A04934D2BF" "000000E0A7A6C7BF" "000000200E4FB7BF" "0000000000000000" "000000E05F5FB43F"
        "000000605C99C43F" "000000A09B80CF3F" "0000004067A0D53F" "000000009734DC3F" "00000060F500E23F"
        "000000607622E73F" "000000000000F03F"
    )
    assert np.array(FIXED_TABLES["NF4"], dtype="<f8").tobytes() == expected
    assert tail(F.NF4) == (1, 4, 0, 1, 16, 1, 0, 10)
    assert make_quantization_plan(F.NF4, 2).run(0).block(0).codebook == list(FIXED_TABLES["NF4"])


@covers("OL-PROF-13")
def test_iq4_nl_table():
    assert FIXED_TABLES["IQ4_NL"] == (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)
    assert tail(F.IQ4_NL) == (1, 4, 0, 1, 16, 1, 0, 10)


@covers("OL-PROF-14")
def test_binary_table():
    assert FIXED_TABLES["BINARY"] == (-1, 1) and tail(F.BINARY) == (1, 1, 0, 1, 2, 1, 0, 10)


@covers("OL-PROF-15", "OL-PROF-16")
def test_ternary_tables():
    for fmt in (F.TERNARY, F.TQ1_0, F.BITNET, F.PARETOQ, F.TEQUILA):
        assert tail(fmt) == (1, 2, 0, 1, 3, 1, 1, 10)
        assert make_quantization_plan(fmt, 2).run(0).block(0).codebook == [-1, 0, 1]
    assert tail(F.TQ2_0) == (1, 2, 0, 1, 3, 1, 0, 10)
    assert make_quantization_plan(F.TQ2_0, 2).run(0).block(0).codebook == [-1, 0, 1]


@covers("OL-PROF-17")
def test_log_table():
    assert FIXED_TABLES["LOG"] == (0, 0.125, -0.125, 0.25, -0.25, 0.5, -0.5, 1, -1, 2, -2, 4, -4, 8, -8)
    assert tail(F.LOG) == (1, 4, 0, 1, 15, 1, 0, 10)


@covers("OL-PROF-18")
def test_e2m1_table():
    table = FIXED_TABLES["E2M1"]
    assert table == (0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6)
    assert math.copysign(1, table[8]) == -1
    for fmt in (F.MXFP4, F.NVFP4):
        assert tail(fmt) == (1, 4, 0, 1, 16, 1, 0, 10)
    # Input 0 picks entry 0 (+0), not entry 8 (-0).
    encoded = quantize_array(np.zeros(1, np.float32), make_quantization_plan(F.MXFP4, 1))
    assert encoded.raw_data[-1] == 0


@covers("OL-PROF-19")
def test_e3m2_table():
    table = FIXED_TABLES["E3M2"]
    assert len(table) == 64
    assert table[:32] == (0, 0.0625, 0.125, 0.1875, 0.25, 0.3125, 0.375, 0.4375, 0.5, 0.625, 0.75, 0.875,
                          1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28)
    assert table[32:] == tuple(-v for v in table[:32]) and math.copysign(1, table[32]) == -1
    for fmt in (F.FP6_LLM, F.MXFP6):
        assert tail(fmt) == (1, 6, 0, 1, 64, 1, 0, 10)


@covers("OL-PROF-20")
def test_e4m3fn_table():
    table = FIXED_TABLES["E4M3FN"]
    assert len(table) == 254 and tail(F.FP8_E4M3) == (1, 8, 0, 1, 254, 1, 0, 10)
    assert table[126] == 448 and table[127] == 0 and math.copysign(1, table[127]) == -1 and table[253] == -448
    magnitudes = [m * 2.0**-9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7) for e in range(16) for m in range(8)]
    assert table[:127] == tuple(magnitudes[:127])
    assert table[127:] == tuple(-v for v in magnitudes[:127])


@covers("OL-PROF-21", "OL-PROF-22", "OL-PROF-23", "OL-PROF-24", "OL-PROF-25")
def test_learned_profiles_keep_signed():
    assert tail(F.STQ1_0) == (1, 5, 1, 1, 32, 4, 0, 10)
    assert tail(F.IQ1_S) == (1, 8, 1, 1, 256, 8, 0, 10)
    assert tail(F.AQLM) == (1, 8, 1, 2, 256, 8, 0, 10)
    assert tail(F.QUIP_SHARP) == (1, 8, 1, 1, 256, 8, 0, 10) and PROFILES[F.QUIP_SHARP].needs_transform
    assert tail(F.SQUEEZELLM) == (1, 4, 1, 1, 16, 1, 0, 10)
    for fmt in (F.STQ1_0, F.IQ1_S, F.AQLM, F.QUIP_SHARP, F.SQUEEZELLM):
        assert make_quantization_plan(fmt, 2).run(0).block(0).codebook == []


@covers("OL-PROF-26")
def test_cast_profiles():
    for fmt in (F.TILED_FLOAT, F.COLUMN_MAJOR):
        assert tail(fmt) == (2, 4, 1, 1, 0, 1, 0, 1)
