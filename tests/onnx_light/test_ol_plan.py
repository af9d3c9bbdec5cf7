"""Plan model, plan factory and plan validation (OL-PLAN).

Each refusal case breaks exactly one rule of an otherwise valid plan. Most rules are "both":
the decoder side is tested in test_ol_wire.py by editing a valid payload.
"""

from __future__ import annotations

import numpy as np
import pytest

from hurray_decl.errors import HurrayDeclError
from hurray_decl.onnx_light import (
    QuantizationFormat as F,
    QuantizationPlan,
    make_quantization_plan,
    make_quantization_type,
    quantize_array,
)
from tests.helpers import covers, raises_rule
from tests.onnx_light.support import edit_blocks, edit_layout, roundtrip

X4 = np.array([-1.0, 0.0, 0.5, 1.0], dtype=np.float32)


@pytest.mark.parametrize("block_size", [0, -1, 2**32, 2**40])
def test_factory_block_size(block_size):
    with raises_rule("OL-PLAN-01"):
        make_quantization_plan(F.INT4, 10, block_size)
    make_quantization_plan(F.INT4, 10, 2**32 - 1)


@covers("OL-PLAN-02")
def test_factory_runs():
    assert make_quantization_plan(F.INT4, 0).runs == []
    one = make_quantization_plan(F.INT4, 5, 8)
    assert [(r.layout.count, len(r)) for r in one.runs] == [(5, 1)]
    exact = make_quantization_plan(F.INT4, 16, 8)
    assert [(r.layout.count, len(r)) for r in exact.runs] == [(8, 2)]
    rest = make_quantization_plan(F.INT4, 19, 8)
    assert [(r.layout.count, len(r)) for r in rest.runs] == [(8, 2), (3, 1)]
    # Grouping never comes from a shape: a 2x8 array with block 4 is four runs of 4 elements in order.
    plan = edit_blocks(make_quantization_plan(F.INT8, 16, 4), scale=[1, 2, 4, 8])
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    _, decoded = roundtrip(x, plan)
    np.testing.assert_array_equal(decoded,
                                  np.array([0, 1, 2, 3, 4, 4, 6, 8, 8, 8, 8, 12, 16, 16, 16, 16]).reshape(2, 8))


@pytest.mark.parametrize("fmt", [F.ORT_MATMULNBITS_INT2, F.ORT_MATMULNBITS_INT4, F.ORT_MATMULNBITS_INT8])
def test_factory_refuses_ort(fmt):
    with raises_rule("OL-PLAN-03") as info:
        make_quantization_plan(fmt, 32)
    assert isinstance(info.value, ValueError)


def test_plan_copies():
    plan = make_quantization_plan(F.INT4, 3)
    plan.runs[0].blocks[0].scale = 0.25          # edits a temporary copy
    assert plan.run(0).block(0).scale == 1.0
    run = plan.run(0)
    block = run.block(0)
    block.scale = 0.25
    run.set_block(0, block)
    plan.set_run(0, run)
    assert plan.run(0).block(0).scale == 0.25


def _layout(**fields):
    def edit(plan):
        return edit_layout(plan, **fields)
    return edit


def _block(**fields):
    def edit(plan):
        return edit_blocks(plan, **fields)
    return edit


def _plan(**fields):
    def edit(plan):
        for name, value in fields.items():
            setattr(plan, name, value)
        return plan
    return edit


def _no_blocks(plan):
    run = plan.run(0)
    run.blocks = []
    plan.set_run(0, run)
    return plan


def _count(value):
    def edit(plan):
        return edit_layout(plan, count=value)
    return edit


INF = float("inf")
NAN = float("nan")

# (expected refusal, profile, element count, edit)
REFUSALS = [
    (lambda: raises_rule("OL-PLAN-04"), F.INT4, 4, _count(2**32)),
    (lambda: raises_rule("OL-PLAN-05"), F.INT4, 4, _count(0)),
    (lambda: raises_rule("OL-PLAN-06"), F.INT4, 4, _no_blocks),
    (lambda: raises_rule("OL-PLAN-07"), F.INT4, 4, _layout(method=99)),
    (lambda: raises_rule("OL-PLAN-07"), F.INT4, 4, _layout(method=3)),
    (lambda: raises_rule("OL-PLAN-08"), F.INT4, 4, _layout(bits=0)),
    (lambda: raises_rule("OL-PLAN-08"), F.INT4, 4, _layout(bits=17)),
    (lambda: raises_rule("OL-PLAN-09"), F.INT4, 4, _layout(cast_type=-1)),
    (lambda: raises_rule("OL-PLAN-09"), F.INT4, 4, _layout(cast_type=0)),
    (lambda: raises_rule("OL-PLAN-09"), F.NF4, 4, _layout(cast_type=3)),
    (lambda: raises_rule("OL-PLAN-09"), F.TILED_FLOAT, 4, _layout(cast_type=8)),
    (lambda: raises_rule("OL-PLAN-09"), F.TILED_FLOAT, 4, _layout(cast_type=2**31 - 1)),
    (lambda: raises_rule("OL-PLAN-10"), F.INT4, 4, _block(scale=NAN)),
    (lambda: raises_rule("OL-PLAN-10"), F.INT4, 4, _block(scale=INF)),
    (lambda: raises_rule("OL-PLAN-11"), F.INT4, 4, _block(scale=0.0)),
    (lambda: raises_rule("OL-PLAN-11"), F.NF4, 4, _block(scale=-1.0)),
    (lambda: raises_rule("OL-PLAN-12"), F.INT4, 4, _block(zero_point=INF)),
    (lambda: raises_rule("OL-PLAN-13"), F.INT4, 4, _block(offset=NAN)),
    (lambda: raises_rule("OL-PLAN-14"), F.NF4, 4, _block(offset=1.0)),
    (lambda: raises_rule("OL-PLAN-14"), F.TILED_FLOAT, 4, _block(offset=0.5)),
    (lambda: raises_rule("OL-PLAN-15"), F.INT4, 4, _block(zero_point=0.5)),
    (lambda: raises_rule("OL-PLAN-16"), F.INT4, 4, _block(zero_point=8.0)),
    (lambda: raises_rule("OL-PLAN-16"), F.GPTQ, 4, _block(zero_point=-1.0)),
    (lambda: raises_rule("OL-PLAN-17"), F.NF4, 4, _layout(books=0)),
    (lambda: raises_rule("OL-PLAN-17"), F.NF4, 4, _layout(vector_size=0)),
    (lambda: raises_rule("OL-PLAN-17"), F.SQUEEZELLM, 4, _layout(entries=0)),
    (lambda: raises_rule("OL-PLAN-18"), F.NF4, 4, _layout(bits=3)),
    (lambda: raises_rule("OL-PLAN-19"), F.AQLM, 4, lambda p: p),
    (lambda: raises_rule("OL-PLAN-19"), F.SQUEEZELLM, 4, lambda p: p),
    (lambda: raises_rule("OL-PLAN-19"), F.STQ1_0, 4, lambda p: p),
    (lambda: raises_rule("OL-PLAN-19"), F.IQ1_S, 4, lambda p: p),
    (lambda: raises_rule("OL-PLAN-19"), F.SQUEEZELLM, 3, _block(codebook=[0.0, 1.0])),
    (lambda: raises_rule("OL-PLAN-20"), F.BINARY, 4, _block(codebook=[-1.0, INF])),
    (lambda: raises_rule("OL-PLAN-21"), F.NF4, 4, _block(zero_point=1.0)),
    (lambda: raises_rule("OL-PLAN-22"), F.TILED_FLOAT, 4, _block(zero_point=1.0)),
    (lambda: raises_rule("OL-PLAN-23"), F.INT4, 4, _block(codebook=[1.0])),
    (lambda: raises_rule("OL-PLAN-23"), F.TILED_FLOAT, 4, _block(codebook=[1.0, 2.0])),
    (lambda: raises_rule("OL-PLAN-24"), F.INT4, 4, _layout(base3=1)),
    (lambda: raises_rule("OL-PLAN-24"), F.NF4, 4, _layout(base3=1)),
    (lambda: raises_rule("OL-PLAN-25"), F.SQUEEZELLM, 4,
     _layout(books=2**32 - 1, vector_size=2**32 - 1, bits=16, entries=2**16)),
    (lambda: raises_rule("OL-PLAN-26"), F.INT4, 4, _plan(matrix_shape=[2, 2])),
    (lambda: raises_rule("OL-PLAN-27"), F.INT4, 4, _count(3)),
    (lambda: raises_rule("OL-PLAN-27"), F.INT4, 4, _count(1)),
    (lambda: raises_rule("OL-PLAN-27"), F.INT4, 4, lambda p: _plan()(QuantizationPlan(F.INT4))),
    (lambda: raises_rule("OL-PLAN-28"), F.INT4, 4, _plan(permutation=[0, 0, 1, 2])),
    (lambda: raises_rule("OL-PLAN-28"), F.INT4, 4, _plan(permutation=[0, 1, 2])),
    (lambda: raises_rule("OL-PLAN-28"), F.INT4, 4, _plan(permutation=[1, 2, 3, 4])),
    (lambda: raises_rule("OL-PLAN-29"), F.INT4, 4, _plan(outliers=[4])),
    (lambda: raises_rule("OL-PLAN-29"), F.INT4, 4, _plan(outliers=[-1])),
    (lambda: raises_rule("OL-PLAN-30"), F.INT4, 4, _plan(outliers=[1, 1])),
    (lambda: raises_rule("OL-PLAN-31"), F.INT4, 4, _plan(transform_size=2, forward=[1, 0, 0, 1], inverse=[1, 0, 0])),
    (lambda: raises_rule("OL-PLAN-31"), F.INT4, 4, _plan(transform_size=2, forward=[1, 0, 0], inverse=[1, 0, 0, 1])),
    (lambda: raises_rule("OL-PLAN-32"), F.INT4, 4, _plan(transform_size=3, forward=np.eye(3).ravel().tolist(),
                                    inverse=np.eye(3).ravel().tolist())),
    (lambda: raises_rule("OL-PLAN-33"), F.INT4, 4,
     _plan(transform_size=2, forward=[1, 0, 0, NAN], inverse=[1, 0, 0, 1])),
    (lambda: raises_rule("OL-PLAN-34"), F.INT4, 4, _plan(transform_size=2, forward=[1, 0, 0, 2], inverse=[1, 0, 0, 1])),
    (lambda: raises_rule("OL-PLAN-35"), F.QUAROT, 4, lambda p: p),
    (lambda: raises_rule("OL-PLAN-35"), F.SMOOTHQUANT, 4, lambda p: p),
]


@pytest.mark.parametrize("expect, fmt, count, edit", REFUSALS, ids=[f"{r[1].name}-{i}" for i, r in enumerate(REFUSALS)])
def test_plan_refusals(expect, fmt, count, edit):
    plan = edit(make_quantization_plan(fmt, count))
    with expect() as info:
        quantize_array(np.linspace(-1, 1, count).astype(np.float32), plan)
    assert isinstance(info.value, ValueError)


def test_quip_sharp_needs_transforms():
    plan = edit_blocks(make_quantization_plan(F.QUIP_SHARP, 8), codebook=list(np.linspace(-1, 1, 2048)))
    with raises_rule("OL-PLAN-35") as info:
        quantize_array(np.zeros(8, np.float32), plan)
    assert "transforms" in str(info.value)


def test_learned_table_message_mentions_codebook():
    with raises_rule("OL-PLAN-19") as info:
        quantize_array(np.zeros(4, np.float32), make_quantization_plan(F.AQLM, 4))
    assert "codebook" in str(info.value)


def test_inverse_pair_need_not_be_orthogonal():
    plan = edit_blocks(make_quantization_plan(F.INT8, 4), scale=0.5)
    plan.transform_size = 2
    plan.forward = [2, 0, 0, 0.5]
    plan.inverse = [0.5, 0, 0, 2]
    x = np.array([1, 2, 3, 4], dtype=np.float32)
    np.testing.assert_array_equal(roundtrip(x, plan)[1], x)


def test_portable_plan_relabelled_ort_is_refused_at_encoding():
    plan = make_quantization_plan(F.INT4, 4)
    object.__setattr__(plan, "_format", F.ORT_MATMULNBITS_INT4)
    with raises_rule("OL-ORT-07"):  # no matrix_shape: the ORT geometry is checked at encoding
        quantize_array(X4, plan)


def test_make_quantization_type_without_tables():
    described = make_quantization_type(make_quantization_plan(F.AQLM, 16, 8))
    assert described.name == "onnx_light.quantization.v1/aqlm"
    with pytest.raises(HurrayDeclError):
        make_quantization_type(edit_layout(make_quantization_plan(F.INT4, 4), bits=0))
