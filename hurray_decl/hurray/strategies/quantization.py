"""Valid quantization descriptors, one scheme at a time, found through the registry rows.

Each built-in scheme's registry row (:data:`hurray_decl.hurray.schemes.BUILTIN`) names a module
``hurray_decl.hurray.strategies.schemes.<row.name>`` that owns the scheme's strategies and mutants:

``descriptors()``
    valid descriptor models of the scheme on their own;
``shape(draw, shape)``
    a tensor shape adapted to what the scheme needs of its axis;
``for_tensor(draw, want)``
    ``(descriptor, parameter buffer sizes, (axis, block) padding or None)`` for a tensor
    (:class:`Quantizing`);
``parameters(draw, descriptor, size)``
    contents of the scale buffer that pass the data rules;
``scale_type(descriptor)``
    the element type name of one scale;
``PAGED``
    whether a block-paged tensor can carry the scheme.

Nothing here names a scheme: adding one means adding its row and its strategy module.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from hypothesis import strategies as st

from hurray_decl.hurray.quantization import encode_quantization, scheme as scheme_row
from hurray_decl.hurray.schemes import BUILTIN
from hurray_decl.hurray.schemes.quantization import Descriptor
from hurray_decl.hurray.tensor import BlockPaged
from hurray_decl.registry import SchemeRow


@dataclass(frozen=True)
class Quantizing:
    """What a scheme's ``for_tensor`` is told: the tensor's shape, the first parameter buffer
    index, the block-paged layout (or None) and the storage type."""

    shape: tuple[int, ...]
    first: int
    paged: BlockPaged | None
    type_name: str


def _module_name(row: SchemeRow) -> str:
    return f"{__package__}.schemes.{row.name}"


def strategy(row: SchemeRow) -> ModuleType | None:
    """The strategy module of a scheme's row (None for a scheme without one, such as a private one)."""
    if importlib.util.find_spec(_module_name(row)) is None:
        return None
    return importlib.import_module(_module_name(row))


ROWS: tuple[SchemeRow, ...] = tuple(row for row in BUILTIN if importlib.util.find_spec(_module_name(row)))
"""The built-in rows that have a strategy module (every one: a test checks it)."""

SCHEME_NAMES: tuple[str, ...] = tuple(row.name for row in ROWS)
"""Every built-in scheme by name, in registry order."""

STORAGE: dict[str, tuple[str, ...]] = {row.name: row.storage_types for row in ROWS}
"""Each scheme's storage types, from the registry rows."""


def of(name: str) -> ModuleType:
    """The strategy module of the scheme ``name``."""
    module = strategy(scheme_row(name))
    if module is None:
        raise KeyError(name)
    return module


def paged_schemes() -> tuple[str, ...]:
    """The schemes a block-paged tensor can carry."""
    return tuple(name for name in SCHEME_NAMES if of(name).PAGED)


def quantization_descriptors(scheme: int | str | None = None) -> st.SearchStrategy[Descriptor]:
    """Valid descriptor models of ``scheme`` (a tag or a name), or of every built-in scheme."""
    if scheme is None:
        return st.one_of([of(name).descriptors() for name in SCHEME_NAMES])
    return of(scheme_row(scheme).name).descriptors()


@st.composite
def quantization_payloads(draw: st.DrawFn, scheme: int | str | None = None, *, padding: bool = True) -> bytes:
    """Encoded valid descriptors, followed (when ``padding``) by 0-16 bytes of writer padding."""
    descriptor = draw(quantization_descriptors(scheme))
    tail = draw(st.binary(max_size=16)) if padding else b""
    return encode_quantization(descriptor) + tail


def quantized_shape(draw: st.DrawFn, scheme: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(of(scheme).shape(draw, list(shape)))


def for_tensor(draw: st.DrawFn, scheme: str, want: Quantizing) -> tuple[Any, tuple[int, ...], tuple[int, int] | None]:
    return of(scheme).for_tensor(draw, want)


def with_parameters(*required: str) -> tuple[str, ...]:
    """The schemes whose model has every field in ``required`` (``scale_buffer_index``, ...)."""
    return tuple(row.name for row in ROWS if all(f in row.model.model_fields for f in required))
