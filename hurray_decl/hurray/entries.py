"""The stored entries of a sparse tensor (COO, CSR, CSC, CSF): coordinates and values, read a
bounded number of entries at a time.

Each sparse layout's coordinates are read by one class of :data:`COORDINATES`, keyed by the
layout's row name (:func:`~hurray_decl.hurray.tensor.layouts.row_of`): a COO tensor lists
them, a CSR or CSC tensor points to them along its pointer axis (only the entries of a box's
rows, or columns, are read), a CSF tensor follows its tree. Values are the stored codes, or
their dequantization under per-tensor affine (the only scheme whose parameters do not follow
coordinates).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any, Generic, TypeVar

import numpy as np

from hurray_decl.errors import UnsupportedError
from hurray_decl.hurray import kernels
from hurray_decl.hurray.quantization import kernel_for
from hurray_decl.hurray.schemes.per_tensor_affine import PerTensorAffine
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.element_types import BY_TAG
from hurray_decl.hurray.tensor.common import DYNAMIC
from hurray_decl.hurray.tensor.layouts import COO, CSF, Compressed, Layout, row_of
from hurray_decl.hurray.tensor.model import TensorDescriptor
from hurray_decl.hurray.tensor.validate import DataContext

ENTRY_CHUNK = 1 << 16
"""Stored entries of a sparse tensor read at once by a window or an ``out`` (coordinates and values)."""

L = TypeVar("L", bound=Layout)


@dataclass(frozen=True)
class SparseValues:
    """The stored entries of a sparse tensor: ``coords[i]`` (int64, one column per axis) holds
    ``values[i]`` (dequantized when the tensor is quantized); ``shape`` the dense shape."""

    coords: np.ndarray
    values: np.ndarray
    shape: tuple[int, ...]


def check_scheme(descriptor: TensorDescriptor) -> None:
    """Refuse what a sparse tensor's entries cannot be read under: a scheme other than per-tensor
    affine, a dynamic dimension (checked before anything is allocated)."""
    q = descriptor.quantization
    if q is not None and not isinstance(q, PerTensorAffine):
        raise UnsupportedError(descriptor.layout.rule, "the stored values of a sparse tensor are dequantized "
                               "under per-tensor affine only (the others' parameters follow coordinates)",
                               path="descriptor -> quantization", actual=type(q).__name__,
                               expected="PerTensorAffine or no quantization")
    if DYNAMIC in descriptor.shape:
        raise UnsupportedError("HT-HDR-18", "a dynamic dimension has no size to address entries through",
                               path="descriptor -> shape", actual=list(descriptor.shape), expected="static sizes")


def _u64(content: Any, count: int, offset: int = 0) -> np.ndarray:
    return np.frombuffer(content, "<u8", count=count, offset=8 * offset).astype(np.int64)


class Coordinates(Generic[L]):
    """The coordinates of the stored entries of one sparse layout that a box ``lo .. hi`` may
    hold: :attr:`first` .. :attr:`last`, read ``start .. stop`` at a time by :meth:`at`."""

    def __init__(self, layout: L, contents: Sequence[Any], shape: Sequence[int], lo: Sequence[int],
                 hi: Sequence[int]) -> None:
        self.layout, self.contents, self.rank = layout, contents, len(shape)
        self.first, self.last = 0, int(layout.stored_entries() or 0)

    def at(self, start: int, stop: int) -> np.ndarray:
        """Coordinates ``[stop - start, rank]`` (int64) of entries ``start .. stop``."""
        raise NotImplementedError

    def scipy(self, values: np.ndarray, shape: tuple[int, ...]) -> Any:
        """The scipy sparse array of a rank-2 tensor's entries holding ``values``."""
        raise UnsupportedError(self.layout.rule, f"scipy has no {row_of(self.layout).title} arrays",
                               path="descriptor -> layout_tag", actual=row_of(self.layout).title,
                               expected="COO, CSR or CSC")


class Listed(Coordinates[COO]):
    """COO: ``nnz x rank`` u64 coordinates in buffer 1."""

    def at(self, start: int, stop: int) -> np.ndarray:
        return _u64(self.contents[1], (stop - start) * self.rank, start * self.rank).reshape(-1, self.rank)

    def scipy(self, values: np.ndarray, shape: tuple[int, ...]) -> Any:
        import scipy.sparse as sp

        coords = self.at(0, self.last)
        return sp.coo_array((values, (coords[:, 0], coords[:, 1])), shape=shape)


class Pointed(Coordinates[Compressed]):
    """CSR and CSC: indices along one axis in buffer 1, pointers along the other in buffer 2;
    only the pointers of the box's rows (columns) are read, and the entries between them."""

    def __init__(self, layout: Compressed, contents: Sequence[Any], shape: Sequence[int], lo: Sequence[int],
                 hi: Sequence[int]) -> None:
        super().__init__(layout, contents, shape, lo, hi)
        self.axis = axis = layout.pointer_axis
        self.base = lo[axis]
        self.pointers = _u64(contents[2], hi[axis] - lo[axis] + 1, lo[axis])
        self.first, self.last = int(self.pointers[0]), int(self.pointers[-1])

    def at(self, start: int, stop: int) -> np.ndarray:
        coords = np.empty((stop - start, 2), np.int64)
        coords[:, self.axis] = self.base - 1 + np.searchsorted(self.pointers, np.arange(start, stop), side="right")
        coords[:, 1 - self.axis] = _u64(self.contents[1], stop - start, start)
        return coords

    def scipy(self, values: np.ndarray, shape: tuple[int, ...]) -> Any:
        import scipy.sparse as sp

        kind = sp.csr_array if self.axis == 0 else sp.csc_array
        return kind((values, _u64(self.contents[1], self.last), self.pointers), shape=shape)


class Fibers(Coordinates[CSF]):
    """CSF: each level's pointers and coordinates (buffers 2l + 1, 2l + 2), followed up the tree
    from the leaves once for every entry."""

    def __init__(self, layout: CSF, contents: Sequence[Any], shape: Sequence[int], lo: Sequence[int],
                 hi: Sequence[int]) -> None:
        super().__init__(layout, contents, shape, lo, hi)
        nnz, rank = self.last, self.rank
        coords = np.empty((nnz, rank), np.int64)
        node = np.arange(nnz, dtype=np.int64)
        parents: list[np.ndarray] = []
        crds: list[np.ndarray] = []
        for level in range(rank):
            pos = np.frombuffer(contents[2 * level + 1], "<u8").astype(np.int64)
            crd = np.frombuffer(contents[2 * level + 2], "<u8").astype(np.int64)
            crds.append(crd[:nnz] if level == rank - 1 else crd)
            parents.append(np.repeat(np.arange(pos.size - 1, dtype=np.int64), np.diff(pos)))
        for level in reversed(range(rank)):
            coords[:, layout.mode_order[level]] = crds[level][node]
            node = parents[level][node]
        self.coords = coords

    def at(self, start: int, stop: int) -> np.ndarray:
        return self.coords[start:stop]


COORDINATES: dict[str, type[Coordinates[Any]]] = {"coo": Listed, "csr": Pointed, "csc": Pointed, "csf": Fibers}
"""The coordinate reader of every sparse layout, by the name of its layout row."""


class Entries:
    """The stored entries of one sparse tensor: its descriptor and its validated buffers."""

    def __init__(self, descriptor: TensorDescriptor, data: DataContext, element_name: str) -> None:
        check_scheme(descriptor)
        self.descriptor, self.data, self.element_name = descriptor, data, element_name
        self.shape = tuple(descriptor.shape)
        self.bits = BY_TAG[descriptor.type_tag].bits

    def coordinates(self, lo: Sequence[int], hi: Sequence[int]) -> Coordinates[Any]:
        layout = self.descriptor.layout
        return COORDINATES[row_of(layout).name](layout, self.data.buffers, self.shape, lo, hi)

    def values(self, start: int, stop: int) -> np.ndarray:
        """The values of stored entries ``start .. stop`` (dequantized under per-tensor affine):
        only their bytes are read."""
        raw = np.frombuffer(self.data.buffers[0], np.uint8)
        q = self.descriptor.quantization
        if q is None:
            codes = storage.codes_at(raw, self.bits, start, stop - start) if stop > start else \
                np.empty(0, storage.code_dtype(self.bits))
            values: np.ndarray = storage.values_of_codes(np.array(codes), self.element_name)
            return values
        dequantized = storage.allocate((stop - start,), np.float32, "sparse values")
        if stop > start:
            plan = kernel_for(q)(q, (stop - start,), self.data)
            kernels.run(plan, self.element_name, dequantized, threads=1,
                        codes=lambda a, b: storage.codes_at(raw, self.bits, start + a, b - a))
        return dequantized

    def inside(self, lo: Sequence[int], hi: Sequence[int]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The entries inside the box ``lo .. hi``, in stored order, :data:`ENTRY_CHUNK` at a time:
        (coordinates ``[k, rank]`` int64, values)."""
        if prod(b - a for a, b in zip(lo, hi)) == 0:
            return
        low, high = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
        coordinates = self.coordinates(lo, hi)
        for start in range(coordinates.first, coordinates.last, ENTRY_CHUNK):
            stop = min(coordinates.last, start + ENTRY_CHUNK)
            coords = coordinates.at(start, stop)
            inside = np.flatnonzero(((coords >= low) & (coords < high)).all(axis=1))
            if inside.size:
                yield coords[inside], self.values(start, stop)[inside]

    def whole(self) -> tuple[Coordinates[Any], SparseValues]:
        """Every entry: the coordinate reader of the whole tensor, and the coordinates and values."""
        coordinates = self.coordinates([0] * len(self.shape), self.shape)
        nnz = coordinates.last
        return coordinates, SparseValues(coordinates.at(0, nnz), self.values(0, nnz), self.shape)
