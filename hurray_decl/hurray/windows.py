"""Boxes of a tensor's index space, as :class:`~hurray_decl.hurray.values.Tensor` reads them:
the box a basic index touches (:func:`window`), row-major boxes of bounded size that cover a
shape (:func:`chunk_boxes`), and the pages of a memory-mapped output let go as they are
written (:class:`Written`)."""

from __future__ import annotations

import mmap
import operator
from collections.abc import Iterator, Sequence
from math import prod
from typing import Any

import numpy as np

from hurray_decl.errors import ArgumentError


def window(key: Any, shape: tuple[int, ...]) -> tuple[list[int], list[int], tuple[Any, ...]]:
    """A basic index as the box ``lo .. hi`` it touches and the index that cuts it out of the box."""
    items = key if isinstance(key, tuple) else (key,)
    if sum(item is Ellipsis for item in items) > 1:
        raise ArgumentError("index", "an index holds at most one ellipsis", actual=repr(key))
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = items[:at] + (slice(None),) * (len(shape) - len(items) + 1) + items[at + 1:]
    if len(items) > len(shape):
        raise ArgumentError("index", "too many indices for the tensor", actual=len(items), expected=f"<= {len(shape)}")
    items = items + (slice(None),) * (len(shape) - len(items))
    lo: list[int] = []
    hi: list[int] = []
    after: list[slice | int] = []
    for axis, (item, n) in enumerate(zip(items, shape)):
        if isinstance(item, slice):
            r = range(*item.indices(n))
            if not r:
                lo.append(0)
                hi.append(0)
                after.append(slice(None))
                continue
            first, last = min(r[0], r[-1]), max(r[0], r[-1])
            lo.append(first)
            hi.append(last + 1)
            stop = r[-1] - first + (1 if r.step > 0 else -1)
            after.append(slice(r[0] - first, None if stop < 0 else stop, r.step))
            continue
        try:
            i = operator.index(item)
        except TypeError:
            raise ArgumentError("index", "windows take basic slices, integers and ...", actual=repr(item),
                                expected="e.g. t[0:64, 5]") from None
        if not -n <= i < n:
            raise ArgumentError("index", f"index {i} is out of bounds for axis {axis} of size {n}", actual=i,
                                expected=f"{-n} <= index < {n}")
        i %= n
        lo.append(i)
        hi.append(i + 1)
        after.append(0)
    return lo, hi, tuple(after)


class Written:
    """The pages of a memory-mapped ``out`` already written, unmapped from this process as it
    goes (``madvise(MADV_DONTNEED)`` on the shared file mapping: the page cache and the file
    keep the values, the kernel writes them back), so that filling an output of any size keeps
    the resident size to the chunks in flight. Nothing for any other array."""

    def __init__(self, out: np.ndarray) -> None:
        mapping = out.base
        self.mapping = mapping if isinstance(mapping, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED") \
            and out.flags.c_contiguous else None  # madvise and MADV_DONTNEED: Unix
        self.start = 0
        self.released = 0
        self.itemsize = out.dtype.itemsize
        self.size = out.nbytes
        if self.mapping is not None and out.size:
            self.start = out.ctypes.data - np.frombuffer(self.mapping, np.uint8, count=1).ctypes.data

    def upto(self, elements: int) -> None:
        """The first ``elements`` values (row-major) are written: let their whole pages go."""
        if self.mapping is None:
            return
        end = (self.start + elements * self.itemsize) // mmap.PAGESIZE * mmap.PAGESIZE
        if end > self.released:
            self.mapping.madvise(mmap.MADV_DONTNEED, self.released, end - self.released)
            self.released = end

    def everything(self) -> None:
        """Values were written anywhere: let every page go."""
        if self.mapping is not None:
            self.released = 0
            self.upto(self.size // self.itemsize)


def chunk_boxes(shape: Sequence[int], limit: int) -> Iterator[tuple[list[int], list[int]]]:
    """Boxes ``(lo, hi)`` covering ``shape`` in row-major order, each of at most ``limit``
    elements (whole trailing rows when they fit, else parts of one row); none for an empty shape."""
    if 0 in shape:
        return
    if not shape:
        yield [], []
        return
    inner = prod(shape[1:])
    if inner <= limit:
        step = max(1, limit // inner)
        for a in range(0, shape[0], step):
            yield [a, *([0] * (len(shape) - 1))], [min(a + step, shape[0]), *shape[1:]]
        return
    for a in range(shape[0]):
        for lo, hi in chunk_boxes(shape[1:], limit):
            yield [a, *lo], [a + 1, *hi]
