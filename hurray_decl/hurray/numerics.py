"""Tensor-level numerics: dequantize, quantize and per-block parts, for every registered scheme.

Each scheme's row carries two functions: ``kernel(descriptor, shape, params)`` returns the
:class:`~hurray_decl.hurray.kernels.Plan` that dequantizes its data, ``quantize(x, options)`` the
descriptor model, element codes and parameter arrays of a float array. This module turns them
into whole tensors: buffer contents checked first, the output filled chunk by chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from hurray_decl.errors import ArgumentError, RuleViolation, UnsupportedError
from hurray_decl.hurray import kernels
from hurray_decl.hurray.quantization import kernel_for, scheme
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.codes import ScaleType
from hurray_decl.hurray.tables.element_types import BY_NAME, BY_TAG
from hurray_decl.hurray.tensor import (
    BufferHandle,
    RowMajor,
    TensorDescriptor,
    access,
    read_tensor_descriptor,
    validate_buffers,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.common import DYNAMIC
from hurray_decl.hurray.tensor.validate import DataContext

Progress = Callable[[int, int], None]

SMALL_WINDOW = 1 << 20
"""Windows of at most this many elements are dequantized on the calling thread by default:
starting helper threads costs milliseconds, about what a window of this size takes."""


@dataclass(frozen=True)
class QuantizeOptions:
    axis: int
    block_size: int
    storage: str
    symmetric: bool
    scale_type: str


def buffer_contents(buffers: Sequence[Any]) -> list[memoryview]:
    try:
        return [memoryview(b).cast("B") for b in buffers]
    except TypeError as exc:
        raise RuleViolation("HT-BUFT-01", "buffers are bytes-like objects", path="descriptor -> buffers") from exc


def _output(out: Any, shape: tuple[int, ...], contents: Sequence[memoryview]) -> np.ndarray:
    """The caller's ``out``, checked: a writeable C-contiguous float32 array of the logical shape
    that shares no memory with an input buffer (dequantizing in place would read values it has
    already overwritten). A caller's argument, so an :class:`ArgumentError`."""
    if not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != np.float32 \
            or not out.flags.c_contiguous or not out.flags.writeable:
        actual = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        raise ArgumentError("out", "out must be a writeable C-contiguous float32 array of the tensor's logical shape",
                            actual=actual, expected=f"float32 {shape}")
    for index, content in enumerate(contents):
        if content.nbytes and np.may_share_memory(out, np.frombuffer(content, dtype=np.uint8)):
            raise ArgumentError("out", f"out overlaps buffer {index}: dequantizing would overwrite its own input",
                                actual=f"buffer {index}", expected="an array sharing no memory with the buffers")
    return out


@dataclass(frozen=True)
class Dequantization:
    """A dequantization checked and ready to run: every refusal has happened, no output exists.

    :func:`prepare_dequantize` builds it; :meth:`run` fills a caller's ``out`` (or a new array).
    The command line prepares first, then creates its output file.
    """

    descriptor: TensorDescriptor
    plan: kernels.Plan
    storage_name: str
    source: dict[str, Any]
    contents: tuple[memoryview, ...]
    data: DataContext

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.descriptor.shape)

    def run(self, out: np.ndarray | None = None, *, progress: Progress | None = None,
            threads: int | None = None) -> np.ndarray:
        kernels.thread_count(threads)  # a bad thread count is refused before any output exists
        if out is None:
            result = storage.allocate(self.shape)
        else:
            result = _output(out, self.shape, self.contents)
        if result.size == 0:
            return result
        source = self.source
        if "layout" in source:
            source = dict(zip(("codes", "packed"), access.dense_codes(source["layout"])))
        return kernels.run(self.plan, self.storage_name, result, progress=progress, threads=threads, **source)


    def window(self, lo: Sequence[int], hi: Sequence[int], *, threads: int | None = None) -> np.ndarray:
        """The float32 values of the logical box ``lo .. hi`` (one bound per axis): only the
        block rows, lanes and parameters the box touches are read and dequantized, with the
        scheme's own plan restricted to them (:func:`window_plan`); same values as the whole
        result sliced. A plan the window cannot restrict (a private scheme's kernel) runs whole."""
        shape = self.shape
        if len(lo) != len(shape) or len(hi) != len(shape) or any(
                not 0 <= a <= b <= n for a, b, n in zip(lo, hi, shape)):
            raise ArgumentError("window", "a window lies inside the tensor", actual=f"{list(lo)} .. {list(hi)}",
                                expected=f"within {list(shape)}")
        box = tuple(slice(a, b) for a, b in zip(lo, hi))
        restricted = window_plan(self.plan, shape, lo, hi)
        if restricted is None:
            return np.ascontiguousarray(self.run(threads=threads)[box])
        plan, origin, extents, keep = restricted
        result = storage.allocate(tuple(extents))
        if threads is None and result.size <= SMALL_WINDOW:
            threads = 1  # starting threads costs more than a few chunks take
        if result.size:
            packed = access.window_bytes(self.data, origin, extents)  # row-major: the box's bytes, strided
            if packed is not None:
                kernels.run(plan, self.storage_name, result, data=packed, threads=threads)
            else:
                kernels.run(plan, self.storage_name, result, codes=access.window_codes(self.data, origin, extents),
                            threads=threads)
        return np.ascontiguousarray(result.reshape(tuple(extents))[keep])


def window_plan(plan: kernels.Plan, shape: Sequence[int], lo: Sequence[int], hi: Sequence[int]) -> \
        tuple[kernels.Plan, list[int], list[int], tuple[slice, ...]] | None:
    """``plan`` restricted to the logical box ``lo .. hi`` of a tensor of ``shape``: the plan
    of the sub-tensor covering the box, whole blocks along the quantized axis, with the
    parameter rows and lanes it reads gathered; its origin and extents in the padded index
    space; and the slices that cut the box out of its result. None when the plan holds a
    private kernel, or groups the axes in a way the box does not follow."""
    g = plan.geometry
    if plan.kernel is not None:
        return None
    arrays = {"keys": plan.keys, "scales": plan.scales, "zeros": plan.zeros}
    rank = len(shape)
    if tuple(g.shape) == tuple(shape) and rank:  # the geometry's axis is a logical axis
        ax, k = g.axis, g.block
        first, last = lo[ax] // k * k, min(-(-hi[ax] // k) * k, g.padded)
        origin = list(lo)
        origin[ax] = first
        extents = [b - a for a, b in zip(lo, hi)]
        extents[ax] = last - first
        befores = np.ravel_multi_index(np.meshgrid(*[np.arange(a, b) for a, b in zip(lo[:ax], hi[:ax])], indexing="ij"),
                                       tuple(shape[:ax])).reshape(-1) if ax else np.zeros(1, np.int64)
        lanes = np.ravel_multi_index(np.meshgrid(*[np.arange(a, b) for a, b in zip(lo[ax + 1:], hi[ax + 1:])],
                                                 indexing="ij"), tuple(shape[ax + 1:])).reshape(-1) \
            if ax + 1 < rank else np.zeros(1, np.int64)
        blocks = (last - first) // k
        rows = (befores.astype(np.int64)[:, None] * g.blocks_per_axis + first // k + np.arange(blocks)).reshape(-1)
        geometry = kernels.Geometry(tuple(extents), ax, k)
        keep = tuple(slice(lo[ax] - first, hi[ax] - first) if i == ax else slice(None) for i in range(rank))
    elif all(a is None or a.shape[0] == 1 for a in arrays.values()) and (
            g.after == 1 or (rank and g.after == shape[-1])):  # parameters per lane at most (per tensor, per channel)
        count = int(np.prod([b - a for a, b in zip(lo[:-1], hi[:-1])], dtype=np.int64)) if rank else 1
        width = hi[-1] - lo[-1] if rank else 1
        origin, extents = list(lo), [b - a for a, b in zip(lo, hi)]
        geometry = kernels.Geometry((count, width), 0, 1)
        rows = np.zeros(1, np.int64)
        lanes = np.arange(lo[-1], hi[-1]) if rank and g.after > 1 else np.zeros(1, np.int64)
        keep = tuple(slice(None) for _ in range(rank))
    else:
        return None

    def restrict(array: np.ndarray | None) -> np.ndarray | None:
        if array is None:
            return None
        n = array.shape[0]
        part = array if n == 1 else array[rows % n]
        return np.ascontiguousarray(part[:, :, lanes] if array.shape[2] > 1 else part)

    restricted = replace(plan, geometry=geometry, keys=restrict(plan.keys), scales=restrict(plan.scales),
                         zeros=restrict(plan.zeros))
    return restricted, origin, extents, keep


def prepare_dequantize(descriptor: TensorDescriptor, buffers: Sequence[Any]) -> Dequantization:
    """Every check :func:`dequantize` makes, before any output exists: the descriptor, the buffer
    contents (every data rule but the padding one, which dequantization ignores, HQ-PB-19), and
    the sizes (HX-01: a shape whose element count or output bytes NumPy cannot index)."""
    d = descriptor
    if not isinstance(d, TensorDescriptor):
        raise RuleViolation("HT-HDR-02", "dequantize takes a TensorDescriptor", path="descriptor",
                            actual=type(d).__name__, expected="TensorDescriptor")
    d = d.checked()  # a model built bypassing validation is checked like any other
    q = d.quantization
    if q is None:
        raise UnsupportedError("HT-SEC-01", "the tensor is not quantized (HAS_QUANTIZATION is clear)",
                               path="descriptor -> flags", actual=d.flags, expected="bit 0 set")
    plan_for = kernel_for(q)  # a scheme skipped in permissive mode is refused here (HQ-EXT-02)
    access.refuse_unaddressable(d.layout, "dequantize")  # sparse, block-paged, composite, private
    if DYNAMIC in d.shape:
        raise UnsupportedError("HT-HDR-18", "a dynamic dimension has no size to dequantize",
                               path="descriptor -> shape", actual=list(d.shape), expected="static sizes")
    storage.check_output_size(tuple(d.shape), 4, "dequantize")
    contents = buffer_contents(buffers)
    params = validate_buffers(d, contents, padding=False, checked=True)  # d is checked above
    plan = plan_for(q, tuple(d.shape), params)
    storage.check_output_size(tuple(plan.geometry.shape), 1, "dequantize")
    name = BY_TAG[d.type_tag].name
    if isinstance(d.layout, RowMajor):  # zero-copy: the stored bytes are what the kernels read
        source: dict[str, Any] = {"data": np.frombuffer(contents[0], dtype=np.uint8)[d.byte_offset:]}
    else:  # other dense layouts: codes read chunk by chunk in the padded row-major order (HD-12)
        source = {"layout": params}
    return Dequantization(d, plan, name, source, tuple(contents), params)


def dequantize(descriptor: TensorDescriptor, buffers: Sequence[Any], *, out: np.ndarray | None = None,
               progress: Progress | None = None, threads: int | None = None) -> np.ndarray:
    """The float32 values of a quantized tensor, in its logical shape.

    Everything is checked first (:func:`prepare_dequantize`). ``out`` may be a caller-provided
    or memory-mapped float32 array; it must not overlap the buffers. Every dense layout is read
    chunk by chunk (row-major in place; the others through chunk-sized address arrays), so extra
    memory stays at a few chunk temporaries per thread plus the parameter arrays (HX-02).
    ``progress(done, total)`` is called as elements complete; ``threads`` defaults to the cores.
    """
    return prepare_dequantize(descriptor, buffers).run(out, progress=progress, threads=threads)


def _options(row_name: str, shape: tuple[int, ...], axis: int | None, block_size: int | None,
             storage_name: str | None, symmetric: bool, scale_type: str) -> QuantizeOptions:
    defaults = scheme(row_name).quantize_defaults
    axis = defaults.get("axis", 0) if axis is None else axis
    rank = max(len(shape), 1)
    if not -rank <= axis < rank:
        raise RuleViolation("HQ-PB-02", "axis must name a dimension of the array", path="axis",
                            actual=axis, expected=f"-{rank} <= axis < {rank}")
    axis %= rank
    if block_size is None:
        block_size = defaults.get("block_size", 1)
    if storage_name is None:
        storage_name = defaults.get("storage", "int8" if symmetric else "uint8")
    row = scheme(row_name)
    if storage_name not in row.storage_types:
        raise RuleViolation(row.storage_rule, f"{row.title} does not store {storage_name!r}", path="storage",
                            actual=storage_name, expected=", ".join(row.storage_types))
    ScaleType.named(scale_type)  # HQ-PB-08 for an unknown name
    return QuantizeOptions(axis, int(block_size), storage_name, bool(symmetric), scale_type)


EXACT_IN_FLOAT32 = frozenset("float16 float32 int8 uint8 int16 uint16".split())
"""Input dtypes whose every value float32 holds exactly: quantized from float32, without a
float64 copy (float64 and wider integers are quantized from float64)."""


def working_array(x: np.ndarray) -> np.ndarray:
    """``x`` as the C-contiguous float array the quantizers read: float32 when that holds every
    value exactly (:data:`EXACT_IN_FLOAT32`), else float64; no copy when it already is one."""
    kind = np.float32 if x.dtype.name in EXACT_IN_FLOAT32 else np.float64
    return np.ascontiguousarray(x, dtype=kind)


def refuse_non_finite(x: np.ndarray) -> None:
    """HQ-PT-03 for the first NaN or infinity of ``x``. A finite sum (one pass, no temporaries)
    proves every value finite; only a sum that is not (NaN, infinity or overflow) is searched."""
    if x.dtype.kind != "f":
        return
    with np.errstate(over="ignore", invalid="ignore"):  # finite values may sum past the largest float
        if np.isfinite(np.sum(x, dtype=x.dtype)):
            return
    flat = x.reshape(-1)
    bad = np.flatnonzero(~np.isfinite(flat))
    if bad.size:
        first = int(bad[0])
        raise RuleViolation("HQ-PT-03", "a value to quantize is NaN or infinite; no finite scale maps it",
                            path=f"array -> [{first}]", actual=float(flat[first]), expected="finite values")


def quantize(array: Any, scheme_name: str, *, axis: int | None = None, block_size: int | None = None,
             storage: str | None = None, symmetric: bool = True, scale_type: str = "float32",
             threads: int | None = None) -> tuple[TensorDescriptor, list[bytes]]:
    """Quantize a float array into a row-major Hurray tensor: (descriptor, buffers).

    ``scheme_name`` is the scheme's module name (``per_block_affine``, ``nf4``, ...). Each
    scheme documents its calibration rule on its ``quantize`` function. The result is checked
    by the same rules as any input: the writer refuses what a reader would refuse. Blocks are
    calibrated and encoded in parts of about ``kernels.CHUNK_ELEMENTS`` elements, on
    ``threads`` threads (default: the cores, one for arrays of at most :data:`SMALL_WINDOW`
    elements); extra memory is a few part-sized temporaries per thread besides the outputs.
    """
    row = scheme(scheme_name)
    if row.quantize is None:
        raise UnsupportedError("HQ-EXT-03", f"{row.title} has no quantizer", path="scheme", actual=row.name)
    try:
        x = np.asarray(array)
    except (TypeError, ValueError) as exc:
        raise ArgumentError("array", f"quantize takes a numeric array: {exc}", actual=type(array).__name__,
                            expected="a float or integer array") from exc
    if x.dtype.kind not in "fiu":
        raise ArgumentError("array", "quantize takes real numbers", actual=str(x.dtype),
                            expected="a float or integer array")
    count = kernels.thread_count(threads)
    if threads is None and x.size <= SMALL_WINDOW:
        count = 1  # starting threads costs more than a few parts take
    x = working_array(x)
    refuse_non_finite(x)
    options = _options(row.name, x.shape, axis, block_size, storage, symmetric, scale_type)
    result = row.quantize(x, options, count)
    return assemble_data(result.model, x.shape, options.storage, result.data, result.parameters)


def assemble(model: Any, shape: Sequence[int], storage_name: str, elements: np.ndarray,
             parameters: Sequence[np.ndarray]) -> tuple[TensorDescriptor, list[bytes]]:
    """A row-major tensor from element codes (stored order) and parameter arrays, checked."""
    return assemble_data(model, shape, storage_name, np.frombuffer(storage.encode(elements, storage_name), np.uint8),
                         parameters)


def assemble_data(model: Any, shape: Sequence[int], storage_name: str, data: np.ndarray,
                  parameters: Sequence[np.ndarray]) -> tuple[TensorDescriptor, list[bytes]]:
    """A row-major tensor from its data buffer (codes packed in stored order) and parameter arrays, checked."""
    buffers = [data.tobytes()] + [np.ascontiguousarray(p).tobytes() for p in parameters]
    descriptor = TensorDescriptor(
        type_tag=BY_NAME[storage_name].tag,
        shape=tuple(int(n) for n in shape),
        layout=RowMajor(),
        buffers=tuple(BufferHandle(byte_size=len(b)) for b in buffers),
        quantization=model,
    )
    encoded = write_tensor_descriptor(descriptor)
    validate_buffers(descriptor, buffers)
    return read_tensor_descriptor(encoded), buffers
