"""Rules that need more than one field's bytes: the tensor around each part (rank, shape,
type_tag, layout, flags) and the buffer table (DIGEST § 3.1, § 5.7-5.13; Appendix A order).

:class:`TensorContext` is what each scheme module's ``check_tensor`` receives: the scheme
decides which checks apply and with which rule codes, the context knows the tensor. Which
layout the tensor has, the context never asks: each layout model owns its checks (its methods,
called here stage by stage), and sees the tensor through
:class:`~hurray_decl.hurray.tensor.common.TensorChecks`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from hurray_decl.errors import RuleViolation, UnsupportedError
from hurray_decl.hurray.checks import TensorChecks
from hurray_decl.hurray.quantization import scheme
from hurray_decl.hurray.schemes.quantization import OpaqueQuantization
from hurray_decl.hurray.tables.element_types import BY_TAG, ElementType
from hurray_decl.hurray.tables.storage import packing
from hurray_decl.hurray.tables.tags import is_private
from hurray_decl.hurray.tensor.common import DYNAMIC
from hurray_decl.hurray.tensor.header import Flag
from hurray_decl.hurray.tensor.layouts import BlockPaged, Layout, LayoutRow, RowMajor, row_of
from hurray_decl.hurray.tensor.model import SECTION_FLAGS, TensorDescriptor
from hurray_decl.hurray.tensor.sections import Shard, Statistics

_EXTENSION_BIT = int(Flag.HAS_EXTENSION_TYPE)
"""The flag as an int: ``int & Flag`` would make a Flag object on every descriptor."""

_SIZERS: dict[int, Callable[[int], int]] = {}
"""The storage size function of each assigned type tag's packing, by tag."""

ASTRONOMICAL_BITS = 80
"""A power of two with this exponent exceeds every u64 byte_size; sizes beyond it are never built."""


@dataclass(frozen=True)
class Parameter:
    """One parameter buffer a scheme references."""

    field: str
    index: int
    size: int | None
    code: str


class TensorContext:
    """The tensor around the layout and quantization fields, with the checks they share."""

    def __init__(self, descriptor: TensorDescriptor, *, writer_rules: bool = False) -> None:
        self.d = descriptor
        self.writer_rules = writer_rules
        self.shape: tuple[int, ...] = descriptor.shape
        self.rank = len(descriptor.shape)
        self.layout: Layout = descriptor.layout
        self.row: LayoutRow = row_of(descriptor.layout)
        self.buffers = descriptor.buffers
        self.element: ElementType | None = BY_TAG.get(descriptor.type_tag)
        self._bytes = _SIZERS.get(descriptor.type_tag)
        """byte_size of the element type (its packing looked up once a type tag)."""
        if self._bytes is None and self.element is not None:
            self._bytes = _SIZERS[descriptor.type_tag] = packing(self.element.bits).bytes
        self.owned: int | None = None if self.row.owned is None else self.row.owned(self.rank)
        self.params: list[Parameter] = []
        self.padded: dict[int, int] = {}

    # ------------------------------------------------------------ errors and sizes

    def fail(self, code: str, message: str, path: str, *, actual: Any = None, expected: Any = None) -> NoReturn:
        raise RuleViolation(code, message, path=path, actual=actual, expected=expected)

    def static(self) -> bool:
        return DYNAMIC not in self.shape

    def packed(self, count: int | None) -> int | None:
        """Bytes of ``count`` contiguous elements of the tensor's type (HE-21, HT-SEC-34)."""
        if count is None:
            return None
        if self._bytes is not None:
            return self._bytes(count)
        if self.d.extension_type is not None:
            return self.d.extension_type.packed_size(count)
        return None

    def element_count(self, padded: bool = False) -> int | None:
        """Product of shape (1 for a scalar); partial blocks padded when asked (HD-12)."""
        if not self.static():
            return None
        count = 1
        for axis, size in enumerate(self.shape):
            count *= self.padded.get(axis, size) if padded else size
        return count

    def dense_extent(self, count: int | None, code: str) -> None:
        """byte_offset + size(count) must fit in buffer 0 (a lower bound, HD-26)."""
        need = self.packed(count)
        if need is None or not self.buffers:
            return
        if code == "HE-21" and self.element is None:
            code = "HT-SEC-34"  # a private type, sized from its extension section
        elif code == "HE-21" and self.padded:
            code = "HQ-PB-17"
        have = self.buffers[0].byte_size
        if self.d.byte_offset + need > have:
            self.fail(code, "buffer 0 is smaller than the elements the layout addresses",
                      "descriptor -> buffers -> 0 -> byte_size", actual=have,
                      expected=f">= {self.d.byte_offset + need} (byte_offset {self.d.byte_offset} + {need})")

    def dense_extent_pow2(self, exponent: int, code: str) -> None:
        """dense_extent for 2**exponent elements, without building a huge integer."""
        if self.packed(1) is None or not self.buffers:
            return
        if exponent > ASTRONOMICAL_BITS:
            self.fail(code, "buffer 0 is smaller than the elements the layout addresses",
                      "descriptor -> buffers -> 0 -> byte_size", actual=self.buffers[0].byte_size,
                      expected=f"room for 2^{exponent} elements")
        self.dense_extent(1 << exponent, code)

    def strided_extent(self, strides: tuple[int, ...]) -> None:
        """Every addressable element inside buffer 0 (HT-LAY-05); empty tensors are skipped."""
        if len(strides) != self.rank:
            self.fail("HT-LAY-03", "strides has one entry per dimension", "descriptor -> layout -> strides",
                      actual=len(strides), expected=self.rank)
        if not self.static() or not self.buffers or self.packed(1) is None:
            return
        extents = [self.padded.get(axis, size) for axis, size in enumerate(self.shape)]
        if 0 in extents:
            return
        lo = sum(min(0, s * (n - 1)) for s, n in zip(strides, extents))
        hi = sum(max(0, s * (n - 1)) for s, n in zip(strides, extents))
        extension = self.d.extension_type
        bits = self.element.bits if self.element is not None else extension.bit_width if extension is not None else None
        size = self.packed(hi + 1)
        if bits is None or size is None:  # unsized, as packed(1) found
            return
        start = 8 * (self.d.byte_offset + packing(bits).byte_of(lo))
        end = self.d.byte_offset + size
        have = self.buffers[0].byte_size
        if start < 0 or end > have:
            self.fail("HT-LAY-05", "strided addresses reach outside buffer 0",
                      "descriptor -> layout -> strides", actual=f"bytes {start // 8}..{end}",
                      expected=f"inside 0..{have}")

    def component_size(self, index: int, size: int | None, code: str, what: str,
                       writer_code: str = "HT-LAY-92") -> None:
        """A sparse or paged component array whose length the descriptor fixes: a lower bound
        for readers (``code``, HD-26 revised), exact for writers (``writer_code``, HT-LAY-92)."""
        if size is None or index >= len(self.buffers):
            return
        have = self.buffers[index].byte_size
        if have < size:
            self.fail(code, f"buffer {index} is too small ({what})",
                      f"descriptor -> buffers -> {index} -> byte_size", actual=have, expected=f">= {size}")
        if self.writer_rules and have != size:
            self.fail(writer_code, f"writers size buffer {index} exactly ({what})",
                      f"descriptor -> buffers -> {index} -> byte_size", actual=have, expected=size)

    # ------------------------------------------------------------ what schemes call

    @property
    def block_paged(self) -> BlockPaged | None:
        return self.layout.paging()

    @property
    def known_element(self) -> ElementType:
        """The element type, refused when the tag is private (its elements are sized, never read)."""
        if self.element is None:
            raise UnsupportedError("HE-08", "the elements of a private type are sized, never interpreted",
                                   path="descriptor -> type_tag", actual=f"0x{self.d.type_tag:02X}",
                                   expected="an assigned type tag")
        return self.element

    def storage_type(self, allowed: tuple[str, ...], code: str) -> None:
        """type_tag must be one of the scheme's storage types (DIGEST § 3.1.1)."""
        name = self.element.name if self.element is not None else None
        if name not in allowed:
            self.fail(code, "the scheme does not allow this storage type", "descriptor -> type_tag",
                      actual=f"0x{self.d.type_tag:02X}" + (f" ({name})" if name else ""),
                      expected=", ".join(allowed))

    def axis_extent(self, axis: int, rank_code: str, dynamic_code: str) -> int:
        """shape[axis], after refusing axis >= rank and a DYNAMIC axis."""
        if axis >= self.rank:
            self.fail(rank_code, "the quantized axis does not exist", "descriptor -> quantization -> axis",
                      actual=axis, expected=f"< rank {self.rank}")
        extent = self.shape[axis]
        if extent == DYNAMIC:
            self.fail(dynamic_code, "the quantized axis has no static size", f"descriptor -> shape -> {axis}",
                      actual="DYNAMIC", expected="a static size")
        return extent

    def outer(self, axis: int) -> int | None:
        """Product of every dimension but ``axis``; None when one of them is DYNAMIC."""
        count = 1
        for k, size in enumerate(self.shape):
            if k != axis:
                if size == DYNAMIC:
                    return None
                count *= size
        return count

    def blocks(self, axis: int, block_size: int) -> int | None:
        """num_blocks = ceil(S / K) x outer (HQ-PB-15); None when it depends on DYNAMIC."""
        outer = self.outer(axis)
        if outer is None:
            return None
        return -(-self.shape[axis] // block_size) * outer

    def pad_axis(self, axis: int, block_size: int) -> None:
        """Dense data reserves whole blocks along ``axis`` (HQ-PB-17, HD-12)."""
        if self.row.category != "dense":
            return
        extent = self.shape[axis]
        padded = -(-extent // block_size) * block_size
        if padded != extent:
            self.padded[axis] = padded

    def parameter(self, field: str, index: int, size: int | None, code: str) -> None:
        """Record a referenced parameter buffer and its exact byte size."""
        self.params.append(Parameter(field, index, size, code))

    # ------------------------------------------------------------ placement and counts

    def check_parameters(self) -> None:
        """Placement P-1, P-2, P-4 (HQ-BUF-01..03, 06), colocation, exact sizes, then the count."""
        count = len(self.buffers)
        for p in self.params:
            path = f"descriptor -> quantization -> {p.field}"
            if p.index >= count:
                self.fail("HQ-BUF-01", "the parameter buffer index is outside the buffer table", path,
                          actual=p.index, expected=f"< buffer_count {count}")
            if p.index == 0:
                self.fail("HQ-BUF-02", "a parameter buffer cannot be the data buffer", path,
                          actual=p.index, expected=f">= {self.owned if self.owned is not None else 1}")
            if self.owned is not None and p.index < self.owned:
                self.fail("HQ-BUF-03", "a parameter buffer cannot be one of the layout's own buffers", path,
                          actual=p.index, expected=f">= {self.owned}")
            if self.buffers[p.index].device_tag != self.buffers[0].device_tag:
                self.fail("HQ-BUF-06", "a parameter buffer lives on the data buffer's device",
                          f"descriptor -> buffers -> {p.index} -> device_tag",
                          actual=f"0x{self.buffers[p.index].device_tag:02X}",
                          expected=f"0x{self.buffers[0].device_tag:02X}")
        self.check_colocation({p.index for p in self.params})
        by_index: dict[int, list[Parameter]] = {}
        for p in self.params:
            by_index.setdefault(p.index, []).append(p)
        for index, group in by_index.items():
            sizes = [p.size for p in group if p.size is not None]
            if len(sizes) < len(group):
                continue
            need = sum(sizes)
            have = self.buffers[index].byte_size
            if have != need:
                code = "HQ-BUF-04" if len(group) > 1 else group[0].code
                named = " and ".join(p.field for p in group)
                parts = f" ({', '.join(f'{p.size} for {p.field}' for p in group)})" if len(group) > 1 else ""
                self.fail(code, f"buffer {index}, named by {named}, holds {have} bytes, but its parameters "
                          f"take exactly {need} bytes{parts}", f"descriptor -> buffers -> {index} -> byte_size",
                          actual=have, expected=need)
        self.check_count(len(by_index))

    def check_colocation(self, params: set[int]) -> None:
        """Every buffer on one device (HT-BUFT-24; parameters: HQ-BUF-06) and one memory class."""
        if len(self.buffers) < 2:  # none, or buffer 0 alone: nothing to compare
            return
        first = self.buffers[0]
        for i, handle in enumerate(self.buffers):
            if i not in params and handle.device_tag != first.device_tag:
                self.fail("HT-BUFT-24", "every buffer of a descriptor lives on one device",
                          f"descriptor -> buffers -> {i} -> device_tag", actual=f"0x{handle.device_tag:02X}",
                          expected=f"0x{first.device_tag:02X}")
        for i, handle in enumerate(self.buffers):
            if handle.memory_class != first.memory_class:
                self.fail("HT-BUFT-25", "every buffer of a descriptor has one memory class",
                          f"descriptor -> buffers -> {i} -> memory_class",
                          actual=f"0x{handle.memory_class:02X}", expected=f"0x{first.memory_class:02X}")

    def check_count(self, distinct_params: int | None) -> None:
        """buffer_count = L + distinct parameter buffers (P-6, HD-14)."""
        if self.owned is None or distinct_params is None:
            return
        want = self.owned + distinct_params
        count = len(self.buffers)
        if count == want:
            return
        code = self.row.count_code
        if code == "HT-BUFT-04" and self.d.quantization is not None:
            code = "HT-BUFT-05"
        self.fail(code, f"a {self.row.title} tensor has exactly {want} buffers here",
                  "descriptor -> buffer_count", actual=count, expected=want)


def check_descriptor(d: TensorDescriptor, *, writer_rules: bool = False) -> TensorContext:
    """Every rule that needs more than one field, stage by stage in the order of DIGEST
    Appendix A (the reader runs the same stages between the sections it reads).

    ``writer_rules`` adds the rules RULES.md gives writers alone (exact component sizes)."""
    t = TensorContext(d, writer_rules=writer_rules)
    flags = d.flags or 0
    _check_layout_tag(t)
    check_scalar(t.rank, d.layout_tag)
    check_layout_rank(t.row, t.rank)
    check_extension_flag(d.type_tag, flags)
    if d.layout.opaque:
        return t
    for name, flag, code in SECTION_FLAGS:
        if bool(flags & int(flag)) != (getattr(d, name) is not None):  # an int operand: no Flag object made
            t.fail(code, f"the {name} section is present exactly when {flag.name} is set",
                   "descriptor -> flags", actual=f"0x{flags:08X}",
                   expected=f"{flag.name} {'set' if getattr(d, name) is not None else 'clear'}")
    check_buffer_table(d.layout, len(d.buffers), d.byte_offset)
    check_quantization(t)
    check_shard(t, d.shard)
    check_statistics(t, d.statistics)
    check_composite_member(d.layout, d.composite_member, flags)
    check_extents(t)
    return t


def check_composite_member(layout: Layout, member: Any, flags: int) -> None:
    """Appendix A step 17: a composite head carries no member section (HT-SEC-38)."""
    layout.check_member(member, flags)


def check_scalar(rank: int, layout_tag: int | None) -> None:
    """Appendix A step 10, before the layout fields: a scalar is row-major (HT-HDR-21)."""
    if rank == 0 and layout_tag != RowMajor.tag:
        raise RuleViolation("HT-HDR-21", "a scalar uses the row-major layout", path="descriptor -> layout_tag",
                            actual=f"0x{layout_tag:02X}" if isinstance(layout_tag, int) else layout_tag,
                            expected="0x01")


def check_layout_rank(row: LayoutRow, rank: int) -> None:
    """Appendix A step 10, after the layout fields: sparse and paged layouts fix the rank."""
    if row.rank_ok is not None and not row.rank_ok(rank):
        raise RuleViolation(row.rank_code, f"wrong rank for the {row.title} layout", path="descriptor -> rank",
                            actual=rank, expected=row.rank_expected)


def check_buffer_table(layout: Layout, count: int, byte_offset: int) -> None:
    """Appendix A step 12, before the handles: who owns buffers, and byte_offset 0 where required."""
    row = row_of(layout)
    layout.check_buffer_table(count)
    if row.zero_byte_offset and byte_offset:
        raise RuleViolation("HT-HDR-20", f"byte_offset is {byte_offset}, but a {row.title} tensor must have "
                            "byte_offset 0", path="descriptor -> byte_offset", actual=byte_offset, expected=0)


def check_quantization(t: TensorContext) -> None:
    """Appendix A step 13: the quantization payload against its tensor, then placement,
    colocation and the buffer count."""
    d = t.d
    q = d.quantization
    d.layout.check_quantized(q is not None, d.flags or 0)
    if q is None:
        t.check_colocation(set())
        t.check_count(0)
    elif isinstance(q, OpaqueQuantization):
        t.check_colocation(set())
    else:
        row = scheme(q.scheme_tag)
        check: Callable[[Any, TensorChecks], None] | None = row.check_tensor
        if check is not None:
            check(q, t)  # a TensorContext is the TensorChecks a scheme's rules see
            t.check_parameters()
        else:
            if row.storage_types:
                t.storage_type(row.storage_types, "HQ-EXT-03")
            t.check_colocation(set())


def check_extents(t: TensorContext) -> None:
    """After every section: byte_offset and the buffer sizes the layout addresses."""
    d = t.d
    if d.buffers and d.byte_offset > d.buffers[0].byte_size:
        t.fail("HT-HDR-19", "byte_offset lies past the end of buffer 0", "descriptor -> byte_offset",
               actual=d.byte_offset, expected=f"<= {d.buffers[0].byte_size}")
    d.layout.check_tensor(t)


def check_extension_flag(type_tag: int, flags: int) -> None:
    """HAS_EXTENSION_TYPE is set exactly for private type tags (HT-SEC-19, HT-SEC-20)."""
    private_type = is_private(type_tag)
    extension = flags & _EXTENSION_BIT
    if private_type and not extension:
        raise RuleViolation("HT-SEC-19", "a private type tag needs the extension-type section",
                            path="descriptor -> flags", actual=f"0x{flags:08X}", expected="HAS_EXTENSION_TYPE set")
    if extension and not private_type:
        raise RuleViolation("HT-SEC-20", "HAS_EXTENSION_TYPE needs a private type tag (0xF0-0xFE)",
                            path="descriptor -> type_tag", actual=f"0x{type_tag:02X}", expected="0xF0-0xFE")


def _check_layout_tag(t: TensorContext) -> None:
    d = t.d
    tag = d.layout_tag
    layout = d.layout
    if not layout.matches_tag(tag):
        t.fail("HT-HDR-03", "layout_tag does not match the layout fields", "descriptor -> layout_tag",
               actual=tag, expected=type(layout).__name__)


def check_shard(t: TensorContext, shard: Shard | None) -> None:
    """Appendix A step 14."""
    if shard is None:
        return
    if t.row.shard_code is not None:
        t.fail(t.row.shard_code, f"a {t.row.title} tensor cannot be sharded", "descriptor -> flags",
               actual=f"0x{t.d.flags or 0:08X}", expected="HAS_SHARD clear")
    if len(shard.parent_shape) != t.rank or len(shard.shard_offset) != t.rank:
        t.fail("HT-SEC-03", "the shard section has rank entries in each array", "descriptor -> shard",
               actual=(len(shard.parent_shape), len(shard.shard_offset)), expected=t.rank)
    for name, values in (("shape", t.shape), ("shard -> parent_shape", shard.parent_shape),
                         ("shard -> shard_offset", shard.shard_offset)):
        for k, value in enumerate(values):
            if value == DYNAMIC:
                t.fail("HT-SEC-05", "a sharded tensor has no DYNAMIC dimension", f"descriptor -> {name} -> {k}",
                       actual="DYNAMIC", expected="a static size")
    for k, (offset, size, parent) in enumerate(zip(shard.shard_offset, t.shape, shard.parent_shape)):
        if offset + size > parent:
            t.fail("HT-SEC-04", "the shard reaches past its parent", f"descriptor -> shard -> shard_offset -> {k}",
                   actual=f"{offset} + {size}", expected=f"<= {parent}")


def check_statistics(t: TensorContext, stats: Statistics | None) -> None:
    """Appendix A step 15 (the field rules are in the declaration)."""
    if stats is None:
        return
    nnz = t.layout.stored_entries()
    if nnz is None:
        return
    if stats.known("nnz") is not None and stats.nnz != nnz:
        t.fail("HT-SEC-16", "statistics nnz differs from the layout's nnz", "descriptor -> statistics -> nnz",
               actual=stats.nnz, expected=nnz)
