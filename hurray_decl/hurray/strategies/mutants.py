"""The mutant tables, the helpers every mutant module builds on, and the public mutant strategies.

A mutant module registers one generator per reader rule with :func:`mutant` (into
:data:`MUTANTS`) or per data rule with :func:`data_mutant` (into :data:`DATA_MUTANTS`). Most
generators are :func:`field_mutant`: a valid descriptor written by the writer, one field
replaced by its dotted path (:mod:`hurray_decl.hurray.strategies.patching`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from hypothesis import strategies as st

from hurray_decl.hurray.strategies.patching import fields, patched
from hurray_decl.hurray.strategies.tensor import DATA, tensor_descriptors
from hurray_decl.hurray.strategies.values import nonzero_bytes
from hurray_decl.hurray.tensor import TensorDescriptor, write_tensor_descriptor
from hurray_decl.hurray.tensor.fields import dotted
from hurray_decl.rules import all_rules

MUTANTS: dict[str, Callable[[], st.SearchStrategy[bytes]]] = {}
"""One strategy factory per reader rule: the strategy draws descriptor bytes that break that rule."""

DATA_MUTANTS: dict[str, Callable[[], st.SearchStrategy[tuple[bytes, tuple[bytes, ...]]]]] = {}
"""Data rules with a generator: each draws (descriptor bytes, buffer contents)."""

_AREAS = ("HQ", "HT", "HE")


def reader_rules() -> list[str]:
    """Reader rules of the Hurray areas that bytes alone can break: role reader or both, areas
    HQ-*, HT-*, HE-*, needs without ``data``."""
    return [r.id for r in all_rules().values()
            if r.id.split("-")[0] in _AREAS and r.role in ("reader", "both") and "data" not in r.needs]


def data_rules() -> list[str]:
    """Reader rules of the Hurray areas that need buffer contents."""
    return [r.id for r in all_rules().values()
            if r.id.split("-")[0] in _AREAS and r.role in ("reader", "both") and "data" in r.needs]


def mutant(*rules: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a generator for ``rules`` (a generator of several rules takes the rule)."""
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for rule in rules:
            if rule in MUTANTS:
                raise ValueError(f"{rule} has two mutant generators")
            MUTANTS[rule] = partial(fn, rule) if len(rules) > 1 else fn
        return fn
    return register


def data_mutant(rule: str, factory: Callable[[], st.SearchStrategy[tuple[bytes, tuple[bytes, ...]]]]) -> None:
    if rule in DATA_MUTANTS:
        raise ValueError(f"{rule} has two data mutant generators")
    DATA_MUTANTS[rule] = factory


Value = Callable[[st.DrawFn, TensorDescriptor], Any]


@st.composite
def field_mutant(draw: st.DrawFn, base: st.SearchStrategy[TensorDescriptor],
                 path: Callable[[st.DrawFn, TensorDescriptor], str] | str, value: Value) -> bytes:
    """A valid descriptor with one field (by its dotted path) set to ``value(draw, d)``."""
    d = draw(base)
    data = write_tensor_descriptor(d)
    where = path(draw, d) if callable(path) else path
    return patched(data, where, value(draw, d))


def drawn(values: st.SearchStrategy[Any] | Callable[[TensorDescriptor], st.SearchStrategy[Any]]) -> Value:
    """A field value drawn from ``values`` (or from ``values(d)``)."""
    return lambda draw, d: draw(values(d) if callable(values) else values)


def header_field(path: str, values: st.SearchStrategy[int | bytes],
                 base: st.SearchStrategy[TensorDescriptor] = DATA) -> st.SearchStrategy[bytes]:
    return field_mutant(base, path, drawn(values))


def layout_field(kinds: str | Iterable[str], field: str, values: Any, **kw: Any) -> st.SearchStrategy[bytes]:
    return field_mutant(tensor_descriptors(layout=kinds, **kw), f"layout.{field}", drawn(values))


@st.composite
def layout_entry(draw: st.DrawFn, kind: str, field: str, value: Value) -> bytes:
    """A valid ``kind`` descriptor with one entry of its per-dimension array ``field`` replaced."""
    d = draw(tensor_descriptors(layout=kind))
    return patched(write_tensor_descriptor(d), f"layout.{field}[{draw(st.integers(0, d.rank - 1))}]", value(draw, d))


@st.composite
def data_too_small(draw: st.DrawFn, base: st.SearchStrategy[TensorDescriptor]) -> bytes:
    """A valid descriptor whose buffer 0 is made smaller than it is (and so than the layout addresses)."""
    d = draw(base.filter(lambda d: d.buffers[0].byte_size > 0))
    return patched(write_tensor_descriptor(d), "buffers[0].byte_size", draw(st.integers(0, d.buffers[0].byte_size - 1)))


@st.composite
def reserved_field(draw: st.DrawFn, base: st.SearchStrategy[TensorDescriptor], path: str) -> bytes:
    """Non-zero bytes, as many as the declaration gives it, in the reserved field at ``path``."""
    data = write_tensor_descriptor(draw(base))
    where = fields(data)
    return patched(data, path, draw(nonzero_bytes(where[dotted(path)][1])), where)


def invalid_tensor_descriptors(rule: str | Iterable[str] | None = None) -> st.SearchStrategy[tuple[bytes, str]]:
    """``(descriptor bytes, rule_id)``: a valid descriptor changed in the field ``rule_id``
    governs, so that a reader must refuse it under that rule. ``rule`` picks one rule or
    several (default: every rule in :data:`MUTANTS`)."""
    rules = sorted(MUTANTS) if rule is None else ([rule] if isinstance(rule, str) else list(rule))
    missing = [r for r in rules if r not in MUTANTS]
    if missing:
        raise KeyError(f"no mutant generator for {missing}")
    return st.one_of([MUTANTS[r]().map(partial(_named, r)) for r in rules])


def invalid_buffers(rule: str | Iterable[str] | None = None) -> st.SearchStrategy[
        tuple[bytes, tuple[bytes, ...], str]]:
    """``(descriptor bytes, buffer contents, rule_id)``: a valid descriptor whose buffer contents
    break the data rule ``rule_id`` (see :data:`DATA_MUTANTS`); the descriptor itself is valid."""
    rules = sorted(DATA_MUTANTS) if rule is None else ([rule] if isinstance(rule, str) else list(rule))
    return st.one_of([DATA_MUTANTS[r]().map(partial(_case_named, r)) for r in rules])


def _named(rule: str, data: bytes) -> tuple[bytes, str]:
    return data, rule


def _case_named(rule: str, case: tuple[bytes, tuple[bytes, ...]]) -> tuple[bytes, tuple[bytes, ...], str]:
    return case[0], case[1], rule
