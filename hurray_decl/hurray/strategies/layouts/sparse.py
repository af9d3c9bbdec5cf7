"""Sparse layouts: COO (0x06), CSR (0x07), CSC (0x08) and CSF (0x09): their parts, the
contents of their index buffers, and their descriptor and data mutants."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import assume, strategies as st

from hurray_decl.hurray.strategies.mutants import data_mutant, layout_field, mutant, reserved_field
from hurray_decl.hurray.strategies.patching import patched
from hurray_decl.hurray.strategies.tensor import (
    LAYOUT_ROWS,
    LayoutStrategy,
    Part,
    Request,
    buffers_for,
    layout_as,
    register_layout,
    tensor_descriptors,
)
from hurray_decl.hurray.strategies.values import product
from hurray_decl.hurray.tensor import COO, CSC, CSF, CSR, TensorDescriptor, write_tensor_descriptor
from hurray_decl.hurray.tensor.layouts import Compressed

U64 = 8
"""Bytes of one index: sparse index arrays are u64 (DIGEST § 5.4)."""


def u64s(values: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(values)}Q", *values)


def u64_list(raw: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(raw) // U64}Q", raw))


def _csf_counts(draw: st.DrawFn, shape: tuple[int, ...], mode_order: tuple[int, ...]) -> list[int]:
    """Node counts per CSF level: n_0 <= d_0, n_(l-1) <= n_l <= n_(l-1) * d_l (each node has a child)."""
    dims = [shape[m] for m in mode_order]
    if 0 in dims or not draw(st.booleans()):
        return [0] * len(dims)
    counts = [draw(st.integers(1, min(dims[0], 3)))]
    for d in dims[1:]:
        counts.append(draw(st.integers(counts[-1], min(counts[-1] * d, counts[-1] + 3))))
    return counts


def _rank_bounds(kind: str) -> tuple[int, int]:
    """The ranks drawn for ``kind``: the ones its row requires, 1-3 when it requires none."""
    row = LAYOUT_ROWS[kind]
    ranks = [r for r in range(1, 4) if row.rank_ok is None or row.rank_ok(r)]
    return ranks[0], ranks[-1]


def _sparse(kind: str) -> Callable[[st.DrawFn, Request], Part]:
    def part(draw: st.DrawFn, want: Request) -> Part:
        shape = want.shape(draw, *_rank_bounds(kind), dim_high=5)
        capacity = product(shape)
        if kind == "csf":
            mode_order = tuple(draw(st.permutations(range(len(shape)))))
            counts = _csf_counts(draw, shape, mode_order)
            nnz = counts[-1]
            layout: Any = CSF(nnz=nnz, mode_order=mode_order)
            if nnz:  # values, pos_0, crd_0, then pos_l and crd_l per level
                middle = [s for level in range(1, len(shape))
                          for s in (U64 * (counts[level - 1] + 1), U64 * counts[level])]
                sizes: tuple[int, ...] = (want.size_of(nnz), 2 * U64, U64 * counts[0], *middle)
            else:
                sizes = (0, 2 * U64, 0, *([U64, 0] * (len(shape) - 1)))
        else:
            nnz = draw(st.integers(0, min(capacity, 5)))
            if kind == "coo":
                layout = COO(nnz=nnz, is_sorted=draw(st.integers(0, 1)))
                sizes = (want.size_of(nnz), U64 * nnz * len(shape))
            else:
                layout = (CSR if kind == "csr" else CSC)(nnz=nnz)
                sizes = (want.size_of(nnz), U64 * nnz, U64 * (shape[layout.pointer_axis] + 1))
        q, params, _ = want.quantization(draw, shape, len(sizes))
        return Part(shape, layout, sizes + params, 0, q)
    return part


def _coo_contents(draw: st.DrawFn, d: TensorDescriptor, contents: list) -> None:
    layout, shape = layout_as(d, COO), d.shape
    if len(d.buffers) < 2:
        return
    cells = draw(st.lists(st.integers(0, max(product(shape) - 1, 0)), min_size=layout.nnz, max_size=layout.nnz,
                          unique=True)) if layout.nnz else []
    if layout.is_sorted:
        cells.sort()
    coords: list[int] = []
    for cell in cells:
        point = []
        for n in reversed(shape):
            point.append(cell % n)
            cell //= n
        coords.extend(reversed(point))
    contents[1] = u64s(coords)


def _compressed_contents(draw: st.DrawFn, d: TensorDescriptor, contents: list) -> None:
    layout, shape = layout_as(d, Compressed), d.shape
    if len(d.buffers) < 3:
        return
    rows = shape[layout.pointer_axis]
    cols = shape[1 - layout.pointer_axis]
    cells = sorted(draw(st.lists(st.integers(0, max(rows * cols - 1, 0)), min_size=layout.nnz,
                                 max_size=layout.nnz, unique=True))) if layout.nnz else []
    ptr = [0] * (rows + 1)
    for cell in cells:
        ptr[cell // cols + 1] += 1
    for r in range(rows):
        ptr[r + 1] += ptr[r]
    contents[1] = u64s([cell % cols for cell in cells])
    contents[2] = u64s(ptr)


def _csf_contents(draw: st.DrawFn, d: TensorDescriptor, contents: list) -> None:
    layout, shape = layout_as(d, CSF), d.shape
    rank = len(shape)
    if layout.nnz == 0:
        contents[1] = u64s([0, 0])
        for level in range(rank):
            contents[2 * level + 2] = b""
            if level:
                contents[2 * level + 1] = u64s([0])
        return
    parents = 1
    for level in range(rank):
        total = d.buffers[2 * level + 2].byte_size // U64
        dim = shape[layout.mode_order[level]]
        extra = total - parents
        per = [1] * parents
        for i in range(parents):  # each node has one child, then spread the rest
            later = (parents - i - 1) * (dim - 1)  # what the nodes after this one can take
            give = draw(st.integers(max(0, extra - later), min(extra, dim - 1)))
            per[i] += give
            extra -= give
        ptr, crd = [0], []
        for count in per:
            crd.extend(sorted(draw(st.lists(st.integers(0, dim - 1), min_size=count, max_size=count, unique=True))))
            ptr.append(ptr[-1] + count)
        contents[2 * level + 1] = u64s(ptr)
        contents[2 * level + 2] = u64s(crd)
        parents = total


register_layout(LayoutStrategy("coo", _sparse("coo"), quantizable=True, contents=_coo_contents))
register_layout(LayoutStrategy("csr", _sparse("csr"), quantizable=True, contents=_compressed_contents))
register_layout(LayoutStrategy("csc", _sparse("csc"), quantizable=True, contents=_compressed_contents))
register_layout(LayoutStrategy("csf", _sparse("csf"), quantizable=True, contents=_csf_contents))

# ================================================================ descriptor mutants


@mutant("HT-LAY-20")
def _coo_sorted() -> st.SearchStrategy[bytes]:
    return layout_field("coo", "is_sorted", st.integers(2, 255))


def _reserved(kind: str) -> Callable[[], st.SearchStrategy[bytes]]:
    return lambda: reserved_field(tensor_descriptors(layout=kind), "layout.reserved")


mutant("HT-LAY-21")(_reserved("coo"))
mutant(CSR.reserved_code)(_reserved("csr"))
mutant(CSC.reserved_code)(_reserved("csc"))
mutant("HT-LAY-43")(_reserved("csf"))


def undersized(kind: str, indices: Callable[[TensorDescriptor], list[int]], **kw: Any) -> st.SearchStrategy[bytes]:
    """A valid descriptor with one component array of fixed size made smaller (HD-26: lower bounds)."""
    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        d = draw(tensor_descriptors(layout=kind, **kw).filter(
            lambda d: any(d.buffers[i].byte_size for i in indices(d))))
        index = draw(st.sampled_from([i for i in indices(d) if d.buffers[i].byte_size]))
        return patched(write_tensor_descriptor(d), f"buffers[{index}].byte_size",
                       draw(st.integers(0, d.buffers[index].byte_size - 1)))
    return build()


@mutant("HT-LAY-87")
def _coo_sizes() -> st.SearchStrategy[bytes]:
    return undersized("coo", lambda d: [0, 1])


@mutant(CSR.size_code)
def _csr_sizes() -> st.SearchStrategy[bytes]:
    return undersized("csr", lambda d: [0, 1, 2])


@mutant(CSC.size_code)
def _csc_sizes() -> st.SearchStrategy[bytes]:
    return undersized("csc", lambda d: [0, 1, 2])


@mutant("HT-LAY-90")
def _csf_sizes() -> st.SearchStrategy[bytes]:
    return undersized("csf", lambda d: [0, 1, 2 * d.rank])


@mutant("HT-LAY-44")
@st.composite
def _mode_order(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="csf"))
    k = draw(st.integers(0, d.rank - 1))
    order = layout_as(d, CSF).mode_order
    if draw(st.booleans()):
        value = draw(st.integers(d.rank, 2**32 - 1))  # out of range
    else:
        value = draw(st.sampled_from([v for i, v in enumerate(order) if i != k]))  # repeated
    return patched(write_tensor_descriptor(d), f"layout.mode_order[{k}]", value)

# ================================================================ data mutants


def layout_data(kind: str, keep: Callable[[TensorDescriptor, tuple[bytes, ...]], bool],
                change: Callable[[st.DrawFn, TensorDescriptor, list[bytes]], None], **kw: Any):
    """Valid contents for a valid ``kind`` descriptor, then ``change`` applied to them in place."""
    @st.composite
    def build(draw: st.DrawFn) -> tuple[bytes, tuple[bytes, ...]]:
        d = draw(tensor_descriptors(layout=kind, quantized=False, **kw))
        contents = draw(buffers_for(d))
        assume(keep(d, contents))
        out = list(contents)
        change(draw, d, out)
        return write_tensor_descriptor(d), tuple(out)
    return build


def index_width(d: TensorDescriptor) -> int:
    return getattr(d.layout, "index_width", U64)


def _fmt(width: int) -> str:
    return "I" if width == 4 else "Q"


def pointers(d: TensorDescriptor, raw: bytes) -> list[int]:
    width = index_width(d)
    return list(struct.unpack(f"<{len(raw) // width}{_fmt(width)}", raw))


def packed_pointers(d: TensorDescriptor, values: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(values)}{_fmt(index_width(d))}", *values)


def pointer_change(index: int, how: str) -> Callable[[st.DrawFn, TensorDescriptor, list[bytes]], None]:
    def change(draw: st.DrawFn, d: TensorDescriptor, out: list[bytes]) -> None:
        ptr = pointers(d, out[index])
        top = (1 << (8 * index_width(d))) - 1
        if how == "start":
            ptr[0] = draw(st.integers(1, ptr[1]))
        elif how == "end":
            ptr[-1] = draw(st.integers(ptr[-2], min(top, ptr[-2] + 64)).filter(lambda v: v != ptr[-1]))
        else:  # an interior entry above the next one: that step decreases, start and end stay
            i = draw(st.integers(1, len(ptr) - 2))
            ptr[i] = draw(st.integers(ptr[i + 1] + 1, min(top, ptr[i + 1] + 64)))
        out[index] = packed_pointers(d, ptr)
    return change


def can(how: str) -> Callable[[TensorDescriptor, tuple[bytes, ...]], bool]:
    def keep(d: TensorDescriptor, contents: tuple[bytes, ...]) -> bool:
        ptr = pointers(d, contents[2])
        if how == "start":
            return len(ptr) >= 2 and ptr[1] >= 1
        if how == "end":
            return len(ptr) >= 2
        return len(ptr) >= 3
    return keep


def _index_change(how: str) -> Callable[[st.DrawFn, TensorDescriptor, list[bytes]], None]:
    def change(draw: st.DrawFn, d: TensorDescriptor, out: list[bytes]) -> None:
        idx = u64_list(out[1])
        limit = d.shape[1 - layout_as(d, Compressed).pointer_axis]
        if how == "range":
            idx[draw(st.integers(0, len(idx) - 1))] = draw(st.integers(limit, 2**64 - 1))
        else:  # a repeated index inside one segment
            ptr = u64_list(out[2])
            pairs = [j for r in range(len(ptr) - 1) for j in range(ptr[r] + 1, ptr[r + 1])]
            j = draw(st.sampled_from(pairs))
            idx[j] = idx[j - 1]
        out[1] = u64s(idx)
    return change


def _segments_of_two(d: TensorDescriptor, contents: tuple[bytes, ...]) -> bool:
    ptr = u64_list(contents[2])
    return any(ptr[r + 1] - ptr[r] >= 2 for r in range(len(ptr) - 1))


for _kind, (_start, _step, _end, _bound, _order) in {
        "csr": ("HT-LAY-28", "HT-LAY-30", "HT-LAY-29", "HT-LAY-32", "HT-LAY-31"),
        "csc": ("HT-LAY-36", "HT-LAY-38", "HT-LAY-37", "HT-LAY-40", "HT-LAY-39")}.items():
    data_mutant(_start, layout_data(_kind, can("start"), pointer_change(2, "start")))
    data_mutant(_end, layout_data(_kind, can("end"), pointer_change(2, "end")))
    data_mutant(_step, layout_data(_kind, can("step"), pointer_change(2, "step")))
    data_mutant(_bound, layout_data(_kind, lambda d, c: layout_as(d, Compressed).nnz > 0, _index_change("range")))
    data_mutant(_order, layout_data(_kind, _segments_of_two, _index_change("repeat")))


def _coo_outside(draw: st.DrawFn, d: TensorDescriptor, out: list[bytes]) -> None:
    coords = u64_list(out[1])
    i, k = draw(st.integers(0, layout_as(d, COO).nnz - 1)), draw(st.integers(0, d.rank - 1))
    coords[i * d.rank + k] = draw(st.integers(d.shape[k], 2**64 - 1))
    out[1] = u64s(coords)


def _coo_repeat(draw: st.DrawFn, d: TensorDescriptor, out: list[bytes]) -> None:
    coords = u64_list(out[1])
    i, j = draw(st.lists(st.integers(0, layout_as(d, COO).nnz - 1), min_size=2, max_size=2, unique=True))
    coords[j * d.rank:(j + 1) * d.rank] = coords[i * d.rank:(i + 1) * d.rank]
    out[1] = u64s(coords)


data_mutant("HT-LAY-22", layout_data("coo", lambda d, c: layout_as(d, COO).nnz > 0, _coo_outside))
data_mutant("HT-LAY-23", layout_data("coo", lambda d, c: layout_as(d, COO).nnz > 1 and not layout_as(d, COO).is_sorted,
                                     _coo_repeat))
