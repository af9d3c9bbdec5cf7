"""Registries: one row per scheme (Hurray) or method (onnx-light), registered by an explicit call.

Everything that varies by scheme is read from its row: the engine's dispatch, the docs table,
the Kaitai agreement test and the test parametrisation. Adding a scheme means adding a module
and one ``register`` call. The rows are the source; what else names the schemes is derived
from them or checked against them: ``hurray.schemes.BUILTIN`` lists the built-in rows it
registers, the Kaitai schemas of ``schemas/hurray/`` declare the same wire layouts (one file per
scheme; a test compares them), and the README's scheme table is generated from the rows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import construct as cs

from hurray_decl.declare.schema import field_offsets
from hurray_decl.errors import RegistrationError

if TYPE_CHECKING:
    from hurray_decl.declare.model import FrozenModel

K = TypeVar("K")
V = TypeVar("V")
M = TypeVar("M", bound="FrozenModel", covariant=True)


class Table(Generic[K, V]):
    """A keyed table filled by explicit ``register`` calls; a key is registered once.

    Safe under threads: a change builds a new map under a lock and swaps it in whole
    (copy-on-write), so a reader looking up or iterating never sees a map being changed.
    """

    def __init__(self, what: str, code: str) -> None:
        self.what = what
        self.code = code
        self._rows: dict[K, V] = {}
        self._lock = threading.Lock()

    def register(self, key: K, row: V) -> V:
        with self._lock:
            if key in self._rows:
                raise RegistrationError(
                    self.code, f"{self.what} {key!r} is already registered", path=self.what, actual=key
                )
            self._rows = {**self._rows, key: row}
        return row

    def unregister(self, key: K) -> None:
        with self._lock:
            if key in self._rows:
                self._rows = {k: v for k, v in self._rows.items() if k != key}

    def get(self, key: K) -> V | None:
        return self._rows.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def __iter__(self) -> Iterator[V]:
        return iter(self._rows.values())

    def keys(self) -> list[K]:
        return list(self._rows)


@dataclass(frozen=True)
class SchemeRow(Generic[M]):
    """Everything hurray_decl knows about one quantization scheme.

    ``struct`` is the whole fixed encoding (header included) as one Construct declaration;
    ``model`` the pydantic class it decodes to; ``kernel`` the NumPy dequantization function,
    when one is registered.
    """

    tag: int
    name: str
    title: str
    tier: int | None
    struct: cs.Struct
    model: type[M]
    storage_types: tuple[str, ...] = ()
    storage_rule: str = "HQ-EXT-03"
    """The rule refusing a storage type outside ``storage_types``."""
    flags_defined: dict[int, str] = field(default_factory=dict)
    version: int = 1
    private: bool = False
    kernel: Callable[..., Any] | None = None
    """``kernel(descriptor, shape, params)``: the :class:`~hurray_decl.hurray.kernels.Plan` that
    dequantizes a tensor (``params`` reads the parameter arrays from the buffers)."""
    quantize: Callable[..., Any] | None = None
    """``quantize(x, options)``: a :class:`~hurray_decl.hurray.kernels.Quantized` for a float array."""
    quantize_defaults: Mapping[str, Any] = field(default_factory=dict)
    """The options ``quantize`` takes when the caller gives none (``axis`` -1 is the last axis,
    ``block_size``, ``storage``)."""
    check_tensor: Callable[..., None] | None = None
    """``check_tensor(descriptor, tensor)``: the scheme's rules that need the tensor and its
    buffer table (``tensor`` a ``hurray.checks.TensorChecks``, which the tensor context is)."""
    check_data: Callable[..., None] | None = None
    """``check_data(descriptor, data)``: the scheme's rules that need buffer contents
    (``data`` a ``hurray.checks.DataChecks``, which the data context is)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "quantize_defaults", MappingProxyType(dict(self.quantize_defaults)))

    @property
    def layout_rule(self) -> str:
        """The rule that lays out the scheme's encoding (its model's ``rule``)."""
        return self.model.rule

    @cached_property
    def length(self) -> int:
        """The fixed encoded length, header included, from the declaration."""
        size: int = self.struct.sizeof()  # construct is untyped
        return size

    @cached_property
    def offsets(self) -> dict[str, tuple[int, int]]:
        """Offset and size of every field, from the declaration."""
        return field_offsets(self.struct)

    @cached_property
    def version_check(self) -> cs.Struct:
        """The tag and version fields alone, checked before the length is known to suffice."""
        return cs.Struct(*self.struct.subcons[:2])
