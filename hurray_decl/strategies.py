"""Hypothesis strategies for Hurray quantization descriptors (needs the ``hypothesis`` package).

``quantization_descriptors(scheme)`` draws valid descriptor models of one scheme (all
registered schemes when ``scheme`` is None); ``quantization_payloads`` draws their encodings,
optionally followed by writer padding. Each flag is drawn next to the field it gates, so
shrinking stays local.
"""

from __future__ import annotations

from typing import Callable

from hypothesis import strategies as st

from .engine import SCHEMES, encode_quantization, scheme as scheme_row
from .schemes.mxfp import MXFP
from .schemes.nf4 import NF4
from .schemes.per_block_affine import SCALE_TYPES, PerBlockAffine
from .schemes.per_channel_affine import PerChannelAffine
from .schemes.per_tensor_affine import PerTensorAffine
from .schemes.quantization import Descriptor

__all__ = ["quantization_descriptors", "quantization_payloads", "float32s"]

_indices = st.integers(min_value=0, max_value=254)
_axes = st.integers(min_value=0, max_value=63)


def float32s(*, nonzero: bool = True) -> st.SearchStrategy[float]:
    """Finite float32 values (exactly representable), optionally non-zero."""
    values = st.floats(width=32, allow_nan=False, allow_infinity=False)
    return values.filter(lambda v: v != 0.0) if nonzero else values


def _powers_of_two(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(min_value=low.bit_length() - 1, max_value=high.bit_length() - 1).map(lambda e: 1 << e)


@st.composite
def _affine_indices(draw: st.DrawFn) -> dict:
    symmetric = draw(st.booleans())
    return {
        "symmetric": symmetric,
        "scale_buffer_index": draw(_indices),
        "zero_point_buffer_index": None if symmetric else draw(_indices),
    }


@st.composite
def _per_tensor(draw: st.DrawFn) -> PerTensorAffine:
    return PerTensorAffine(
        scale=draw(float32s()),
        zero_point=draw(st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1)),
    )


@st.composite
def _per_channel(draw: st.DrawFn) -> PerChannelAffine:
    return PerChannelAffine(axis=draw(_axes), **draw(_affine_indices()))


@st.composite
def _per_block(draw: st.DrawFn) -> PerBlockAffine:
    return PerBlockAffine(
        axis=draw(_axes),
        block_size=draw(_powers_of_two(2, 1 << 31)),
        scale_type_tag=draw(st.sampled_from(sorted(SCALE_TYPES))),
        **draw(_affine_indices()),
    )


@st.composite
def _nf4(draw: st.DrawFn) -> NF4:
    return NF4(axis=draw(_axes), block_size=draw(_powers_of_two(8, 1 << 31)),
               scale_buffer_index=draw(_indices))


@st.composite
def _mxfp(draw: st.DrawFn) -> MXFP:
    return MXFP(axis=draw(_axes), block_size=draw(_powers_of_two(16, 2048)),
                scale_buffer_index=draw(_indices))


BUILDERS: dict[str, Callable[[], st.SearchStrategy[Descriptor]]] = {
    "per_tensor_affine": _per_tensor,
    "per_channel_affine": _per_channel,
    "per_block_affine": _per_block,
    "nf4": _nf4,
    "mxfp": _mxfp,
}
"""One strategy per built-in scheme, keyed by the registry row's name."""


def quantization_descriptors(scheme: int | str | None = None) -> st.SearchStrategy[Descriptor]:
    """Valid descriptor models of ``scheme`` (a tag or a name), or of every built-in scheme."""
    if scheme is None:
        return st.one_of([BUILDERS[row.name]() for row in SCHEMES if row.name in BUILDERS])
    return BUILDERS[scheme_row(scheme).name]()


@st.composite
def quantization_payloads(draw: st.DrawFn, scheme: int | str | None = None, *, padding: bool = True) -> bytes:
    """Encoded valid descriptors, followed (when ``padding``) by 0-16 bytes of writer padding."""
    descriptor = draw(quantization_descriptors(scheme))
    tail = draw(st.binary(max_size=16)) if padding else b""
    return encode_quantization(descriptor) + tail

