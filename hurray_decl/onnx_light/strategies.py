"""Hypothesis strategies for onnx-light readers: valid inputs and rule-labelled mutants.

The builders of :mod:`.mutants` take their choices from a :class:`~.mutants.Source`; here the
source is Hypothesis' ``draw``, so every drawn input shrinks toward small plans and simple
values. Public strategies:

* :func:`encoded_values` — ``EncodedValueProto`` messages of any profile (or those given),
  portable or ORT, with permutation, transform, outliers and mixed runs;
* :func:`ort_values` — ORT MatMulNBits values with implicit, packed or floating zero points;
* :func:`compact_models` — models declaring a parameter set and holding a compact value of it;
* :func:`valid_inputs` — any valid input file (:class:`~.mutants.Case`: value, tensor or model);
* :func:`mutants` — inputs breaking one OL reader rule (every rule of :data:`MUTANTS` by default),
  each labelled with its rule and the field it changed;
* :data:`MUTANTS` / :data:`EXCLUDED` — the rules mutated, and those that cannot be, with reasons.

Requires ``hypothesis`` (a test dependency).
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from hurray_decl.onnx_light.mutants import (
    EXCLUDED,
    MUTANTS,
    ORT,
    Case,
    Source,
    compact_model,
    ort_value,
    valid_case,
    valid_value,
)
from hurray_decl.onnx_light.profiles import QuantizationFormat

__all__ = [
    "EXCLUDED",
    "MUTANTS",
    "DrawSource",
    "compact_models",
    "encoded_values",
    "mutants",
    "ort_values",
    "valid_inputs",
]


class DrawSource(Source):
    """Choices drawn by Hypothesis (and shrunk by it)."""

    def __init__(self, draw) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))


@st.composite
def encoded_values(draw, formats: Sequence[QuantizationFormat] | None = None, max_count: int = 24):
    """Valid encoded values of the given profiles (default: all 43)."""
    source = DrawSource(draw)
    fmt = draw(st.sampled_from(list(formats) if formats else list(QuantizationFormat)))
    return valid_value(source, fmt, count=source.integer(0, max_count))


@st.composite
def ort_values(draw, storage: str | None = None):
    """Valid ORT values; ``storage`` is "implicit", "packed" or "float" (default: any)."""
    return ort_value(draw(st.sampled_from(ORT)), DrawSource(draw), storage)


@st.composite
def compact_models(draw, formats: Sequence[QuantizationFormat] | None = None):
    """Models holding a parameter set and one compact value of it."""
    fmt = draw(st.sampled_from(list(formats))) if formats else None
    return compact_model(DrawSource(draw), fmt)


@st.composite
def valid_inputs(draw, kind: str | None = None) -> Case:
    """Valid input files of any kind (or of ``kind``: "value", "tensor", "model")."""
    return valid_case(DrawSource(draw), kind)


@st.composite
def mutants(draw, rules: Sequence[str] | None = None) -> Case:
    """An input breaking exactly one reader rule (drawn among ``rules``, default every mutated rule)."""
    rule = draw(st.sampled_from(sorted(rules or MUTANTS)))
    return MUTANTS[rule].build(DrawSource(draw))
