"""Valid tensor descriptors and buffer contents, composed from the layout, scheme and section
strategies that own each part.

A layout family's module (``strategies/layouts/*.py``) registers one :class:`LayoutStrategy`
per layout row, a section's module (``strategies/sections.py``) its section strategies in
:data:`SECTIONS`, and each scheme is found through its registry row
(:mod:`hurray_decl.hurray.strategies.quantization`). This module only composes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from hypothesis import strategies as st

from hurray_decl.errors import ArgumentError
from hurray_decl.hurray.quantization import scheme as scheme_row
from hurray_decl.hurray.strategies.quantization import (
    SCHEME_NAMES,
    STORAGE,
    Quantizing,
    for_tensor,
    of,
    paged_schemes,
    quantized_shape,
)
from hurray_decl.hurray.strategies.values import maybe, names, pow2
from hurray_decl.hurray.tables.codes import Device, MemoryClass, SyncMode
from hurray_decl.hurray.tables.element_types import BY_NAME, ELEMENT_TYPES, Kind
from hurray_decl.hurray.tables.storage import byte_size
from hurray_decl.hurray.tables.tags import PRIVATE_RANGE
from hurray_decl.hurray.tensor import BufferHandle, ExtensionType, TensorDescriptor
from hurray_decl.hurray.tensor.layouts import LAYOUTS, MODELS, Layout

PRIVATE_DEVICE = PRIVATE_RANGE.first + 2
"""The private device tag the strategies place buffers on (any of the private range would do)."""

PRIVATE_VALUES = st.integers(PRIVATE_RANGE.first, PRIVATE_RANGE.last)
"""Any tag of the private range (element types, layouts, devices, memory classes)."""

LAYOUT_KINDS: tuple[str, ...] = tuple(row.name for row in LAYOUTS)
"""Every public layout by its row's name; ``private`` is added when a private_layout_id is given."""

LAYOUT_ROWS = {row.name: row for row in LAYOUTS}
_CATEGORY = {row.name: row.category for row in LAYOUTS}


def layouts_in(*categories: str) -> tuple[str, ...]:
    """The public layouts of the layout rows' ``categories`` (dense, sparse, indirect, virtual)."""
    return tuple(name for name in LAYOUT_KINDS if _CATEGORY[name] in categories)


WITH_DATA = tuple(name for name in LAYOUT_KINDS if _CATEGORY[name] != "virtual")
"""Every layout that owns buffers (all but the composite head)."""


_L = TypeVar("_L", bound=Layout)


def layout_as(d: TensorDescriptor, kind: type[_L]) -> _L:
    """``d``'s layout, a ``kind``: the strategy that drew ``d`` asked for one."""
    layout = d.layout
    if not isinstance(layout, kind):
        raise ValueError(f"a {kind.__name__} layout was drawn, not {type(layout).__name__}")
    return layout


def scheme_of(d: TensorDescriptor) -> Any:
    """``d``'s quantization model, for strategies that read its fields by name (``axis``,
    ``block_size``, ``scale_buffer_index``, ...) whichever scheme drew it."""
    if d.quantization is None:
        raise ValueError("a quantized descriptor was drawn, not a plain one")
    return d.quantization


@dataclass(frozen=True)
class Request:
    """What a layout's part is asked for: its storage type (a public name, or a private
    extension type), the scheme to quantize with (or None) and the caller's options."""

    kind: str
    type_name: str | None
    ext: ExtensionType | None
    scheme: str | None
    tiled_depth: int | None
    private_layout_id: int | None

    @property
    def name(self) -> str:
        """The public storage type's name (a private extension type has none)."""
        if self.type_name is None:
            raise ValueError("a private extension type has no public type name")
        return self.type_name

    def size_of(self, count: int) -> int:
        """Bytes of ``count`` contiguous elements of the storage type."""
        return self.ext.packed_size(count) if self.ext is not None else byte_size(self.name, count)

    @property
    def bits(self) -> int:
        return self.ext.bit_width if self.ext is not None else BY_NAME[self.name].bits

    def quantization(self, draw: st.DrawFn, shape: tuple[int, ...], first: int,
                     paged: Any = None) -> tuple[Any, tuple[int, ...], tuple[int, int] | None]:
        """(descriptor, parameter buffer sizes, padding) of the requested scheme, or nothing."""
        if self.scheme is None:
            return None, (), None
        return for_tensor(draw, self.scheme, Quantizing(shape, first, paged, self.name))

    def scheme_attribute(self, name: str, default: Any) -> Any:
        """What the requested scheme's strategy module says under ``name`` (``default`` without one)."""
        return default if self.scheme is None else getattr(of(self.scheme), name, default)

    def shape(self, draw: st.DrawFn, rank_low: int, rank_high: int, dim_high: int = 6) -> tuple[int, ...]:
        """A shape, adapted to the requested scheme's axis when there is one."""
        if self.scheme is None:
            return draw(shapes(rank_low, rank_high, dim_high))
        return quantized_shape(draw, self.scheme, draw(shapes(rank_low, rank_high, 4)))


@dataclass(frozen=True)
class Part:
    """A layout's share of a descriptor: shape, layout model, buffer sizes, byte_offset,
    quantization and, for a private layout, its tag."""

    shape: tuple[int, ...]
    layout: Layout
    sizes: tuple[int, ...]
    byte_offset: int = 0
    quantization: Any = None
    layout_tag: int | None = None


@dataclass(frozen=True)
class LayoutStrategy:
    """How to draw one layout: its part, whether it is drawn quantized, whether it is the
    block-paged layout (which only some schemes fit), and how to fill the buffers it owns."""

    name: str
    part: Callable[[st.DrawFn, Request], Part]
    quantizable: bool = False
    paged: bool = False
    contents: Callable[[st.DrawFn, TensorDescriptor, list], None] | None = None


LAYOUT_STRATEGIES: dict[str, LayoutStrategy] = {}
"""Filled by the layout family modules, keyed by the layout row's name (``private`` too)."""

SECTIONS: dict[str, Callable[..., st.SearchStrategy[Any]]] = {}
"""Filled by :mod:`hurray_decl.hurray.strategies.sections`: shard, statistics, extension_type, composite_member."""


def register_layout(strategy: LayoutStrategy) -> None:
    if strategy.name in LAYOUT_STRATEGIES:
        raise ValueError(f"layout {strategy.name!r} has two strategies")
    LAYOUT_STRATEGIES[strategy.name] = strategy


def contiguous() -> tuple[str, ...]:
    """The dense layouts drawn quantized: row- and column-major, whose data is one run of elements."""
    return tuple(k for k in layouts_in("dense") if LAYOUT_STRATEGIES[k].quantizable)


def shardable(kind: str) -> bool:
    """Whether the layout row allows a shard section (it has no rule refusing one)."""
    row = LAYOUT_ROWS.get(kind)
    return row is None or row.shard_code is None


@st.composite
def placements(draw: st.DrawFn, devices: Sequence[int] | None = None) -> tuple[int, int, int]:
    """(device_tag, sync_mode, memory_class) shared by every buffer (HT-BUFT-24/25): a pair
    from the per-device table, sync_mode 0 on CPU."""
    pool = [int(d) for d in devices] if devices is not None else [*Device.codes(), PRIVATE_DEVICE]
    device = draw(st.sampled_from(pool))
    sync = int(SyncMode.PRODUCER_SYNCED) if device == Device.CPU else draw(st.sampled_from(SyncMode.codes()))
    classes = sorted(int(c) for c in Device(device).memory_classes) if Device.has(device) \
        else [int(MemoryClass.STANDARD)]
    return device, sync, draw(st.sampled_from(classes))


def _handles(draw: st.DrawFn, sizes: Sequence[int], where: tuple[int, int, int]) -> tuple[BufferHandle, ...]:
    device, sync, memory_class = where
    out = []
    for size in sizes:
        alignment = draw(pow2(6, 12)) if size else draw(pow2(0, 12))
        out.append(BufferHandle(byte_size=size, alignment=alignment, device_tag=device, sync_mode=sync,
                                memory_class=memory_class))
    return tuple(out)


@st.composite
def shapes(draw: st.DrawFn, rank_low: int = 1, rank_high: int = 3, dim_high: int = 6) -> tuple[int, ...]:
    return tuple(draw(st.lists(st.integers(0, dim_high), min_size=rank_low, max_size=rank_high)))


_HEAD_TYPES = [t.tag for t in ELEMENT_TYPES if t.kind is Kind.FLOAT and t.tier == 1]


@st.composite
def tensor_descriptors(
    draw: st.DrawFn,
    layout: str | Iterable[str] | None = None,
    scheme: str | Iterable[str] | None = None,
    *,
    quantized: bool | None = None,
    shard: bool | None = None,
    statistics: bool | None = None,
    composite_member: bool | None = None,
    private_type: bool | None = None,
    placement: st.SearchStrategy[tuple[int, int, int]] | None = None,
    tiled_depth: int | None = None,
    private_layout_id: int | None = None,
) -> TensorDescriptor:
    """Valid tensor descriptors that :func:`~hurray_decl.hurray.tensor.write_tensor_descriptor` writes and
    every conforming reader accepts.

    ``layout`` names one layout or several (:data:`LAYOUT_KINDS`; ``"private"`` too when
    ``private_layout_id`` names an id the caller registered); ``scheme`` one scheme or several
    (:data:`SCHEME_NAMES`). ``quantized`` True/False forces a quantization section on or off
    (None: either; a scheme implies True). ``shard``, ``statistics``, ``composite_member`` and
    ``private_type`` do the same for the shard, statistics, composite-member and extension-type
    sections wherever the layout allows them. ``placement`` draws the (device_tag, sync_mode,
    memory_class) every buffer shares (default :func:`placements`); ``tiled_depth`` fixes the
    tiled nesting depth (1-8).

    Buffer sizes are exact (parameter buffers, sparse and paged buffers) or at least what the
    layout addresses (dense data); :func:`buffers_for` draws matching contents.
    """
    kinds = names("layout", layout, LAYOUT_KINDS + (("private",) if private_layout_id is not None else ()),
                  ("private",))
    schemes = names("scheme", scheme, SCHEME_NAMES)
    if scheme is not None:
        quantized = True
    where = draw(placement if placement is not None else placements())
    pageable = set(schemes) & set(paged_schemes())
    if quantized:
        kinds = tuple(k for k in kinds if LAYOUT_STRATEGIES[k].quantizable
                      and (pageable or not LAYOUT_STRATEGIES[k].paged))
    if not kinds:
        raise ArgumentError("layout", "no layout fits these constraints", actual=layout,
                            expected="a layout the requested scheme and options allow")
    kind = draw(st.sampled_from(kinds))
    strategy = LAYOUT_STRATEGIES[kind]
    if _CATEGORY.get(kind) == "virtual":  # a composite head: no buffers, data type or member section
        part = strategy.part(draw, Request(kind, None, None, None, tiled_depth, private_layout_id))
        stats = draw(SECTIONS["statistics"]()) if maybe(draw, statistics) else None
        return TensorDescriptor(type_tag=draw(st.sampled_from(_HEAD_TYPES)), shape=part.shape, layout=part.layout,
                                statistics=stats)
    chosen = None
    if strategy.quantizable and (quantized or (quantized is None and draw(st.booleans()))):
        usable = [s for s in schemes if not strategy.paged or s in pageable]
        chosen = draw(st.sampled_from(usable)) if usable else None
    ext = None
    if chosen is not None:
        type_name = draw(st.sampled_from(STORAGE[chosen]))
        type_tag = BY_NAME[type_name].tag
    elif private_type is not False and (private_type or draw(st.integers(0, 4)) == 0):
        type_name, type_tag = None, draw(PRIVATE_VALUES)
        ext = draw(SECTIONS["extension_type"]())
    else:
        type_name = draw(st.sampled_from(sorted(BY_NAME)))
        type_tag = BY_NAME[type_name].tag
    part = strategy.part(draw, Request(kind, type_name, ext, chosen, tiled_depth, private_layout_id))
    shard_section = draw(SECTIONS["shard"](part.shape)) if shardable(kind) and maybe(draw, shard) else None
    nnz = getattr(part.layout, "nnz", None)
    return TensorDescriptor(
        type_tag=type_tag, layout_tag=part.layout_tag, shape=part.shape, byte_offset=part.byte_offset,
        layout=part.layout, buffers=_handles(draw, part.sizes, where), quantization=part.quantization,
        shard=shard_section, statistics=draw(SECTIONS["statistics"](nnz)) if maybe(draw, statistics) else None,
        extension_type=ext,
        composite_member=draw(SECTIONS["composite_member"]()) if maybe(draw, composite_member) else None,
    )


ANY = tensor_descriptors()
"""Every valid descriptor."""
DATA = tensor_descriptors(layout=WITH_DATA)
"""Every valid descriptor that has buffers."""


def layout_strategy(layout: Layout) -> LayoutStrategy | None:
    return LAYOUT_STRATEGIES.get(MODELS[type(layout)].name)


# ================================================================ buffer contents


def _codes(draw: st.DrawFn, t: Any, size: int, count: int | None) -> bytes:
    """Buffer 0: random bytes where every byte is a whole element that nothing constrains; zero
    codes where padding bits or padded blocks must be zero; float8_e8m0 avoids 0x00 and 0xFF."""
    element = t.element
    if element is not None and element.name == "float8_e8m0":
        return bytes(draw(st.lists(st.integers(1, 254), min_size=size, max_size=size)))
    if element is None or (element.bits >= 8 and not t.padded) or count is None:
        return draw(st.binary(min_size=size, max_size=size))
    return bytes(size)


def int32s(draw: st.DrawFn, count: int, low: int, high: int) -> bytes:
    values = draw(st.lists(st.integers(low, high), min_size=count, max_size=count))
    return b"".join(v.to_bytes(4, "little", signed=True) for v in values)


@st.composite
def buffers_for(draw: st.DrawFn, descriptor: TensorDescriptor) -> tuple[bytes, ...]:
    """Contents for every buffer of ``descriptor`` (one bytes object per table entry) that pass
    :func:`~hurray_decl.hurray.tensor.validate_buffers`.

    Parameter buffers hold what each scheme's data rules accept (finite non-zero scales,
    non-negative absmax for NF4, 0x01-0xFE exponents for MXFP) and zero points inside the
    storage range; sparse index buffers hold distinct in-range coordinates in the order the
    layout requires; block tables name existing pages; dense data has zeroed padding. Buffers
    are materialised in memory, so keep byte sizes small (the sizes :func:`tensor_descriptors`
    draws are).
    """
    from hurray_decl.hurray.tensor.context import check_descriptor

    d = descriptor
    t = check_descriptor(d)
    contents: list[bytes | None] = [None] * len(d.buffers)
    q = d.quantization
    by_index: dict[int, list[bytes]] = {}
    for p in t.params:
        size = p.size if p.size is not None else d.buffers[p.index].byte_size
        if p.field == "zero_point_buffer_index":
            bounds = t.element.zero_point_range if t.element is not None else None
            if bounds is None:
                raise ValueError("zero points need an integer storage type")
            chunk = int32s(draw, size // 4, *bounds)
        else:
            chunk = of(scheme_row(scheme_of(d).scheme_tag).name).parameters(draw, q, size)
        by_index.setdefault(p.index, []).append(chunk)
    for index, chunks in by_index.items():
        contents[index] = b"".join(chunks)
    strategy = layout_strategy(d.layout)
    if strategy is not None and strategy.contents is not None:
        strategy.contents(draw, d, contents)
    if contents and contents[0] is None:
        contents[0] = _codes(draw, t, d.buffers[0].byte_size, t.element_count(padded=True))
    for i, content in enumerate(contents):
        if content is None:
            contents[i] = draw(st.binary(min_size=d.buffers[i].byte_size, max_size=d.buffers[i].byte_size))
    return tuple(contents)  # type: ignore[arg-type]
