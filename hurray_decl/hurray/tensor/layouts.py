"""Layout-specific fields (DIGEST § 5.4): one declaration per layout tag, registered in
:data:`LAYOUTS`, from which the reader's and the writer's dispatch derive.

Each layout supplies its fields as Construct declarations (which depend on the rank, its
``fields(rank)``; the model's pydantic fields are derived from them), its immutable model,
the number of buffers it owns (``L``, § 5.7) and its own checks against the tensor around it:
the methods of :class:`Layout`, which the tensor context calls stage by stage without knowing
which layout it holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar, Literal, Self

import construct as cs
from construct import this

from hurray_decl.declare.schema import Bytes, Record, Rule, zero_bytes
from hurray_decl.errors import RuleViolation
from hurray_decl.hurray.tables.codes import (
    OVERLAY_OPS,
    BlockTableIndexType,
    CombineOp,
    CompositionRule,
    KVRole,
    TileOrder,
    alternatives,
    legend,
)
from hurray_decl.hurray.tables.tags import PRIVATE_RANGE, is_private
from hurray_decl.hurray.tensor.common import (
    DYNAMIC,
    Section,
    TensorChecks,
    boolean,
    one_of,
    permissive,
    pow2_at_most,
)
from hurray_decl.registry import Table

MAX_TILED_DEPTH = 8
"""Tiled payloads allowed, the top one included; a 9th is refused (HD-20, HT-LAY-12)."""


class Layout(Section):
    """Base of every layout model. ``layout_tag`` is the tag the model is written under."""

    wire_name: ClassVar[str] = "layout"
    tag: ClassVar[int] = 0
    opaque: ClassVar[bool] = False
    """Fields not understood (permissive mode): no rule past the layout tag applies to the tensor."""

    def matches_tag(self, tag: int | None) -> bool:
        """Whether the descriptor's layout_tag is the one these fields are written under (HT-HDR-03)."""
        return tag == self.tag

    def check_buffer_table(self, count: int) -> None:
        """Appendix A step 12: only a composite head has an empty buffer table (HT-BUFT-02)."""
        if not count:
            raise RuleViolation("HT-BUFT-02", "only a composite head has an empty buffer table",
                                path="descriptor -> buffer_count", actual=0, expected=">= 1")

    def check_quantized(self, quantized: bool, flags: int) -> None:
        """Appendix A step 13, first: whether this layout may carry a quantization payload."""

    def check_member(self, member: Any, flags: int) -> None:
        """Appendix A step 17: whether this layout may carry a composite-member section."""

    def paging(self) -> BlockPaged | None:
        """The block-paged fields, when the tensor is a paged KV cache (schemes check their axis)."""
        return None

    def stored_entries(self) -> int | None:
        """The number of stored entries the layout declares (sparse layouts' nnz), else None."""
        return None

    def check_tensor(self, t: TensorChecks) -> None:
        """Rules that need the tensor around the layout fields (rank, shape, buffers)."""

    def wire_rank(self) -> int:
        """The rank the fields imply (0 when they do not depend on it)."""
        return 0

    def wire_declaration(self) -> cs.Construct | None:
        return row_of(self).struct(self.wire_rank())


# ---------------------------------------------------------------- dense: 0x01, 0x02, 0x03

class RowMajor(Layout):
    """Row-major (C order): no fields; stride[R-1] = 1 (HT-LAY-01)."""

    tag: ClassVar[int] = 0x01
    rule: ClassVar[str] = "HT-LAY-01"

    def check_tensor(self, t: TensorChecks) -> None:
        t.dense_extent(t.element_count(padded=True), "HE-21")


class ColumnMajor(Layout):
    """Column-major (Fortran order): no fields; stride[0] = 1 (HT-LAY-02)."""

    tag: ClassVar[int] = 0x02
    rule: ClassVar[str] = "HT-LAY-02"

    def check_tensor(self, t: TensorChecks) -> None:
        t.dense_extent(t.element_count(padded=True), "HE-21")


class Strided(Layout):
    """Explicit strides in logical elements; negative reverses an axis, 0 broadcasts it."""

    tag: ClassVar[int] = 0x03
    rule: ClassVar[str] = "HT-LAY-03"


    def wire_rank(self) -> int:
        return len(self.strides)

    @staticmethod
    def fields(rank: int) -> tuple[cs.Construct, ...]:
        return ("strides" / cs.Array(rank, cs.Int64sl)
                * "i64[rank]: step between neighbours along each axis, in logical elements",)

    def check_tensor(self, t: TensorChecks) -> None:
        t.strided_extent(self.strides)


# ---------------------------------------------------------------- tiled 0x04

OUTER_ORDERS = (TileOrder.ROW_MAJOR, TileOrder.COLUMN_MAJOR, TileOrder.STRIDED)
INNER_ORDERS = (*OUTER_ORDERS, TileOrder.NESTED)


def _tiled_fields(rank: int, depth: int) -> tuple[cs.Construct, ...]:
    def no_deeper(value: int, _: Any) -> bool:
        return depth < MAX_TILED_DEPTH or value != TileOrder.NESTED

    return (
        "tile_shape" / cs.Array(rank, Rule(cs.Int64ul, lambda v, _: v > 0, "HT-LAY-08", "> 0",
                                           "a tile_shape entry is 0"))
        * "u64[rank]: elements per tile along each axis; each > 0",
        "outer_layout" / cs.Default(one_of(cs.Int8ul, OUTER_ORDERS, "HT-LAY-09", alternatives(OUTER_ORDERS),
                                           "unknown order of the tile grid"), int(TileOrder.ROW_MAJOR))
        * f"order of the tile grid: {legend(OUTER_ORDERS)}",
        "inner_layout" / cs.Default(Rule(
            one_of(cs.Int8ul, INNER_ORDERS, "HT-LAY-10", alternatives(INNER_ORDERS),
                   "unknown order inside a tile"),
            no_deeper, "HT-LAY-12", f"at most {MAX_TILED_DEPTH} nested tiled payloads",
            "tiled nesting is deeper than the limit"), int(TileOrder.ROW_MAJOR))
        * f"order inside a tile: {legend(INNER_ORDERS)}",
        "reserved" / zero_bytes(2, "HT-LAY-11") * "_reserved: two zero bytes",
        "outer_strides" / cs.If(this.outer_layout == int(TileOrder.STRIDED), cs.Array(rank, cs.Int64sl))
        * f"i64[rank], only when outer_layout = {TileOrder.STRIDED.hex}: tile-grid strides, in tiles",
        "inner_strides" / cs.If(this.inner_layout == int(TileOrder.STRIDED), cs.Array(rank, cs.Int64sl))
        * f"i64[rank], only when inner_layout = {TileOrder.STRIDED.hex}: strides inside a tile, in elements",
        "nested" / cs.If(this.inner_layout == int(TileOrder.NESTED), cs.LazyBound(lambda: tiled_level(rank, depth + 1)))
        * f"only when inner_layout = {TileOrder.NESTED.hex}: the same tiled structure again, one level down",
    )


@cache
def tiled_level(rank: int, depth: int) -> cs.Struct:
    """The tiled payload at nesting ``depth`` (1 = the top one)."""
    return Record(*_tiled_fields(rank, depth))


class Tiled(Layout):
    """Tiles of ``tile_shape``; the grid and the tile interior each have an order."""

    tag: ClassVar[int] = 0x04
    rule: ClassVar[str] = "HT-LAY-07"

    nested: Tiled | None = None
    """The next tiled level (``cs.LazyBound`` in the declaration): the same model again."""

    def wire_rank(self) -> int:
        return len(self.tile_shape)

    @staticmethod
    def fields(rank: int) -> tuple[cs.Construct, ...]:
        return _tiled_fields(rank, 1)

    @classmethod
    def from_wire(cls, wire: Any) -> Self:
        return cls.parsed(dict(
            tile_shape=tuple(wire.tile_shape), outer_layout=wire.outer_layout,
            inner_layout=wire.inner_layout,
            outer_strides=None if wire.outer_strides is None else tuple(wire.outer_strides),
            inner_strides=None if wire.inner_strides is None else tuple(wire.inner_strides),
            nested=None if wire.nested is None else cls.from_wire(wire.nested),
        ))

    def to_wire(self) -> dict[str, Any]:
        values = super().to_wire()
        values["nested"] = None if self.nested is None else self.nested.to_wire()
        return values

    def check_tensor(self, t: TensorChecks) -> None:
        self.check_presence(t)
        if not t.static():
            return
        tiles = 1
        for size, tile in zip(t.shape, self.tile_shape):
            tiles *= -(-size // tile)
        per_tile = 1
        for tile in self.tile_shape:
            per_tile *= tile
        t.dense_extent(tiles * per_tile, "HT-LAY-13")

    def check_presence(self, t: TensorChecks, prefix: str = "layout") -> None:
        """Optional parts present exactly when their selector asks for them (HT-LAY-07)."""
        parts = (("outer_strides", self.outer_layout == TileOrder.STRIDED),
                 ("inner_strides", self.inner_layout == TileOrder.STRIDED),
                 ("nested", self.inner_layout == TileOrder.NESTED))
        for name, wanted in parts:
            if (getattr(self, name) is not None) != wanted:
                t.fail("HT-LAY-07", f"{name} is present exactly when its layout byte selects it",
                       f"descriptor -> {prefix} -> {name}",
                       actual="present" if getattr(self, name) is not None else "absent",
                       expected="present" if wanted else "absent")
        if self.nested is not None:
            self.nested.check_presence(t, prefix + " -> nested")



# ---------------------------------------------------------------- Morton 0x05

class Morton(Layout):
    """Z-order: bit b of index i_d goes to code bit b*R + d."""

    tag: ClassVar[int] = 0x05
    rule: ClassVar[str] = "HT-LAY-16"


    def wire_rank(self) -> int:
        return len(self.morton_bits)

    @staticmethod
    def fields(rank: int) -> tuple[cs.Construct, ...]:
        return ("morton_bits" / cs.Array(rank, Rule(cs.Int32ul, lambda v, _: v > 0, "HT-LAY-17", "> 0",
                                                    "a morton_bits entry is 0"))
                * "u32[rank]: index bits per axis; shape[k] <= 2^morton_bits[k]",)

    def check_tensor(self, t: TensorChecks) -> None:
        for k, (size, bits) in enumerate(zip(t.shape, self.morton_bits)):
            if size != DYNAMIC and size > pow2_at_most(bits, 65):
                t.fail("HT-LAY-18", "shape[k] exceeds 2^morton_bits[k]",
                       f"descriptor -> layout -> morton_bits -> {k}", actual=bits,
                       expected=f">= {max(size - 1, 0).bit_length()} for shape {size}")
        t.dense_extent_pow2(sum(self.morton_bits), "HT-LAY-19")


# ---------------------------------------------------------------- sparse 0x06-0x09

class COO(Layout):
    """Coordinate list: values (nnz) and u64 indices (nnz x rank)."""

    tag: ClassVar[int] = 0x06
    rule: ClassVar[str] = "HT-LAY-20"


    @staticmethod
    def fields(rank: int) -> tuple[cs.Construct, ...]:
        return (
            "nnz" / cs.Default(cs.Int64ul, 0) * "number of stored entries; may be 0",
            "is_sorted" / cs.Default(boolean("HT-LAY-20", "is_sorted"), 0)
            * "0x01: entries in strictly increasing lexicographic order; 0x00: any order",
            "reserved" / zero_bytes(7, "HT-LAY-21") * "_reserved: seven zero bytes",
        )

    def stored_entries(self) -> int | None:
        return int(self.nnz)

    def check_tensor(self, t: TensorChecks) -> None:
        t.component_size(0, t.packed(self.nnz), "HT-LAY-87", "values: nnz elements")
        t.component_size(1, 8 * self.nnz * t.rank, "HT-LAY-87", "indices: nnz x rank u64")


class Compressed(Layout):
    """A compressed rank-2 layout: values, indices along one axis (u64) and pointers (u64,
    ``shape[pointer_axis] + 1``) along the other. CSR and CSC are its two subclasses, siblings:
    a test for one never matches the other."""

    reserved_code: ClassVar[str]
    size_code: ClassVar[str]
    pointer_axis: ClassVar[int]

    @classmethod
    def compressed_fields(cls) -> tuple[cs.Construct, ...]:
        """The fields CSR and CSC share, the reserved bytes refused with each one's own rule."""
        return (
            "nnz" / cs.Default(cs.Int64ul, 0) * "number of stored entries; may be 0",
            "reserved" / zero_bytes(8, cls.reserved_code) * "_reserved: eight zero bytes",
        )

    def stored_entries(self) -> int | None:
        return int(self.nnz)

    def check_tensor(self, t: TensorChecks) -> None:
        t.component_size(0, t.packed(self.nnz), self.size_code, "values: nnz elements")
        t.component_size(1, 8 * self.nnz, self.size_code, "indices: nnz u64")
        extent = t.shape[self.pointer_axis]
        if extent != DYNAMIC:
            t.component_size(2, 8 * (extent + 1), self.size_code, f"pointers: shape[{self.pointer_axis}] + 1 u64")


class CSR(Compressed):
    """Compressed sparse rows: values, col_indices (u64), row_ptr (u64, shape[0] + 1)."""

    tag: ClassVar[int] = 0x07
    rule: ClassVar[str] = "HT-LAY-26"
    reserved_code: ClassVar[str] = "HT-LAY-27"
    size_code: ClassVar[str] = "HT-LAY-88"
    pointer_axis: ClassVar[int] = 0

    @classmethod
    def fields(cls, rank: int) -> tuple[cs.Construct, ...]:
        return cls.compressed_fields()


class CSC(Compressed):
    """Compressed sparse columns: values, row_indices (u64), col_ptr (u64, shape[1] + 1)."""

    tag: ClassVar[int] = 0x08
    rule: ClassVar[str] = "HT-LAY-34"
    reserved_code: ClassVar[str] = "HT-LAY-35"
    size_code: ClassVar[str] = "HT-LAY-89"
    pointer_axis: ClassVar[int] = 1

    @classmethod
    def fields(cls, rank: int) -> tuple[cs.Construct, ...]:
        return cls.compressed_fields()


def _is_permutation(value: Any, ctx: Any) -> bool:
    return permissive(ctx) or sorted(value) == list(range(len(value)))


class CSF(Layout):
    """Compressed sparse fibers: values, then pos_l / crd_l per level (2R + 1 buffers)."""

    tag: ClassVar[int] = 0x09
    rule: ClassVar[str] = "HT-LAY-42"


    def wire_rank(self) -> int:
        return len(self.mode_order)

    @staticmethod
    def fields(rank: int) -> tuple[cs.Construct, ...]:
        return (
            "nnz" / cs.Default(cs.Int64ul, 0) * "number of stored entries; may be 0",
            "mode_order" / Rule(cs.Array(rank, cs.Int32ul), _is_permutation, "HT-LAY-44",
                                f"a permutation of 0..{rank - 1}", "mode_order is not a permutation")
            * "u32[rank]: the dimension stored at each level; a permutation of 0..rank-1",
            "reserved" / zero_bytes(8, "HT-LAY-43") * "_reserved: eight zero bytes",
        )

    def stored_entries(self) -> int | None:
        return int(self.nnz)

    def check_tensor(self, t: TensorChecks) -> None:
        t.component_size(0, t.packed(self.nnz), "HT-LAY-90", "values: nnz elements")
        t.component_size(1, 16, "HT-LAY-90", "pos_0: two u64")
        t.component_size(2 * t.rank, 8 * self.nnz, "HT-LAY-90", "leaf coordinates: nnz u64")


# ---------------------------------------------------------------- block-paged 0x0A

class BlockPaged(Layout):
    """A paged KV cache [total_tokens, num_heads, head_dim]: page_pool, block_table, seq_ptr."""

    tag: ClassVar[int] = 0x0A
    rule: ClassVar[str] = "HT-LAY-53"


    @staticmethod
    def fields(rank: int) -> tuple[cs.Construct, ...]:
        return (
            "page_size" / Rule(cs.Int32ul, lambda v, _: v >= 1, "HT-LAY-55", ">= 1", "page_size is 0")
            * "tokens per page; >= 1",
            "num_pages" / cs.Int64ul * "physical pages in the pool",
            "paged_axis" / cs.Default(Rule(cs.Int32ul, lambda v, ctx: v == 0 or permissive(ctx), "HT-LAY-56", 0,
                                           "only axis 0 (tokens) is paged"), 0)
            * "the paged logical axis; must be 0",
            "num_seqs" / cs.Default(cs.Int32ul, 0) * "number of sequences; may be 0",
            "kv_role" / cs.Default(one_of(cs.Int8ul, KVRole.codes(), "HT-LAY-53", alternatives(KVRole),
                                          "unknown kv_role"), int(KVRole.FUSED))
            * legend(KVRole),
            "layer_index" / cs.Default(cs.Int32ul, 0xFFFF_FFFF) * "model layer; 0xFFFFFFFF means not tied to a layer",
            "block_table_index_type" / cs.Default(one_of(cs.Int8ul, BlockTableIndexType.codes(), "HT-LAY-53",
                                                         alternatives(BlockTableIndexType), "unknown index type"),
                                                  int(BlockTableIndexType.U32))
            * f"element type of buffers 1 and 2: {legend(BlockTableIndexType)}",
            "reserved" / zero_bytes(6, "HT-LAY-54") * "_reserved: six zero bytes",
        )

    def paging(self) -> BlockPaged | None:
        return self

    @property
    def index_width(self) -> int:
        return BlockTableIndexType(self.block_table_index_type).width

    def check_tensor(self, t: TensorChecks) -> None:
        heads, dim = t.shape[1], t.shape[2]
        if DYNAMIC not in (heads, dim):
            count = self.num_pages * self.page_size * heads * dim
            t.component_size(0, t.packed(count), "HT-LAY-91", "page_pool: num_pages x page_size x heads x dim",
                             "HT-LAY-61")
        t.component_size(2, (self.num_seqs + 1) * self.index_width, "HT-LAY-91", "seq_ptr: num_seqs + 1 entries")
        if t.writer_rules and self.block_table_index_type == BlockTableIndexType.U32 and self.num_pages > 1 << 32:
            t.fail("HT-LAY-62", "page ids above 0xFFFFFFFF need the u64 block table",
                   "descriptor -> layout -> block_table_index_type", actual=BlockTableIndexType.U32.hex,
                   expected=BlockTableIndexType.U64.hex)


# ---------------------------------------------------------------- composite head 0x0B

OPEN_COMPOSITE = 0xFFFF_FFFF


def _public_rule(value: int, _: Any) -> bool:
    return CompositionRule.has(value) or is_private(value)


def _combine_ok(value: int, ctx: Any) -> bool:
    if ctx.composition_rule == CompositionRule.OVERLAY:
        return True
    return value == CombineOp.NONE


def _overlay_op(value: int, ctx: Any) -> bool:
    return ctx.composition_rule != CompositionRule.OVERLAY or value in OVERLAY_OPS


_NOT_OVERLAY = " and ".join(rule.title for rule in CompositionRule if rule != CompositionRule.OVERLAY)
_OVERLAY_OPS = alternatives(OVERLAY_OPS, form="{hex} {title}")


class CompositeHead(Layout):
    """A virtual tensor made of the next ``member_count`` descriptors; it owns no buffer."""

    tag: ClassVar[int] = 0x0B
    rule: ClassVar[str] = "HT-LAY-68"


    @staticmethod
    def fields(rank: int) -> tuple[cs.Construct, ...]:
        return (
            "composition_rule" / Rule(
                Rule(cs.Int8ul, _public_rule, "HT-LAY-69", alternatives(CompositionRule),
                     "reserved or invalid composition rule"),
                lambda v, _: not is_private(v), "HT-LAY-70", alternatives(CompositionRule),
                "private composition rules need an agreement; none is registered")
            * legend(CompositionRule),
            "combine_op" / cs.Default(Rule(
                Rule(cs.Int8ul, _combine_ok, "HT-LAY-71", CombineOp.NONE.hex, f"{_NOT_OVERLAY} take no combine_op"),
                _overlay_op, "HT-LAY-72", _OVERLAY_OPS, "unknown overlay combine_op"), int(CombineOp.NONE))
            * f"{CombineOp.NONE.hex} for {_NOT_OVERLAY}; {_OVERLAY_OPS} for {CompositionRule.OVERLAY.title}",
            "reserved" / zero_bytes(2, "HT-LAY-73") * "_reserved: two zero bytes",
            "member_count" / Rule(
                Rule(cs.Int32ul, lambda v, _: v != OPEN_COMPOSITE, "HT-LAY-74", "a definite count",
                     "open composites (0xFFFFFFFF) are reserved"),
                lambda v, ctx: v > 0 or ctx.composition_rule != CompositionRule.OVERLAY, "HT-LAY-75", ">= 1",
                "an overlay needs its base member")
            * "number of member descriptors that follow",
        )

    def check_buffer_table(self, count: int) -> None:
        if count:
            raise RuleViolation("HT-BUFT-03", "a composite head owns no buffers", path="descriptor -> buffer_count",
                                actual=count, expected=0)

    def check_quantized(self, quantized: bool, flags: int) -> None:
        if quantized:
            raise RuleViolation("HT-LAY-76", "a composite head is never quantized", path="descriptor -> flags",
                                actual=f"0x{flags:08X}", expected="HAS_QUANTIZATION clear")

    def check_member(self, member: Any, flags: int) -> None:
        if member is not None:
            raise RuleViolation("HT-SEC-38", "a composite head is not itself a member section carrier",
                                path="descriptor -> flags", actual=f"0x{flags:08X}",
                                expected="HAS_COMPOSITE_MEMBER clear")


# ---------------------------------------------------------------- Hilbert 0x40

class Hilbert(Layout):
    """Hilbert curve order over a hypercube of side 2^hilbert_order."""

    tag: ClassVar[int] = 0x40
    rule: ClassVar[str] = "HT-LAY-77"


    @staticmethod
    def fields(rank: int) -> tuple[cs.Construct, ...]:
        return (
            "hilbert_order" / Rule(cs.Int32ul, lambda v, _: v > 0, "HT-LAY-78", "> 0", "hilbert_order is 0")
            * "bits per coordinate; every shape[k] = 2^hilbert_order",
            "hilbert_rank" / Rule(cs.Int32ul, lambda v, _: v >= 2, "HT-LAY-80", ">= 2",
                                  "a Hilbert curve needs two dimensions or more")
            * "dimensions of the curve; equals rank",
        )

    def check_tensor(self, t: TensorChecks) -> None:
        if self.hilbert_rank != t.rank:
            t.fail("HT-LAY-79", "hilbert_rank differs from rank", "descriptor -> layout -> hilbert_rank",
                   actual=self.hilbert_rank, expected=t.rank)
        side = pow2_at_most(self.hilbert_order, 65)
        for k, size in enumerate(t.shape):
            if size != side:
                t.fail("HT-LAY-81", "every dimension of a Hilbert tensor is 2^hilbert_order",
                       f"descriptor -> shape -> {k}", actual=size,
                       expected=f"2^{self.hilbert_order}")
        t.dense_extent_pow2(t.rank * self.hilbert_order, "HT-LAY-82")


# ---------------------------------------------------------------- private 0xF0-0xFE

PRIVATE_LAYOUTS: Table[int, str] = Table("private layout", "HT-LAY-85")
"""extension_layout_id values agreed out of band (HD-23); empty unless a caller registers one."""


def _known_layout_id(value: int, ctx: Any) -> bool:
    return value in PRIVATE_LAYOUTS or permissive(ctx)


class PrivateLayout(Layout):
    """A private extension layout: an agreed id and opaque bytes (HT-LAY-84)."""

    tag: ClassVar[int] = PRIVATE_RANGE.first
    rule: ClassVar[str] = "HT-LAY-84"


    @staticmethod
    def fields(rank: int) -> tuple[cs.Construct, ...]:
        return (
            "extension_layout_id" / Rule(cs.Int64ul, _known_layout_id, "HT-LAY-85",
                                         "a registered extension_layout_id",
                                         "private layout id not agreed out of band")
            * "identifies the private layout; meaningful only by agreement",
            "extension_data_length" / cs.Rebuild(cs.Int32ul, cs.len_(this.extension_data))
            * "n: bytes of extension_data",
            "extension_data" / cs.Default(Bytes(this.extension_data_length), b"") * "u8[n]: opaque layout data",
        )

    def matches_tag(self, tag: int | None) -> bool:
        return tag is not None and is_private(tag)

    @property
    def registered(self) -> bool:
        return self.extension_layout_id in PRIVATE_LAYOUTS


class OpaqueLayout(Layout):
    """An unrecognised layout tag accepted in permissive mode (HT-HDR-17).

    Where its fields end cannot be known, so everything after byte_offset up to
    descriptor_length is kept here unread; the data is never dereferenced.
    """

    tag: ClassVar[int] = 0x00
    rule: ClassVar[str] = "HT-HDR-17"
    opaque: ClassVar[bool] = True

    payload: bytes = b""

    def matches_tag(self, tag: int | None) -> bool:
        return tag is not None

    def wire_declaration(self) -> None:
        return None


# ---------------------------------------------------------------- the table

@dataclass(frozen=True)
class LayoutRow:
    """Everything that varies by layout tag."""

    tag: int
    name: str
    title: str
    category: str
    model: type[Layout]
    owned: Callable[[int], int] | None
    count_code: str
    rank_ok: Callable[[int], bool] | None = None
    rank_code: str = ""
    rank_expected: str = ""
    zero_byte_offset: bool = False
    shard_code: str | None = None
    numpy_order: Literal["C", "F"] | None = None
    """The NumPy order (``"C"``, ``"F"``) the layout stores its elements in, when it is one: its
    bytes are then an array of the shape with those strides (``from_numpy``, DLPack)."""

    def fields(self, rank: int) -> tuple[cs.Construct, ...]:
        build = getattr(self.model, "fields", None)
        return () if build is None else build(rank)

    def struct(self, rank: int) -> cs.Struct:
        return _layout_struct(self.tag, rank)


LAYOUTS: Table[int, LayoutRow] = Table("layout", "HT-HDR-16")


@cache
def _layout_struct(tag: int, rank: int) -> cs.Struct:
    row = layout_row(tag)
    return Record(*row.fields(rank))


def layout_row(tag: int) -> LayoutRow:
    """The row for an assigned tag; every private tag shares the private row."""
    if is_private(tag):
        return _PRIVATE_ROW
    row = LAYOUTS.get(tag)
    if row is None:
        raise KeyError(tag)
    return row


def _one(rank: int) -> int:
    return 1


for _row in (
    LayoutRow(RowMajor.tag, "row_major", "row-major", "dense", RowMajor, _one, "HT-BUFT-04", numpy_order="C"),
    LayoutRow(ColumnMajor.tag, "column_major", "column-major", "dense", ColumnMajor, _one, "HT-BUFT-04",
              numpy_order="F"),
    LayoutRow(Strided.tag, "strided", "strided", "dense", Strided, _one, "HT-BUFT-04"),
    LayoutRow(Tiled.tag, "tiled", "tiled", "dense", Tiled, _one, "HT-BUFT-04"),
    LayoutRow(Morton.tag, "morton", "Morton", "dense", Morton, _one, "HT-BUFT-04"),
    LayoutRow(COO.tag, "coo", "COO", "sparse", COO, lambda r: 2, "HT-BUFT-06", zero_byte_offset=True),
    LayoutRow(CSR.tag, "csr", "CSR", "sparse", CSR, lambda r: 3, "HT-BUFT-07",
              lambda r: r == 2, "HT-LAY-25", "2", zero_byte_offset=True),
    LayoutRow(CSC.tag, "csc", "CSC", "sparse", CSC, lambda r: 3, "HT-BUFT-08",
              lambda r: r == 2, "HT-LAY-33", "2", zero_byte_offset=True),
    LayoutRow(CSF.tag, "csf", "CSF", "sparse", CSF, lambda r: 2 * r + 1, "HT-BUFT-09",
              lambda r: r >= 3, "HT-LAY-41", ">= 3", zero_byte_offset=True, shard_code="HT-SEC-07"),
    LayoutRow(BlockPaged.tag, "block_paged", "block-paged", "indirect", BlockPaged, lambda r: 3, "HT-BUFT-10",
              lambda r: r == 3, "HT-LAY-52", "3", zero_byte_offset=True, shard_code="HT-SEC-06"),
    LayoutRow(CompositeHead.tag, "composite_head", "composite head", "virtual", CompositeHead, lambda r: 0,
              "HT-BUFT-03", zero_byte_offset=True),
    LayoutRow(Hilbert.tag, "hilbert", "Hilbert curve", "dense", Hilbert, _one, "HT-BUFT-04"),
):
    LAYOUTS.register(_row.tag, _row)

_PRIVATE_ROW = LayoutRow(PrivateLayout.tag, "private", "private extension layout", "private", PrivateLayout,
                         None, "HT-LAY-85")
_OPAQUE_ROW = LayoutRow(OpaqueLayout.tag, "opaque", "unrecognised layout", "opaque", OpaqueLayout, None, "HT-HDR-17")

MODELS: dict[type, LayoutRow] = {row.model: row for row in LAYOUTS}
MODELS[PrivateLayout] = _PRIVATE_ROW
MODELS[OpaqueLayout] = _OPAQUE_ROW


def row_of(layout: Layout) -> LayoutRow:
    """The row of a layout model instance."""
    return MODELS[type(layout)]
