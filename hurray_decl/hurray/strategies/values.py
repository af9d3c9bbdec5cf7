"""Small value strategies every strategy module draws from."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hypothesis import strategies as st

from hurray_decl.errors import ArgumentError

INDICES = st.integers(min_value=0, max_value=254)
"""Buffer indices a descriptor model accepts on its own (a table holds at most 255 entries)."""
AXES = st.integers(min_value=0, max_value=63)
"""Axes a descriptor model accepts on its own (rank is at most 64)."""


def float32s(*, nonzero: bool = True) -> st.SearchStrategy[float]:
    """Finite float32 values (exactly representable), optionally non-zero."""
    values = st.floats(width=32, allow_nan=False, allow_infinity=False)
    return values.filter(lambda v: v != 0.0) if nonzero else values


def pow2(low_exp: int, high_exp: int) -> st.SearchStrategy[int]:
    """2**e for e in [low_exp, high_exp]."""
    return st.integers(low_exp, high_exp).map(lambda e: 1 << e)


def powers_of_two(low: int, high: int) -> st.SearchStrategy[int]:
    """Powers of two in [low, high] (both powers of two)."""
    return pow2(low.bit_length() - 1, high.bit_length() - 1)


def non_pow2(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high).filter(lambda v: v & (v - 1) != 0)


def other_than(values: st.SearchStrategy[int], *excluded: int) -> st.SearchStrategy[int]:
    return values.filter(lambda v: v not in excluded)


def nonzero_bytes(count: int) -> st.SearchStrategy[bytes]:
    return st.binary(min_size=count, max_size=count).filter(any)


def outside(bounds: tuple[int, int], width_bits: int = 32) -> st.SearchStrategy[int]:
    """Signed ``width_bits`` integers outside the inclusive ``bounds`` (which must not span the whole width)."""
    low, high = bounds
    smallest, largest = -(1 << (width_bits - 1)), (1 << (width_bits - 1)) - 1
    return st.one_of(*([st.integers(smallest, low - 1)] if low > smallest else []),
                     *([st.integers(high + 1, largest)] if high < largest else []))


def product(values: Iterable[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def names(argument: str, value: str | Iterable[str] | None, every: Sequence[str],
          extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The names a caller asked for in ``argument`` (all of ``every`` for None), refusing unknown ones."""
    if value is None:
        return tuple(every)
    chosen = (value,) if isinstance(value, str) else tuple(value)
    unknown = set(chosen) - set(every) - set(extra)
    if unknown:
        raise ArgumentError(argument, f"unknown names {sorted(unknown)}", actual=sorted(unknown),
                            expected=", ".join(every))
    return chosen


def maybe(draw: st.DrawFn, choice: bool | None) -> bool:
    return draw(st.booleans()) if choice is None else choice
