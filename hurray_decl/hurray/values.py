"""One object for a tensor and its numbers: :class:`Tensor`.

A :class:`Tensor` holds a checked descriptor, its buffers (memoryviews into the file it came
from, when it came from one) and a name. ``np.asarray(t)`` and :meth:`Tensor.numpy` give its
logical values, whatever its element type and layout:

- unquantized dense tensors: the stored bits reinterpreted (:func:`storage.values_of_codes`):
  float16/32/64 and complex as themselves, bfloat16 and the float8/6/4 types as their
  ``ml_dtypes`` types, sub-byte integers as int8 / uint8, bool as bool;
- quantized dense tensors: the scheme's dequantization (float32, :mod:`~hurray_decl.hurray.numerics`);
- sparse tensors (COO, CSR, CSC, CSF): :meth:`Tensor.sparse` gives coordinates and values,
  :meth:`Tensor.numpy` the dense array (HX-01 when it cannot be allocated), ``to_scipy`` /
  (stored values dequantized under per-tensor affine; other schemes refused),
  :meth:`Tensor.from_scipy` the scipy forms;
- block-paged tensors: :meth:`Tensor.sequence` the values of one sequence (dequantized per page
  slot under per-block affine), :meth:`Tensor.numpy` the sequences one after the other (the
  logical ``[tokens, heads, head_dim]`` view);
- composite heads: the assembled array (partition, overlay, nested), members in :attr:`Tensor.members`.

``t[i:j, ...]`` (basic slices and integers) reads and dequantizes only what the window touches:
the blocks, rows or tiles of a dense tensor (:meth:`~hurray_decl.hurray.numerics.Dequantization.window`,
:func:`~hurray_decl.hurray.tensor.access.window_codes`; a broadcast axis's one stored element), the
entries inside it of a sparse tensor, the sequences crossing it of a block-paged one, the members
overlapping it of a composite (each windowed in turn). ``numpy(out=...)`` fills any ``out`` (a
memory map) in bounded chunks the same way; no dense array of the whole tensor is built.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from math import prod
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from hurray_decl.errors import ArgumentError, RuleViolation, UnsupportedError
from hurray_decl.hurray import dlpack, numerics
from hurray_decl.hurray.container import read_container
from hurray_decl.hurray.entries import Entries, SparseValues, check_scheme
from hurray_decl.hurray.schemes.per_block_affine import PerBlockAffine
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.codes import CombineOp, CompositionRule, MemberRole, ScaleType, alternatives
from hurray_decl.hurray.tables.element_types import BY_NAME, BY_TAG
from hurray_decl.hurray.tensor import access
from hurray_decl.hurray.tensor.buffers import BufferHandle
from hurray_decl.hurray.tensor.common import DYNAMIC
from hurray_decl.hurray.tensor.layouts import COO, CSC, CSR, LAYOUTS, CompositeHead, Layout, row_of
from hurray_decl.hurray.tensor.model import TensorDescriptor
from hurray_decl.hurray.tensor.reader import read_tensor_descriptor
from hurray_decl.hurray.tensor.validate import DataContext, sized_contents, validate_buffers
from hurray_decl.hurray.tensor.writer import write_tensor_descriptor
from hurray_decl.hurray.windows import Written, chunk_boxes, window

if TYPE_CHECKING:
    import dask.array

__all__ = ["SparseValues", "Tensor", "element_type", "quantize"]

OUT_CHUNK = 1 << 20
"""Values computed at once when :meth:`Tensor.numpy` fills an ``out`` (a memory map): the element
reader's offsets take 8 bytes an element, so a chunk costs a few MiB whatever the type."""
LAYOUT_NAMES = {row.title: row.model for row in LAYOUTS if row.numpy_order is not None}
"""The dense layouts :meth:`Tensor.from_numpy` writes, by name (or pass the layout object): those
whose row has a NumPy order."""
_TORCH_LACKS = ("float4_e2m1", "float6_e2m3", "float6_e3m2")
"""Element types torch's DLPack consumer does not take (float4 only as its own x2 pairs)."""


def element_type(name_or_tag: Any) -> int:
    """The type tag of an element type given by name (``"float16"``, ``"int4"``) or by tag."""
    if isinstance(name_or_tag, str):
        if name_or_tag not in BY_NAME:
            raise ArgumentError("type", f"unknown element type {name_or_tag!r}", actual=name_or_tag,
                                expected=", ".join(BY_NAME))
        return BY_NAME[name_or_tag].tag
    if isinstance(name_or_tag, (int, np.integer)) and not isinstance(name_or_tag, bool) and int(name_or_tag) in BY_TAG:
        return int(name_or_tag)
    raise ArgumentError("type", "an element type is a name or an assigned type tag", actual=name_or_tag,
                        expected="e.g. 'float16', 'int4' or 0x01")


class Tensor:
    """One tensor: a checked :class:`TensorDescriptor`, its buffers and its name; immutable.

    Build one with :meth:`from_numpy`, :meth:`from_scipy`, :func:`quantize`, or read one from a
    file (:func:`hurray_decl.load`, :func:`hurray_decl.open`); or wrap a descriptor and its
    buffers: ``Tensor(descriptor, buffers, name)``. A composite head carries its ``members``.
    """

    _cache: dict[str, Any]
    __slots__ = ("_cache", "buffers", "descriptor", "members", "name", "source")

    descriptor: TensorDescriptor
    buffers: tuple[memoryview, ...]
    name: str | None
    members: tuple[Tensor, ...]
    source: tuple[str, str] | None

    def __init__(self, descriptor: TensorDescriptor, buffers: Sequence[Any] = (), name: str | None = None, *,
                 members: Sequence[Tensor] = (), source: tuple[str, str] | None = None) -> None:
        if not isinstance(descriptor, TensorDescriptor):
            raise RuleViolation("HT-HDR-02", "a Tensor holds a TensorDescriptor", path="descriptor",
                                actual=type(descriptor).__name__, expected="TensorDescriptor")
        views = tuple(v.toreadonly() for v in sized_contents(descriptor, buffers))
        if any(not isinstance(m, Tensor) for m in members):
            raise ArgumentError("members", "composite members are Tensors")
        for key, value in (("descriptor", descriptor.checked()), ("buffers", views), ("name", name),
                           ("members", tuple(members)), ("source", source), ("_cache", {})):
            object.__setattr__(self, key, value)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("a Tensor is immutable")

    def __delattr__(self, key: str) -> None:
        raise AttributeError("a Tensor is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        """A tensor of a file pickles as its path and name (the file is opened again where it is
        unpickled, so no data travels); any other as its descriptor bytes and buffer bytes."""
        if self.source is not None and not self.members:
            return _from_file, self.source
        return _rebuilt, (write_tensor_descriptor(self.descriptor), [bytes(b) for b in self.buffers], self.name,
                          self.members)

    def __repr__(self) -> str:
        q = self.descriptor.quantization
        what = f", {type(q).__name__}" if q is not None else ""
        return (f"Tensor({self.name!r}, {self.type_name} {list(self.descriptor.shape)}, "
                f"{row_of(self.descriptor.layout).title}{what})")

    # ------------------------------------------------------------------ what it declares

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.descriptor.shape)

    @property
    def ndim(self) -> int:
        return len(self.descriptor.shape)

    @property
    def size(self) -> int:
        return prod(self.shape)

    @property
    def type_name(self) -> str:
        """The element type's name (``"float16"``, ``"int4"``), or ``0xNN`` for a private type."""
        element = BY_TAG.get(self.descriptor.type_tag)
        return element.name if element is not None else f"0x{self.descriptor.type_tag:02X}"

    @property
    def layout(self) -> Layout:
        return self.descriptor.layout

    @property
    def quantization(self) -> Any:
        return self.descriptor.quantization

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of :meth:`numpy`: float32 when quantized, else the element type's values."""
        if self.descriptor.quantization is not None:
            return np.dtype(np.float32)
        dtype: np.dtype = storage.value_dtype(self._element_name())
        return dtype

    def _element_name(self) -> str:
        element = BY_TAG.get(self.descriptor.type_tag)
        if element is None:
            raise UnsupportedError("HE-08", "the elements of a private type are sized, never interpreted",
                                   path="descriptor -> type_tag", actual=self.type_name,
                                   expected="an assigned type tag")
        return element.name

    # ------------------------------------------------------------------ values

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """``np.asarray(t)``: an unquantized row-major or column-major tensor of a type of a byte
        or more (bfloat16 and float8 as ``ml_dtypes`` types) is a read-only view of its stored
        bytes (a loaded tensor's: the file mapping), not a copy, unless ``copy`` or another
        ``dtype`` is asked for; any other tensor is :meth:`numpy`'s values."""
        view = None if copy else self._stored_view()
        if view is not None and BY_NAME[view[1]].bits >= 8:
            owner, name, shape, strides = view
            values = owner.view(storage.value_dtype(name))
            if dtype is None or np.dtype(dtype) == values.dtype:
                row_major = strides == dlpack.row_strides(shape)
                stored = values.reshape(shape if row_major else tuple(reversed(shape)))
                stored = stored if row_major else stored.T
                stored.flags.writeable = False
                return stored
        return self.numpy(dtype)

    def numpy(self, dtype: Any = None, out: np.ndarray | None = None, *,
              progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        """The logical values as an array of :attr:`shape` (see the module's documentation);
        ``dtype`` converts them, ``out`` receives them, filled in place chunk by chunk (a memory
        map of any size: at most :data:`OUT_CHUNK` values are computed at once; a
        sparse tensor's entries are scattered into it,
        :data:`~hurray_decl.hurray.entries.ENTRY_CHUNK` at a time).
        ``progress(done, total)`` counts the elements written into ``out``."""
        if out is not None and dtype is None and self.descriptor.quantization is not None and self._family.streams:
            return self._dequantization().run(out, progress=progress)
        if out is not None and DYNAMIC not in self.shape:
            return self._fill(out, dtype, progress)
        values = self._family.values(self)
        if dtype is not None:
            values = values.astype(dtype, copy=False)
        if out is None:
            return values
        if not isinstance(out, np.ndarray) or out.shape != values.shape or not out.flags.writeable:
            raise ArgumentError("out", "out is a writeable array of the tensor's shape",
                                actual=getattr(out, "shape", type(out).__name__), expected=values.shape)
        np.copyto(out, values, casting="same_kind")
        return out

    def check(self) -> None:
        """Check, without computing any value, every rule reading the values checks: the element
        type, the layout's and the scheme's, the buffer contents, a composite's members (what a
        caller runs before it creates an output)."""
        self._family.check(self)

    @property
    def _family(self) -> type[_Family]:
        """How this tensor's values are read: the family of its layout row's category."""
        return FAMILIES[row_of(self.descriptor.layout).category]

    def _fill(self, out: np.ndarray, dtype: Any, progress: Callable[[int, int], None] | None) -> np.ndarray:
        """``out`` filled with the values (converted to ``dtype``), in bounded chunks (:meth:`numpy`)."""
        shape = self.shape
        if not isinstance(out, np.ndarray) or out.shape != shape or not out.flags.writeable:
            raise ArgumentError("out", "out is a writeable array of the tensor's shape",
                                actual=getattr(out, "shape", type(out).__name__), expected=shape)
        target = np.dtype(dtype) if dtype is not None else self.dtype
        if not np.can_cast(target, out.dtype, casting="same_kind"):
            raise ArgumentError("out", "out's dtype holds the values (same kind)", actual=str(out.dtype),
                                expected=str(target))
        self.check()
        return self._family.fill(self, out, target, progress)

    def _data(self) -> DataContext:
        """The buffers validated once (every data rule but the padding of partial blocks)."""
        if "data" not in self._cache:
            self._cache["data"] = validate_buffers(self.descriptor, self.buffers, padding=False, checked=True)
        data: DataContext = self._cache["data"]
        return data

    def _dequantization(self) -> numerics.Dequantization:
        if "dequantization" not in self._cache:
            self._cache["dequantization"] = numerics.prepare_dequantize(self.descriptor, self.buffers)
        prepared: numerics.Dequantization = self._cache["dequantization"]
        return prepared

    def _entries(self) -> Entries:
        """The stored entries of a sparse tensor, over its validated buffers (once)."""
        if "entries" not in self._cache:
            check_scheme(self.descriptor)
            self._cache["entries"] = Entries(self.descriptor, self._data(), self._element_name())
        entries: Entries = self._cache["entries"]
        return entries

    def __getitem__(self, key: Any) -> np.ndarray:
        """The values of a window: basic slices and integers on any axis, ``...``. A dense tensor
        reads and dequantizes only the blocks, rows or tiles the window touches."""
        lo, hi, after = window(key, self.shape)
        return np.asarray(self._box(lo, hi)[after], order="C")  # 0-d for integers on every axis

    def _box(self, lo: Sequence[int], hi: Sequence[int]) -> np.ndarray:
        """The values of the box ``lo .. hi``, computed from what it touches: the blocks, rows or
        tiles of a dense tensor, the entries inside it of a sparse one, the sequences crossing it
        of a block-paged one, the members overlapping it of a composite."""
        return self._family.box(self, lo, hi)

    # ------------------------------------------------------------------ sparse

    def sparse(self) -> SparseValues:
        """Coordinates (``[nnz, rank]`` int64) and values of a sparse tensor's stored entries."""
        row = row_of(self.descriptor.layout)
        if row.category != "sparse":
            raise UnsupportedError("HT-LAY-20", "sparse() reads sparse layouts (COO, CSR, CSC, CSF)",
                                   path="descriptor -> layout_tag", actual=row.title,
                                   expected="COO, CSR, CSC or CSF")
        return self._entries().whole()[1]

    def to_scipy(self) -> Any:
        """The scipy sparse array of a rank-2 sparse tensor: ``csr_array``, ``csc_array`` or ``coo_array``
        (a dense tensor becomes a ``csr_array`` of its non-zero values)."""
        import scipy.sparse as sp

        if self.ndim != 2:
            raise UnsupportedError("HT-LAY-20", "scipy sparse arrays have two dimensions", path="descriptor -> shape",
                                   actual=list(self.shape), expected="rank 2")
        if row_of(self.descriptor.layout).category != "sparse":
            return sp.csr_array(self.numpy())
        coordinates, entries = self._entries().whole()
        return coordinates.scipy(entries.values, self.shape)

    @classmethod
    def from_scipy(cls, matrix: Any, *, name: str | None = None, type: Any = None) -> Tensor:
        """A CSR, CSC or COO tensor from a scipy sparse matrix or array of that format (others
        are converted to COO); values keep their element type (or ``type``)."""
        import scipy.sparse as sp

        if not sp.issparse(matrix):
            raise ArgumentError("matrix", "from_scipy takes a scipy sparse matrix or array", actual=type_name(matrix))
        shape = tuple(int(n) for n in matrix.shape)
        if matrix.format in ("csr", "csc"):
            m = matrix.copy()
            m.sum_duplicates()
            m.sort_indices()
            layout: Layout = CSR(nnz=int(m.nnz)) if matrix.format == "csr" else CSC(nnz=int(m.nnz))
            index_buffers = [m.indices.astype("<u8").tobytes(), m.indptr.astype("<u8").tobytes()]
            values = m.data
        else:
            m = sp.coo_array(matrix)
            m.sum_duplicates()
            layout = COO(nnz=int(m.nnz), is_sorted=1)
            index_buffers = [np.stack([m.row, m.col], axis=1).astype("<u8").tobytes()]
            values = m.data
        tag, codes = _codes(values, type)
        data = storage.pack_codes(codes, BY_TAG[tag].bits)
        buffers = [data, *index_buffers]
        return cls._built(tag, shape, layout, buffers, name)

    @classmethod
    def _built(cls, tag: int, shape: tuple[int, ...], layout: Layout, buffers: list[bytes], name: str | None,
               quantization: Any = None) -> Tensor:
        sizes = tuple(len(b) for b in buffers)
        if quantization is None and row_of(layout).numpy_order is not None:  # row- or column-major: fieldless
            descriptor = _plain_descriptor(tag, shape, type(layout), sizes)
        else:
            descriptor = _descriptor(TensorDescriptor(
                type_tag=tag, shape=shape, layout=layout, quantization=quantization,
                buffers=tuple(BufferHandle(byte_size=n) for n in sizes)))
        validate_buffers(descriptor, buffers)
        return cls(descriptor, buffers, name)

    # ------------------------------------------------------------------ block-paged

    def sequence(self, seq: int, *, tokens: int | None = None) -> np.ndarray:
        """The values of sequence ``seq`` of a block-paged tensor, ``[tokens, heads, head_dim]``
        (:func:`~hurray_decl.hurray.tensor.access.block_paged_codes`). Under per-block affine
        each token's page slot indexes its scale and zero point (HT-LAY-67, HD-17):
        ``float32(q - z[slot]) * s[slot]`` (HQ-PB-15); other schemes are refused."""
        self._paged_scheme()
        q = self.descriptor.quantization
        paged = access.block_paged_codes(self.descriptor, self.buffers, seq, tokens=tokens)
        values: np.ndarray = storage.values_of_codes(np.array(paged.codes), self._element_name())
        if q is None:
            return values
        data = self._data()
        scales = data.array("scale_buffer_index", ScaleType(q.scale_type_tag).title)[paged.slots].astype(np.float32)
        difference = values.astype(np.int64)
        if not q.symmetric:
            difference -= data.array("zero_point_buffer_index", "<i4")[paged.slots].astype(np.int64)[:, None, None]
        result: np.ndarray = difference.astype(np.float32) * scales[:, None, None]
        return result

    def _paged_scheme(self) -> None:
        q = self.descriptor.quantization
        if q is not None and not isinstance(q, PerBlockAffine):
            raise UnsupportedError("HT-LAY-67", "a block-paged tensor is dequantized under per-block affine only",
                                   path="descriptor -> quantization", actual=type(q).__name__,
                                   expected="PerBlockAffine or no quantization")

    def _paged_box(self, lo: Sequence[int], hi: Sequence[int]) -> np.ndarray:
        """The box ``lo .. hi`` of a block-paged tensor of static shape: its sequences one after the
        other, each computed (one at a time) only up to the last one the box reaches."""
        layout = self.descriptor.layout.paging()
        if layout is None:
            raise UnsupportedError("HT-LAY-53", "only a block-paged tensor has sequences", path="descriptor -> layout",
                                   actual=row_of(self.descriptor.layout).title, expected="block-paged")
        result = storage.allocate(tuple(b - a for a, b in zip(lo, hi)), self.dtype, "a window")
        at = 0
        for seq in range(layout.num_seqs):
            if at >= hi[0] or 0 in result.shape:
                break
            values = self.sequence(seq)
            a, b = max(lo[0], at), min(hi[0], at + values.shape[0])
            if a < b:
                result[a - lo[0]: b - lo[0]] = values[(slice(a - at, b - at),)
                                                      + tuple(slice(x, y) for x, y in zip(lo[1:], hi[1:]))]
            at += values.shape[0]
        return result

    # ------------------------------------------------------------------ from NumPy

    @classmethod
    def from_numpy(cls, array: Any, *, layout: Any = "row-major", name: str | None = None,
                   type: Any = None, copy: bool = True) -> Tensor:
        """An unquantized tensor holding ``array``'s values, same bits: its element type is the
        array's (bfloat16 and float8/6/4 through ``ml_dtypes``), or ``type`` (a name or a tag:
        ``type="int4"`` for an int8 array of values in -8..7). ``layout`` is ``"row-major"``,
        ``"column-major"`` (or the layout object). ``copy=False``: where the array's own bytes are
        the stored ones (contiguous in the layout's order, little-endian, 8 bits or more a value),
        the buffer is the array's memory, not a copy (so it changes with the array)."""
        try:
            values = np.asarray(array)
        except (TypeError, ValueError) as exc:
            raise ArgumentError("array", f"from_numpy takes an array: {exc}", actual=type_name(array)) from exc
        if isinstance(layout, str):
            if layout not in LAYOUT_NAMES:
                raise ArgumentError("layout", "an unknown layout name", actual=layout, expected=", ".join(LAYOUT_NAMES))
            layout = LAYOUT_NAMES[layout]()
        order = row_of(layout).numpy_order if isinstance(layout, Layout) else None
        if order is None:
            raise ArgumentError("layout", "from_numpy writes row-major and column-major tensors",
                                actual=type_name(layout), expected="RowMajor() or ColumnMajor()")
        tag, codes = _codes(values, type)
        ordered = codes.reshape(values.shape).ravel(order=order)  # column-major: the reversed shape, row-major
        flat, bits = np.ascontiguousarray(ordered), BY_TAG[tag].bits
        data: Any
        if not copy and bits == 8 * flat.dtype.itemsize and flat.dtype == flat.dtype.newbyteorder("<"):
            data = flat.view(np.uint8).data  # the stored bytes already: a memoryview of the array
        else:
            data = storage.pack_codes(flat, bits)
        return cls._built(tag, tuple(int(n) for n in values.shape), layout, [data], name)

    # ------------------------------------------------------------------ DLPack and torch

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(kDLCPU, 0)``: the tensor's bytes are in host memory."""
        return dlpack.KDL_CPU, 0

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: Any = None, copy: bool | None = None) -> Any:
        """A DLPack capsule of the values, for ``np.from_dlpack``, ``torch.from_dlpack`` and any
        other consumer. An unquantized row-major or column-major tensor of a type DLPack has
        (:data:`~hurray_decl.hurray.dlpack.TYPES`; bool excepted, which DLPack holds a byte a
        value) is its stored bytes, not copied (the file mapping of a loaded tensor), marked
        read-only; any other is a copy of :meth:`numpy`'s values (quantized: float32), marked
        copied. ``copy=True`` always copies, ``copy=False`` refuses to (CV-DLP-02)."""
        if dl_device is not None and tuple(int(x) for x in dl_device) != (dlpack.KDL_CPU, 0):
            raise UnsupportedError("CV-DLP-02", "the tensor's bytes are exported on the CPU", path="dl_device",
                                   actual=str(dl_device), expected=f"({dlpack.KDL_CPU}, 0)")
        versioned = max_version is not None and int(max_version[0]) >= 1
        view = None if copy else self._stored_view()
        if view is not None and not versioned and view[0].flags.writeable is False:
            view = None  # the unversioned protocol cannot say read-only: a consumer could write the mapping
        if view is None and copy is False:
            raise UnsupportedError("CV-DLP-02", f"{self.name or 'the tensor'} has no zero-copy DLPack view "
                                   "(copy=False)", path="__dlpack__ -> copy", actual=self._export_reason(versioned),
                                   expected="an unquantized row-major or column-major tensor of a DLPack type "
                                   "other than bool, asked for with max_version >= (1, 0)")
        if view is not None:
            owner, name, shape, strides = view
            return dlpack.export(owner, name, shape, strides, copied=False, versioned=versioned)
        name = "float32" if self.descriptor.quantization is not None else self._element_name()
        if name not in dlpack.TYPES:
            raise UnsupportedError("CV-DLP-01", f"{name} has no DLPack type", path="descriptor -> type_tag",
                                   actual=name, expected=", ".join(dlpack.TYPES))
        values = np.ascontiguousarray(self.numpy())
        if name == "bool":
            data = values.view(np.uint8).reshape(-1).copy()
        else:
            codes = storage.codes_of_values(values, name).reshape(-1)
            data = np.frombuffer(storage.pack_codes(codes, BY_NAME[name].bits), np.uint8).copy()
        shape = tuple(int(n) for n in values.shape)
        return dlpack.export(data, name, shape, dlpack.row_strides(shape), copied=True, versioned=versioned)

    def _stored_view(self) -> tuple[np.ndarray, str, tuple[int, ...], tuple[int, ...]] | None:
        """The stored bytes as DLPack can see them (uint8 view, element, shape, element strides),
        or None when DLPack needs a copy."""
        order = row_of(self.descriptor.layout).numpy_order
        element = BY_TAG.get(self.descriptor.type_tag)
        if self.descriptor.quantization is not None or order is None or element is None or \
                element.name not in dlpack.TYPES or element.name == "bool" or \
                DYNAMIC in self.shape or (element.bits > 8 and not dlpack.host_little_endian()):
            return None
        shape = self.shape
        contents = self._data().buffers[0]
        owner = np.frombuffer(contents, np.uint8, count=storage.byte_size(element.name, self.size))
        if order == "C":
            return owner, element.name, shape, dlpack.row_strides(shape)
        return owner, element.name, shape, tuple(reversed(dlpack.row_strides(tuple(reversed(shape)))))

    def _export_reason(self, versioned: bool) -> str:
        if self._stored_view() is not None and not versioned:
            return "a read-only mapping asked for through the unversioned protocol"
        if self.descriptor.quantization is not None:
            return f"quantized ({type(self.descriptor.quantization).__name__})"
        return f"{self.type_name}, {row_of(self.descriptor.layout).title}"

    @classmethod
    def from_dlpack(cls, source: Any, *, name: str | None = None) -> Tensor:
        """An unquantized row-major tensor of the values of any DLPack producer (a torch, JAX or
        CuPy CPU tensor, a NumPy array) or capsule, same bits: bfloat16 and float8 as
        themselves, torch's ``float4_e2m1fn_x2`` as float4_e2m1 (two values a byte). The
        values are copied; what has no Hurray form is refused (CV-DLP-03)."""
        return cls.from_numpy(dlpack.import_values(source), name=name)

    def to_torch(self, dtype: Any = None, *, copy: bool = False) -> Any:
        """A ``torch.Tensor`` of the values: sharing the stored bytes when DLPack can (see
        :meth:`__dlpack__`), else a copy (a quantized tensor dequantized to float32); ``dtype``
        (a ``torch.dtype``) converts them. A tensor of a loaded file shares its read-only
        mapping, and torch does not honour DLPack's read-only flag: writing into it faults, so
        ask ``copy=True`` for a tensor to modify. A row-major float4_e2m1 tensor with an even last
        dimension comes as torch's ``float4_e2m1fn_x2`` (two values a byte, element 2k in the low
        nibble as HE-14, the last dimension in pairs; its bytes, not copied); with ``dtype``, and
        for the float6 types torch lacks, the values come as float32 (exact), then ``dtype``.
        Needs torch; nothing else imports it."""
        import torch

        if self.descriptor.quantization is None and self.type_name in _TORCH_LACKS:
            view = self._stored_view()
            if dtype is None and view is not None and view[1] == "float4_e2m1" and view[2] and \
                    view[3] == dlpack.row_strides(view[2]) and view[2][-1] % 2 == 0:  # E2M1 pairs, in place
                pairs = torch.from_dlpack(view[0]).view(torch.float4_e2m1fn_x2).reshape(*view[2][:-1],
                                                                                        view[2][-1] // 2)
                return pairs.clone() if copy else pairs
            values = torch.from_numpy(np.ascontiguousarray(self.numpy(np.float32)))  # exact: a copy
            return values if dtype is None else values.to(dtype)
        result = torch.from_dlpack(self, copy=True) if copy else torch.from_dlpack(self)
        return result if dtype is None else result.to(dtype)

    # ------------------------------------------------------------------ dask

    def to_dask(self, chunks: Any = "auto") -> dask.array.Array:
        """A lazy dask array of the values: each task computes one window (``t[box]``). A tensor
        read from a file travels as its path and name, so no data sits in the graph."""
        import dask.array as da
        from dask.base import tokenize

        array: da.Array = da.from_array(  # type: ignore[no-untyped-call]
            self, chunks=chunks, asarray=False, fancy=False, lock=False,
            name=f"hurray-{self.name or 'tensor'}-{tokenize(self.source or id(self))}",
            meta=self[(slice(0, 0),) * self.ndim] if self.ndim else None)
        return array


def type_name(value: Any) -> str:
    name: str = value.__class__.__name__
    return name


def _descriptor(descriptor: TensorDescriptor) -> TensorDescriptor:
    """``descriptor`` written and read back: the writer's rules, then the reader's."""
    return read_tensor_descriptor(write_tensor_descriptor(descriptor))


@functools.lru_cache(maxsize=1024)
def _plain_descriptor(tag: int, shape: tuple[int, ...], layout: type[Layout],
                      sizes: tuple[int, ...]) -> TensorDescriptor:
    """The checked descriptor of an unquantized row- or column-major tensor, made once for each
    element type, shape and buffer sizes (its fields are integers, so equal keys are equal bytes):
    many tensors of one kind (a model's layers, empty tensors) share it, as they share its bytes."""
    return _descriptor(TensorDescriptor(type_tag=tag, shape=shape, layout=layout(),
                                        buffers=tuple(BufferHandle(byte_size=n) for n in sizes)))


def _codes(values: np.ndarray, type_: Any) -> tuple[int, np.ndarray]:
    """The element type tag and raw codes of ``values`` (exactly representable, else refused)."""
    if type_ is None:
        name = storage.element_of_dtype(values.dtype)
        if name is None:
            raise ArgumentError("array", "no Hurray element type holds this dtype exactly", actual=str(values.dtype),
                                expected="a NumPy or ml_dtypes type of the element table, or type=")
    else:
        name = BY_TAG[element_type(type_)].name
    element = BY_NAME[name]
    if element.bits == 128 and element.kind.value == "float":
        storage.value_dtype(name)  # refused: no NumPy binary128 (HE-11)
    bounds = element.int_range
    if (values.dtype != storage.value_dtype(name) and storage.element_of_dtype(values.dtype) != name) or (
            bounds is not None and element.bits < 8 and values.dtype.kind in "iu"):
        if bounds is not None and values.dtype.kind in "iu":
            if values.size and (values.min() < bounds[0] or values.max() > bounds[1]):
                bad = int(np.flatnonzero((values.reshape(-1) < bounds[0]) | (values.reshape(-1) > bounds[1]))[0])
                raise RuleViolation("HE-11", f"a value does not fit {name}", path=f"array -> [{bad}]",
                                    actual=int(values.reshape(-1)[bad]), expected=f"{bounds[0]}..{bounds[1]}")
            values = values.astype(storage.value_dtype(name))
        elif element.kind.value == "bool" and values.dtype.kind in "iub":
            values = values.astype(np.bool_)
        else:
            converted = values.astype(storage.value_dtype(name))
            back = converted.astype(values.dtype)
            if not np.array_equal(back, values, equal_nan=values.dtype.kind in "fc"):
                raise ArgumentError("array", f"the values are not exactly representable as {name}",
                                    actual=str(values.dtype), expected=name)
            values = converted
    return element.tag, storage.codes_of_values(values, name)


class _Family:
    """How the values of one family of layouts are read (the category of a layout row,
    :data:`FAMILIES`): the rules checked before any value, the whole array, the box ``lo .. hi``,
    and an ``out`` filled chunk by chunk. Each method takes the tensor."""

    streams: ClassVar[bool] = False
    """Whether a quantized tensor's ``out`` is filled by its dequantization directly."""

    @staticmethod
    def check(t: Tensor) -> None:
        raise NotImplementedError

    @staticmethod
    def values(t: Tensor) -> np.ndarray:
        return t._box([0] * t.ndim, list(t.shape))

    @staticmethod
    def box(t: Tensor, lo: Sequence[int], hi: Sequence[int]) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def fill(t: Tensor, out: np.ndarray, target: np.dtype, progress: Callable[[int, int], None] | None) -> np.ndarray:
        """``out`` filled box by box, each of at most :data:`OUT_CHUNK` values."""
        total, done, written = t.size, 0, Written(out)
        for lo, hi in chunk_boxes(t.shape, OUT_CHUNK):
            values = t._box(lo, hi).astype(target, copy=False)
            np.copyto(out[tuple(slice(a, b) for a, b in zip(lo, hi))], values, casting="same_kind")
            done += values.size
            written.upto(done)
            if progress is not None:
                progress(done, total)
        return out


def _cut(t: Tensor, lo: Sequence[int], hi: Sequence[int]) -> np.ndarray:
    """The box ``lo .. hi`` cut out of all the values: a tensor of dynamic shape has no box of its own."""
    whole: np.ndarray = t.numpy()[tuple(slice(a, b) for a, b in zip(lo, hi))]
    return whole


class _Dense(_Family):
    """Every element has a place in buffer 0 (dense layouts; private and unrecognised ones are
    refused here with their rule)."""

    streams = True

    @staticmethod
    def check(t: Tensor) -> None:
        t.dtype  # noqa: B018 - a private type (HE-08) or float128 (HE-11) is refused here
        if t.descriptor.quantization is not None:
            t._dequantization()
        else:
            access.refuse_unaddressable(t.descriptor.layout, "the values")
            t._data()

    @staticmethod
    def values(t: Tensor) -> np.ndarray:
        if t.descriptor.quantization is not None:
            return t._dequantization().run()  # numerics refuses what it cannot dequantize, with its rule
        values: np.ndarray = storage.values_of_codes(access.read_codes(t._data(), padded=False), t._element_name())
        return values

    @staticmethod
    def box(t: Tensor, lo: Sequence[int], hi: Sequence[int]) -> np.ndarray:
        if DYNAMIC in t.shape:
            return _cut(t, lo, hi)
        if t.descriptor.quantization is not None:
            return t._dequantization().window(lo, hi)
        access.refuse_unaddressable(t.descriptor.layout, "a window")
        extents = [b - a for a, b in zip(lo, hi)]
        count = prod(extents)
        storage.check_output_size(tuple(extents), t.dtype.itemsize, "a window")
        codes = access.window_codes(t._data(), lo, extents)(0, count) if count else \
            np.empty(0, storage.code_dtype(BY_TAG[t.descriptor.type_tag].bits))
        values: np.ndarray = storage.values_of_codes(np.array(codes).reshape(extents), t._element_name())
        return values


class _Sparse(_Family):
    """Stored entries and their coordinates (:mod:`~hurray_decl.hurray.entries`); zeros elsewhere."""

    @staticmethod
    def check(t: Tensor) -> None:
        t.dtype  # noqa: B018 - a private type (HE-08) or float128 (HE-11) is refused here
        t._entries()

    @staticmethod
    def box(t: Tensor, lo: Sequence[int], hi: Sequence[int]) -> np.ndarray:
        check_scheme(t.descriptor)  # a dynamic dimension refused before anything is allocated
        result = storage.allocate(tuple(b - a for a, b in zip(lo, hi)), t.dtype, "a window of a sparse tensor")  # HX-01
        result.fill(0)
        for coords, found in t._entries().inside(lo, hi):
            result[tuple((coords - np.asarray(lo, np.int64)).T)] = found
        return result

    @staticmethod
    def fill(t: Tensor, out: np.ndarray, target: np.dtype, progress: Callable[[int, int], None] | None) -> np.ndarray:
        """Zeros, then the entries where they fall."""
        written, zeroed = Written(out), 0
        for lo, hi in chunk_boxes(t.shape, OUT_CHUNK):
            out[tuple(slice(a, b) for a, b in zip(lo, hi))] = 0
            zeroed += prod(b - a for a, b in zip(lo, hi))
            written.upto(zeroed)
        for coords, values in t._entries().inside([0] * t.ndim, list(t.shape)):
            out[tuple(coords.T)] = values.astype(target, copy=False)
            written.everything()
        if progress is not None:
            progress(t.size, t.size)
        return out


class _Paged(_Family):
    """A block-paged KV cache: its sequences one after the other."""

    @staticmethod
    def check(t: Tensor) -> None:
        t.dtype  # noqa: B018 - a private type (HE-08) or float128 (HE-11) is refused here
        t._paged_scheme()
        t._data()

    @staticmethod
    def values(t: Tensor) -> np.ndarray:
        paging = t.descriptor.layout.paging()
        parts = [t.sequence(s) for s in range(paging.num_seqs if paging is not None else 0)]
        shape = tuple(t.shape[1:]) if DYNAMIC not in t.shape[1:] else (0, 0)
        return np.concatenate(parts) if parts else np.empty((0,) + shape, t.dtype)

    @staticmethod
    def box(t: Tensor, lo: Sequence[int], hi: Sequence[int]) -> np.ndarray:
        if DYNAMIC in t.shape:
            return _cut(t, lo, hi)
        return t._paged_box(lo, hi)


class _Composite(_Family):
    """A composite head: its members assembled (partition, overlay, nested)."""

    @staticmethod
    def check(t: Tensor) -> None:
        _composite_members(t)
        for member in t.members:
            member.check()

    @staticmethod
    def box(t: Tensor, lo: Sequence[int], hi: Sequence[int]) -> np.ndarray:
        return _composite_box(t, lo, hi)


FAMILIES: dict[str, type[_Family]] = {"dense": _Dense, "private": _Dense, "opaque": _Dense, "sparse": _Sparse,
                                      "indirect": _Paged, "virtual": _Composite}
"""How the values of each category of layout rows are read."""
SPARSE = tuple(row.model for row in LAYOUTS if FAMILIES[row.category] is _Sparse)
"""The sparse layout models (derived from their rows)."""


def _head(tensor: Tensor) -> CompositeHead:
    """The layout of a composite head (refused for any other tensor)."""
    layout = tensor.descriptor.layout
    if not isinstance(layout, CompositeHead):
        raise UnsupportedError("HT-LAY-68", "only a composite head assembles its members", path="descriptor -> layout",
                               actual=row_of(layout).title, expected="a composite head")
    return layout


def _composite_members(head: Tensor) -> list[Tensor]:
    """A partition or overlay head's members in the order they are applied (the base first), its rules checked."""
    layout = _head(head)
    rule = layout.composition_rule
    assembled = (CompositionRule.PARTITION, CompositionRule.OVERLAY)
    if rule not in assembled:
        raise UnsupportedError("HT-LAY-69", "a group composite presents no single array; read its members",
                               path="descriptor -> layout -> composition_rule", actual=rule,
                               expected=alternatives(assembled, form="{hex} {title}"))
    if len(head.members) != layout.member_count:
        raise RuleViolation("HT-LAY-68", "a composite's members come with it", path="members",
                            actual=len(head.members), expected=layout.member_count)
    members = list(head.members)
    if rule == CompositionRule.OVERLAY:
        base = [m for m in members if m.descriptor.composite_member is not None
                and m.descriptor.composite_member.member_role == MemberRole.BASE]
        members = base + [m for m in members if m not in base]
    return members


def _composite_box(head: Tensor, lo: Sequence[int], hi: Sequence[int]) -> np.ndarray:
    """The box ``lo .. hi`` of a partition or overlay composite: each member that overlaps it
    gives the box of its own values there (nested composites the same way), applied in order."""
    layout = _head(head)
    members = _composite_members(head)
    dtype = head.dtype
    result: np.ndarray = storage.allocate(tuple(b - a for a, b in zip(lo, hi)), dtype, "a composite")
    result.fill(0)
    overlay = layout.composition_rule == CompositionRule.OVERLAY
    for i, member in enumerate(members):
        offset = member.descriptor.shard.shard_offset if member.descriptor.shard is not None else (0,) * head.ndim
        start = [max(a, o) for a, o in zip(lo, offset)]
        stop = [min(b, o + n) for b, o, n in zip(hi, offset, member.shape)]
        if any(a >= b for a, b in zip(start, stop)):
            continue  # the member lies outside the box: never read
        inner_lo = [a - o for a, o in zip(start, offset)]
        inner_hi = [b - o for b, o in zip(stop, offset)]
        box = tuple(slice(a - x, b - x) for a, b, x in zip(start, stop, lo))
        if overlay and i and layout.combine_op == CombineOp.ADD:
            result[box] += member._box(inner_lo, inner_hi).astype(dtype, copy=False)
        elif overlay and i and member._family is _Sparse:
            shift = np.asarray(offset, np.int64) - np.asarray(lo, np.int64)
            for coords, values in member._entries().inside(inner_lo, inner_hi):
                result[tuple((coords + shift).T)] = values
        else:
            result[box] = member._box(inner_lo, inner_hi)
    return result


def quantize(array: Any, scheme: str, *, name: str | None = None, axis: int | None = None,
             block_size: int | None = None, storage: str | None = None, symmetric: bool = True,
             scale_type: str = "float32", threads: int | None = None) -> Tensor:
    """Quantize a float array into a row-major Hurray tensor (see :func:`numerics.quantize`, which
    also says what ``threads`` does)."""
    descriptor, buffers = numerics.quantize(array, scheme, axis=axis, block_size=block_size, storage=storage,
                                            symmetric=symmetric, scale_type=scale_type, threads=threads)
    return Tensor(descriptor, buffers, name)


def _rebuilt(descriptor: bytes, buffers: list[bytes], name: str | None, members: tuple[Tensor, ...]) -> Tensor:
    return Tensor(read_tensor_descriptor(descriptor), buffers, name, members=members)


def _from_file(path: str, name: str) -> Tensor:
    record = read_container(path).tensor(name)
    return Tensor(record.descriptor, record.buffers, name, source=(path, name))


def iterate_members(members: Sequence[Tensor]) -> Iterator[Tensor]:
    """Members pre-order, nested heads followed by their own members (the order of a file)."""
    for member in members:
        yield member
        yield from iterate_members(member.members)


def path_of(path: Any) -> str:
    if not isinstance(path, (str, Path)):
        raise ArgumentError("path", "a file path", actual=type_name(path), expected="str or pathlib.Path")
    return str(path)
