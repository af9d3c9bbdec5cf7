"""Rules that need buffer contents (DIGEST § 3.1.6, HD-15): scale values, zero-point ranges,
MXFP scale bytes, zeroed padding codes and padding bits, sparse and block-table invariants.

:func:`validate_buffers` re-runs the descriptor checks, then hands each scheme's
``check_data`` a :class:`DataContext` holding the buffers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from hurray_decl.errors import OpaqueDataAccess, RuleViolation
from hurray_decl.hurray.checks import DataChecks
from hurray_decl.hurray.quantization import scheme
from hurray_decl.hurray.schemes.quantization import OpaqueQuantization
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.element_types import BY_NAME, BY_TAG, ElementType
from hurray_decl.hurray.tables.storage import packing, unpack_codes
from hurray_decl.hurray.tables.tags import is_private
from hurray_decl.hurray.tensor.common import DYNAMIC
from hurray_decl.hurray.tensor.context import TensorContext, check_descriptor
from hurray_decl.hurray.tensor.layouts import (
    COO,
    CSC,
    CSF,
    CSR,
    BlockPaged,
    ColumnMajor,
    OpaqueLayout,
    PrivateLayout,
    RowMajor,
)
from hurray_decl.hurray.tensor.model import TensorDescriptor
from hurray_decl.lazy_modules import numpy as np

FLOAT8_E8M0 = BY_NAME["float8_e8m0"].tag
PADDING_BIT_RULES = {1: "HE-13", 2: "HE-17", 4: "HE-15", 6: "HE-19"}
"""The rule requiring zero unused bits in the last unit, by element width."""



def first_true(mask: np.ndarray) -> int | None:
    """The first index where ``mask`` holds, or None: a check's common case (nothing wrong)
    scans the mask once and builds no index array."""
    return int(np.argmax(mask)) if mask.any() else None


class DataContext:
    """Buffer contents next to the checked descriptor; what each scheme's ``check_data`` gets."""

    def __init__(self, tensor: TensorContext, buffers: Sequence[Any], *, padding: bool = True) -> None:
        self.t = tensor
        self.check_padding = padding
        self.d = tensor.d
        self.buffers = buffers
        self.element = tensor.element
        self._slices: dict[str, tuple[int, int, int]] = {}
        used: dict[int, int] = {}
        for p in tensor.params:
            start = used.get(p.index, 0)
            size = p.size if p.size is not None else len(buffers[p.index]) - start
            self._slices[p.field] = (p.index, start, size)
            used[p.index] = start + size

    def fail(self, code: str, message: str, index: int, what: str, position: int, width: int,
             actual: Any, expected: Any) -> NoReturn:
        """Refuse entry ``position`` of array ``what``; the offset is within buffer ``index``."""
        start = self._slices[what][1] if what in self._slices else 0
        raise RuleViolation(code, message, path=f"descriptor -> buffers -> {index} -> [{position}]",
                            offset=start + position * width, actual=actual, expected=expected)

    @property
    def known_element(self) -> ElementType:
        """The element type (:attr:`TensorContext.known_element`)."""
        return self.t.known_element

    def raw(self, field: str) -> memoryview:
        """The bytes of one parameter array; a shared buffer is [scales | zero_points] (HQ-BUF-05)."""
        index, start, size = self._slices[field]
        return memoryview(self.buffers[index])[start:start + size]

    def array(self, field: str, dtype: str) -> np.ndarray:
        """One parameter array, ``dtype`` an element type name (``bfloat16``) or a NumPy dtype (``<i4``)."""
        known = dtype in storage.NARROW_FLOATS or dtype in storage.WHOLE_BYTE
        return np.frombuffer(self.raw(field), dtype=storage.dtype(dtype) if known else np.dtype(dtype))

    def _where(self, field: str) -> int:
        return self._slices[field][0]

    def finite(self, values: np.ndarray, code: str, field: str) -> None:
        i = first_true(storage.not_finite(values))
        if i is not None:
            self.fail(code, "a scale is NaN or infinite", self._where(field), field, i, values.itemsize,
                      repr(float(values[i])), "a finite value")

    def nonzero(self, values: np.ndarray, code: str, field: str) -> None:
        i = first_true(storage.is_zero(values))
        if i is not None:
            self.fail(code, "a scale is zero", self._where(field), field, i, values.itemsize,
                      repr(float(values[i])), "a non-zero value")

    def not_negative(self, values: np.ndarray, code: str, field: str) -> None:
        i = first_true(np.asarray(values, dtype=np.float32) < 0)
        if i is not None:
            self.fail(code, "an absmax scale is negative", self._where(field), field, i, values.itemsize,
                      repr(float(values[i])), ">= 0")

    def zero_points(self, values: np.ndarray, code: str) -> None:
        bounds = None if self.element is None else self.element.zero_point_range
        if bounds is None:  # a private type (never interpreted, HE-08) or one without integer codes
            return
        low, high = bounds
        i = first_true((values < low) | (values > high))
        if i is not None:
            self.fail(code, "a zero point is outside the storage type's range",
                      self._where("zero_point_buffer_index"), "zero_point_buffer_index", i, 4,
                      int(values[i]), f"[{low}, {high}]")

    def forbidden_bytes(self, raw: Any, forbidden: tuple[int, ...], code: str, field: str) -> None:
        data = np.frombuffer(raw, dtype=np.uint8)
        i = first_true(np.logical_or.reduce([data == np.uint8(b) for b in forbidden]))  # isin sorts: slower
        if i is not None:
            self.fail(code, "a float8_e8m0 byte is 0x00 or 0xFF", self._where(field), field, i, 1,
                      f"0x{int(data[i]):02X}", "0x01-0xFE")

    def padding_zero(self, axis: int, block_size: int, code: str) -> None:
        """Codes of the padding of partial blocks are zero (HQ-PB-18), for row/column-major data."""
        t = self.t
        if (not self.check_padding or axis not in t.padded or not isinstance(t.layout, (RowMajor, ColumnMajor))
                or self.element is None):
            return
        padded = [t.padded.get(k, n) for k, n in enumerate(t.shape)]
        count = t.element_count(padded=True)
        size = t.packed(count)
        if count is None or size is None:  # a DYNAMIC dimension: nothing is addressed through it (HT-HDR-18)
            return
        start = self.d.byte_offset
        raw = np.frombuffer(self.buffers[0], dtype=np.uint8)[start:start + size]
        codes = unpack_codes(raw, self.element.bits, count)
        if isinstance(t.layout, ColumnMajor):
            grid = codes.reshape(padded[::-1])
            along = t.rank - 1 - axis
        else:
            grid = codes.reshape(padded)
            along = axis
        region = [slice(None)] * grid.ndim
        region[along] = slice(t.shape[axis], padded[axis])
        inside = np.zeros(grid.shape, dtype=bool)
        inside[tuple(region)] = True
        element = first_true((grid != 0) & inside)
        if element is not None:
            raise RuleViolation(code, "padding elements of a partial block are zero codes",
                                path=f"descriptor -> buffers -> 0 -> [{element}]",
                                offset=start + element * self.element.bits // 8,
                                actual=int(codes[element]), expected=0)


def sized_contents(d: TensorDescriptor, buffers: Sequence[Any]) -> list[memoryview]:
    """The buffers as byte views, one per buffer-table entry, each of its handle's byte_size (HT-BUFT-01)."""
    try:
        contents = [memoryview(b).cast("B") for b in buffers]
    except TypeError as exc:
        raise RuleViolation("HT-BUFT-01", "buffers are bytes-like objects", path="descriptor -> buffers") from exc
    if len(contents) != len(d.buffers):
        raise RuleViolation("HT-BUFT-01", "one content per buffer-table entry", path="descriptor -> buffer_count",
                            actual=len(contents), expected=len(d.buffers))
    for i, (content, handle) in enumerate(zip(contents, d.buffers)):
        if len(content) != handle.byte_size:
            raise RuleViolation("HT-BUFT-01", "the content length differs from the handle's byte_size",
                                path=f"descriptor -> buffers -> {i} -> byte_size", actual=len(content),
                                expected=handle.byte_size)
    return contents


def validate_buffers(descriptor: TensorDescriptor, buffers: Sequence[Any], *, permissive: bool = False,
                     padding: bool = True, checked: bool = False) -> DataContext:
    """Check the rules that need the contents of ``buffers`` (one bytes-like per table entry).

    Layout invariants of sparse and block-paged storage that the spec relaxes in permissive
    mode are skipped when ``permissive`` is true; value checks never are. ``padding=False``
    leaves out the zero-padding check of partial blocks (HQ-PB-18), which dequantization must
    not apply (HQ-PB-19). ``checked=True``: the descriptor is the result of its ``checked()``
    already, so it is not validated again. Returns the checked contents, from which parameter
    arrays are read.
    """
    if not isinstance(descriptor, TensorDescriptor):
        raise RuleViolation("HT-HDR-02", "validate_buffers takes a TensorDescriptor", path="descriptor",
                            actual=type(descriptor).__name__, expected="TensorDescriptor")
    d = descriptor if checked else descriptor.checked()  # a model_construct / model_copy result is validated again
    if isinstance(d.layout, OpaqueLayout) or (isinstance(d.layout, PrivateLayout) and not d.layout.registered):
        raise OpaqueDataAccess("HT-HDR-17", "the layout was not recognised; its data is never dereferenced",
                               path="descriptor -> layout_tag", actual=d.layout_tag)
    if d.type_tag not in BY_TAG and not is_private(d.type_tag):
        raise OpaqueDataAccess("HE-04", "the type tag was not recognised; its data is never interpreted",
                               path="descriptor -> type_tag", actual=f"0x{d.type_tag:02X}")
    if isinstance(d.quantization, OpaqueQuantization):
        raise OpaqueDataAccess("HQ-EXT-02", "the scheme was skipped in permissive mode; its data is never read",
                               path="descriptor -> quantization -> scheme_tag",
                               actual=f"0x{d.quantization.scheme_tag:02X}")
    contents = sized_contents(d, buffers)
    t = check_descriptor(d)
    data = DataContext(t, contents, padding=padding)
    q = d.quantization
    if q is not None:
        check: Callable[[Any, DataChecks], None] | None = scheme(q.scheme_tag).check_data
        if check is not None:
            check(q, data)  # a DataContext is the DataChecks a scheme's data rules see
    if d.type_tag in BY_TAG:  # private types are sized, never interpreted (HE-08)
        _element_checks(t, contents)
    if not permissive:
        _layout_invariants(t, contents)
    return data


def _contiguous(t: TensorContext) -> tuple[int, int] | None:
    """(start byte, element count) of data stored contiguously in buffer 0, when it is."""
    layout = t.layout
    if isinstance(layout, (RowMajor, ColumnMajor)):
        count = t.element_count(padded=True)
        return None if count is None else (t.d.byte_offset, count)
    if isinstance(layout, (COO, CSR, CSC, CSF)):
        return 0, layout.nnz
    if isinstance(layout, BlockPaged) and DYNAMIC not in t.shape[1:]:
        return 0, layout.num_pages * layout.page_size * t.shape[1] * t.shape[2]
    return None


def _element_checks(t: TensorContext, contents: Sequence[memoryview]) -> None:
    where = _contiguous(t)
    if where is None or not contents or t.element is None:  # private types: never interpreted (HE-08)
        return
    start, count = where
    bits = t.element.bits
    data = contents[0]
    code = PADDING_BIT_RULES.get(bits)
    unit = packing(bits)
    if code is not None and count % unit.elements:  # the last packing unit is partly used
        first = start + unit.byte_of(count)
        word = int.from_bytes(bytes(data[first:first + unit.size]), "little")
        used = (count % unit.elements) * bits
        mask = ((1 << (8 * unit.size)) - 1) & ~((1 << used) - 1)
        if word & mask:
            what = "byte" if unit.size == 1 else f"{unit.size}-byte group"
            raise RuleViolation(code, f"the unused bits of the last {what} are zero",
                                path="descriptor -> buffers -> 0", offset=first,
                                actual=f"0x{word:0{2 * unit.size}X}", expected=f"bits 0x{mask:0{2 * unit.size}X} clear")
    if t.d.type_tag == FLOAT8_E8M0:
        values = np.frombuffer(data[start:start + count], dtype=np.uint8)
        i = first_true((values == 0x00) | (values == 0xFF))
        if i is not None:
            raise RuleViolation("HE-26", "float8_e8m0 data never holds 0x00 or 0xFF",
                                path=f"descriptor -> buffers -> 0 -> [{i}]", offset=start + i,
                                actual=f"0x{int(values[i]):02X}", expected="0x01-0xFE")


def _u64(content: memoryview, code: str, index: int) -> np.ndarray:
    if len(content) % 8:
        raise RuleViolation(code, "an index array holds whole u64 entries", path=f"descriptor -> buffers -> {index}",
                            actual=len(content), expected="a multiple of 8 bytes")
    return np.frombuffer(content, dtype="<u8")


def _refuse(code: str, message: str, index: int, position: int, width: int, actual: Any, expected: Any) -> NoReturn:
    raise RuleViolation(code, message, path=f"descriptor -> buffers -> {index} -> [{position}]",
                        offset=position * width, actual=actual, expected=expected)


def _pointers(ptr: np.ndarray, end: int, codes: tuple[str, str, str], index: int) -> None:
    """A pointer array starts at 0, never decreases and ends at ``end``."""
    start_code, step_code, end_code = codes
    if ptr.size and ptr[0] != 0:
        _refuse(start_code, "the pointer array starts at 0", index, 0, 8, int(ptr[0]), 0)
    drops = first_true(ptr[1:] < ptr[:-1])
    if drops is not None:
        i = drops + 1
        _refuse(step_code, "the pointer array never decreases", index, i, 8, int(ptr[i]), f">= {int(ptr[i - 1])}")
    if ptr.size and int(ptr[-1]) != end:
        _refuse(end_code, "the pointer array ends at the entry count", index, ptr.size - 1, 8, int(ptr[-1]), end)


def _increasing_within(idx: np.ndarray, ptr: np.ndarray, code: str, index: int) -> None:
    """Entries strictly increase inside each segment that ``ptr`` delimits."""
    if idx.size < 2:
        return
    starts = np.zeros(idx.size + 1, dtype=bool)
    starts[ptr.astype(np.int64)] = True
    bad = first_true((idx[1:] <= idx[:-1]) & ~starts[1:idx.size])
    if bad is not None:
        i = bad + 1
        _refuse(code, "indices strictly increase within a segment", index, i, 8, int(idx[i]),
                f"> {int(idx[i - 1])}")


def _bounded(idx: np.ndarray, limit: int, code: str, index: int) -> None:
    if limit == DYNAMIC:
        return
    i = first_true(idx >= np.uint64(limit))
    if i is not None:
        _refuse(code, "an index is outside the dimension", index, i, 8, int(idx[i]), f"< {limit}")


def _layout_invariants(t: TensorContext, contents: Sequence[memoryview]) -> None:
    layout = t.layout
    shape = t.shape
    if isinstance(layout, COO) and len(contents) > 1 and layout.nnz and t.rank:
        coords = _u64(contents[1][:8 * layout.nnz * t.rank], "HT-LAY-20", 1).reshape(layout.nnz, t.rank)
        for k in range(t.rank):
            column = coords[:, k]
            if shape[k] != DYNAMIC:
                i = first_true(column >= np.uint64(shape[k]))
                if i is not None:
                    _refuse("HT-LAY-22", "a COO coordinate is outside the shape", 1, i * t.rank + k, 8,
                            int(column[i]), f"< {shape[k]}")
        if np.unique(coords, axis=0).shape[0] != layout.nnz:
            raise RuleViolation("HT-LAY-23", "two COO entries share a coordinate", path="descriptor -> buffers -> 1",
                                actual="a repeated coordinate", expected="distinct coordinates")
        if layout.is_sorted and layout.nnz > 1:
            a, b = coords[:-1], coords[1:]
            differ = a != b
            first = np.argmax(differ, axis=1)
            rows = np.arange(a.shape[0])
            ok = differ.any(axis=1) & (b[rows, first] > a[rows, first])
            bad = first_true(~ok)
            if bad is not None:
                i = bad + 1
                _refuse("HT-LAY-24", "is_sorted entries are in strictly increasing order", 1, i * t.rank, 8,
                        tuple(int(x) for x in coords[i]), f"> {tuple(int(x) for x in coords[i - 1])}")
    elif isinstance(layout, (CSR, CSC)) and len(contents) > 2:
        is_csr = not isinstance(layout, CSC)
        codes = ("HT-LAY-28", "HT-LAY-30", "HT-LAY-29", "HT-LAY-32", "HT-LAY-31") if is_csr else (
            "HT-LAY-36", "HT-LAY-38", "HT-LAY-37", "HT-LAY-40", "HT-LAY-39")
        extent = shape[layout.pointer_axis]  # arrays past their stated sizes are never read (HD-26)
        ptr = _u64(contents[2] if extent == DYNAMIC else contents[2][:8 * (extent + 1)], layout.rule, 2)
        idx = _u64(contents[1][:8 * layout.nnz], layout.rule, 1)
        _pointers(ptr, layout.nnz, codes[:3], 2)
        _bounded(idx, shape[1 if is_csr else 0], codes[3], 1)
        _increasing_within(idx, ptr, codes[4], 1)
    elif isinstance(layout, CSF) and len(contents) == 2 * t.rank + 1 + len({p.index for p in t.params}):
        _csf_invariants(t, layout, contents)
    elif isinstance(layout, BlockPaged) and len(contents) > 2:
        width = layout.index_width
        dtype = "<u4" if width == 4 else "<u8"
        if len(contents[1]) % width:
            raise RuleViolation("HT-LAY-53", "the block table holds whole entries", path="descriptor -> buffers -> 1",
                                actual=len(contents[1]), expected=f"a multiple of {width} bytes")
        table = np.frombuffer(contents[1], dtype=dtype)
        seq = np.frombuffer(contents[2][:(layout.num_seqs + 1) * width], dtype=dtype)
        _pointers(seq, table.size, ("HT-LAY-57", "HT-LAY-59", "HT-LAY-58"), 2)
        i = first_true(table >= np.uint64(layout.num_pages))
        if i is not None:
            _refuse("HT-LAY-60", "a block_table entry names no page", 1, i, width, int(table[i]),
                    f"< num_pages {layout.num_pages}")


def _csf_invariants(t: TensorContext, layout: CSF, contents: Sequence[memoryview]) -> None:
    parents = 1
    for level in range(t.rank):
        pos_index, crd_index = 2 * level + 1, 2 * level + 2
        pos_raw, crd_raw = contents[pos_index], contents[crd_index]
        if level == 0:  # the sizes the descriptor fixes are lower bounds: read only those (HD-26)
            pos_raw = pos_raw[:16]
        if level == t.rank - 1:
            crd_raw = crd_raw[:8 * layout.nnz]
        pos = _u64(pos_raw, "HT-LAY-42", pos_index)
        crd = _u64(crd_raw, "HT-LAY-42", crd_index)
        if layout.nnz == 0 and (crd.size or (level > 0 and pos.size != 1)):
            raise RuleViolation("HT-LAY-51", "an empty CSF tensor has pos_0 = [0, 0], pos_l = [0] and no coordinates",
                                path=f"descriptor -> buffers -> {crd_index if crd.size else pos_index}",
                                actual=f"{crd.size} coordinates, {pos.size} pointers", expected="the empty form")
        if pos.size != parents + 1 and not (layout.nnz == 0 and level > 0):
            raise RuleViolation("HT-LAY-48", "pos_l has one entry per parent node, plus one",
                                path=f"descriptor -> buffers -> {pos_index}", actual=pos.size, expected=parents + 1)
        _pointers(pos, crd.size, ("HT-LAY-46", "HT-LAY-47", "HT-LAY-48"), pos_index)
        _bounded(crd, t.shape[layout.mode_order[level]], "HT-LAY-50", crd_index)
        _increasing_within(crd, pos, "HT-LAY-49", crd_index)
        parents = crd.size
    if parents != layout.nnz:
        raise RuleViolation("HT-LAY-48", "the leaf level holds nnz coordinates",
                            path=f"descriptor -> buffers -> {2 * t.rank}", actual=parents, expected=layout.nnz)
