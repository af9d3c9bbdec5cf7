"""The quantization plan: plan -> runs -> (layout, blocks), and the portable plan factory.

The classes mirror the original's Python surface (DIGEST.md § 13): ``plan.runs`` and
``run.blocks`` hand out *copies*, and changes are assigned back with ``set_run`` /
``set_block`` or by assigning the list. ``run.layout`` is the run's own layout object.

Each run holds its block parameters as NumPy arrays (one row per block); per-block objects
are built only when ``blocks`` or ``block(j)`` asks for them, so planning, encoding and
decoding scale like the data. The codec computes with :class:`RunArrays`, the same arrays
next to a layout, which the decoder builds straight from the payload.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from hurray_decl.errors import OnnxLightError
from hurray_decl.onnx_light.methods.cast import CAST_WIDTHS  # the cast method owns its dtype widths
from hurray_decl.onnx_light.numerics import DataType
from hurray_decl.onnx_light.profiles import PROFILES, QuantizationFormat, QuantizationMethod, require_format

__all__ = [
    "U32_MAX",
    "QuantizationBlockLayout",
    "QuantizationBlockParameters",
    "QuantizationPlan",
    "QuantizationRun",
    "RunArrays",
    "make_quantization_plan",
]

U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1


@dataclass
class QuantizationBlockLayout:
    """The nine-value block header shared by every block of a run (DIGEST.md § 5.5)."""

    count: int
    method: int = QuantizationMethod.AFFINE
    bits: int = 4
    signed_codes: int = 1
    books: int = 1
    entries: int = 0
    vector_size: int = 1
    base3: int = 0
    cast_type: int = int(DataType.FLOAT16)

    def header(self) -> tuple[int, ...]:
        return (int(self.count), int(self.method), int(self.bits), int(self.signed_codes),
                int(self.books), int(self.entries), int(self.vector_size), int(self.base3),
                int(self.cast_type))

    @classmethod
    def from_header(cls, values: Sequence[int]) -> QuantizationBlockLayout:
        return cls(*(int(v) for v in values))

    @property
    def table_size(self) -> int:
        """T: doubles in one block's table (books x entries x vector for codebooks, else 0)."""
        if int(self.method) != QuantizationMethod.CODEBOOK:
            return 0
        return int(self.books) * int(self.entries) * int(self.vector_size)

    @property
    def code_count(self) -> int:
        """Codes per block (OL-WIRE-31)."""
        if int(self.method) == QuantizationMethod.CODEBOOK:
            if int(self.vector_size) <= 0:  # asked before the layout is validated (a dump of any bytes)
                raise OnnxLightError("OL-PLAN-17", "a codebook block needs vector_size > 0",
                                     path="layout -> vector_size", actual=int(self.vector_size), expected="> 0")
            return -(-int(self.count) // int(self.vector_size)) * int(self.books)
        return int(self.count)

    @property
    def code_bytes(self) -> int:
        """C: packed code bytes of one block (OL-WIRE-32)."""
        if int(self.method) == QuantizationMethod.CAST:
            return int(self.count) * CAST_WIDTHS[int(self.cast_type)]
        if int(self.base3):
            return -(-self.code_count // 5)
        return -(-self.code_count * int(self.bits) // 8)


@dataclass
class QuantizationBlockParameters:
    """The numerical parameters of one block; ``codebook`` is flat (book -> entry -> component)."""

    scale: float = 1.0
    zero_point: float = 0.0
    offset: float = 0.0
    codebook: list[float] = field(default_factory=list)

    def copy(self) -> QuantizationBlockParameters:
        return QuantizationBlockParameters(self.scale, self.zero_point, self.offset, list(self.codebook))


def _number(value, name: str, path: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise OnnxLightError("OL-PLAN-10", f"a block {name} is not a number", path=path,
                             actual=repr(value), expected="a number") from exc


class QuantizationRun:
    """Blocks sharing one layout, their parameters held as NumPy arrays (one row per block).

    ``blocks`` builds per-block :class:`QuantizationBlockParameters` copies on request; assign the
    list back to change it, or use :meth:`block` / :meth:`set_block`. The array properties
    ``scales``, ``zero_points``, ``offsets`` and ``codebooks`` read and write every block at once.
    """

    _scale: np.ndarray
    _zero_point: np.ndarray
    _offset: np.ndarray
    _codebook: np.ndarray | None
    """One table per row; None while the tables differ in length (then ``_ragged`` holds them)."""
    _ragged: list[list[float]]  # empty while _codebook holds the tables

    def __init__(self, layout: QuantizationBlockLayout,
                 blocks: Iterable[QuantizationBlockParameters] = ()) -> None:
        self.layout = layout
        self.blocks = blocks

    @classmethod
    def uniform(cls, layout: QuantizationBlockLayout, block: QuantizationBlockParameters,
                count: int) -> QuantizationRun:
        """``count`` copies of ``block``, built as arrays (no object per block)."""
        run = cls(layout)
        run._scale = np.full(count, _number(block.scale, "scale", "block -> scale"))
        run._zero_point = np.full(count, _number(block.zero_point, "zero_point", "block -> zero_point"))
        run._offset = np.full(count, _number(block.offset, "offset", "block -> offset"))
        table = np.asarray([_number(v, "codebook entry", "block -> codebook") for v in block.codebook])
        run._codebook = np.tile(table, (count, 1)).reshape(count, table.size)
        return run

    @classmethod
    def from_arrays(cls, layout: QuantizationBlockLayout, scale, zero_point, offset,
                    codebook) -> QuantizationRun:
        """A run from per-block arrays (``codebook`` is ``[blocks, T]``); the arrays are copied."""
        run = cls(layout)
        run._scale = np.array(scale, dtype=np.float64).reshape(-1)
        count = run._scale.size
        run._zero_point = np.array(zero_point, dtype=np.float64).reshape(count)
        run._offset = np.array(offset, dtype=np.float64).reshape(count)
        run._codebook = np.array(codebook, dtype=np.float64).reshape(count, -1) if count else np.zeros((0, 0))
        return run

    @property
    def blocks(self) -> list[QuantizationBlockParameters]:
        if self._codebook is None:
            tables = [list(t) for t in self._ragged]
        else:
            tables = self._codebook.tolist()
        return [QuantizationBlockParameters(s, z, o, t) for s, z, o, t in
                zip(self._scale.tolist(), self._zero_point.tolist(), self._offset.tolist(), tables)]

    @blocks.setter
    def blocks(self, blocks: Iterable[QuantizationBlockParameters]) -> None:
        blocks = list(blocks)
        params = [(_number(b.scale, "scale", f"blocks[{j}] -> scale"),
                   _number(b.zero_point, "zero_point", f"blocks[{j}] -> zero_point"),
                   _number(b.offset, "offset", f"blocks[{j}] -> offset")) for j, b in enumerate(blocks)]
        table = np.array(params, dtype=np.float64).reshape(len(blocks), 3)
        self._scale, self._zero_point, self._offset = (table[:, i].copy() for i in range(3))
        self._set_tables([[_number(v, "codebook entry", f"blocks[{j}] -> codebook") for v in b.codebook]
                          for j, b in enumerate(blocks)])

    def _set_tables(self, tables: list[list[float]]) -> None:
        widths = {len(t) for t in tables}
        if len(widths) > 1:   # kept as given: validation names the block whose table is off (OL-PLAN-19)
            self._codebook, self._ragged = None, [list(t) for t in tables]
        else:
            width = widths.pop() if widths else 0
            self._codebook, self._ragged = np.array(tables, dtype=np.float64).reshape(len(tables), width), []

    def block(self, j: int) -> QuantizationBlockParameters:
        table = self._ragged[j] if self._codebook is None else self._codebook[j].tolist()
        return QuantizationBlockParameters(float(self._scale[j]), float(self._zero_point[j]),
                                           float(self._offset[j]), list(table))

    def set_block(self, j: int, block: QuantizationBlockParameters) -> None:
        j = range(len(self))[j]   # IndexError for a block that does not exist, as a list would
        self._scale[j] = _number(block.scale, "scale", f"blocks[{j}] -> scale")
        self._zero_point[j] = _number(block.zero_point, "zero_point", f"blocks[{j}] -> zero_point")
        self._offset[j] = _number(block.offset, "offset", f"blocks[{j}] -> offset")
        table = [_number(v, "codebook entry", f"blocks[{j}] -> codebook") for v in block.codebook]
        if self._codebook is not None and len(table) == self._codebook.shape[1]:
            self._codebook[j] = table
        else:
            tables = [list(t) for t in self._ragged] if self._codebook is None else self._codebook.tolist()
            tables[j] = table
            self._set_tables(tables)

    def _array(self, name: str) -> np.ndarray:
        return getattr(self, name).copy()

    def _assign(self, name: str, values) -> None:
        array = np.array(values, dtype=np.float64).reshape(-1)
        if array.size == 1:
            array = np.full(len(self), array[0])
        if array.size != len(self):
            raise OnnxLightError("OL-PLAN-10", "one value per block is needed", path=name.lstrip("_"),
                                 actual=array.size, expected=len(self))
        setattr(self, name, array)

    scales = property(lambda self: self._array("_scale"), lambda self, v: self._assign("_scale", v),
                      doc="Every block's scale (float64 [blocks]); a copy.")
    zero_points = property(lambda self: self._array("_zero_point"), lambda self, v: self._assign("_zero_point", v),
                           doc="Every block's zero point (float64 [blocks]); a copy.")
    offsets = property(lambda self: self._array("_offset"), lambda self, v: self._assign("_offset", v),
                       doc="Every block's offset (float64 [blocks]); a copy.")

    @property
    def codebooks(self) -> np.ndarray:
        """Every block's table (float64 [blocks, T]); a copy. Tables of unequal lengths refuse."""
        if self._codebook is None:
            raise OnnxLightError("OL-PLAN-19", "the blocks' codebooks have different lengths",
                                 path="codebooks", actual=sorted({len(t) for t in self._ragged}))
        return self._codebook.copy()

    @codebooks.setter
    def codebooks(self, values) -> None:
        array = np.array(values, dtype=np.float64)
        if array.ndim < 2:   # one table for every block
            array = np.broadcast_to(array.reshape(1, -1), (len(self), array.size))
        self._codebook, self._ragged = array.reshape(len(self), -1).copy(), []

    def copy(self) -> QuantizationRun:
        run = QuantizationRun(copy.copy(self.layout))
        run._scale, run._zero_point, run._offset = self._scale.copy(), self._zero_point.copy(), self._offset.copy()
        run._codebook = None if self._codebook is None else self._codebook.copy()
        run._ragged = [list(t) for t in self._ragged]
        return run

    def __len__(self) -> int:
        return int(self._scale.shape[0])

    def __repr__(self) -> str:
        return f"QuantizationRun(layout={self.layout!r}, blocks={len(self)})"


class QuantizationPlan:
    """A profile, its runs, and the optional permutation, transform pair and outliers."""

    def __init__(self, format: QuantizationFormat, runs: Iterable[QuantizationRun] = (),
                 *, permutation: Iterable[int] = (), transform_size: int = 0,
                 forward: Iterable[float] = (), inverse: Iterable[float] = (),
                 outliers: Iterable[int] = (), matrix_shape: Iterable[int] = ()) -> None:
        self.format = format
        self._runs = [r.copy() for r in runs]
        self.permutation = list(permutation)
        self.transform_size = int(transform_size)
        self.forward = list(forward)
        self.inverse = list(inverse)
        self.outliers = list(outliers)
        self.matrix_shape = list(matrix_shape)

    @property
    def format(self) -> QuantizationFormat:
        return self._format

    @format.setter
    def format(self, value: QuantizationFormat) -> None:
        self._format = require_format(value, "plan.format")

    @property
    def runs(self) -> list[QuantizationRun]:
        return [r.copy() for r in self._runs]

    @runs.setter
    def runs(self, runs: Iterable[QuantizationRun]) -> None:
        self._runs = [r.copy() for r in runs]

    def run(self, i: int) -> QuantizationRun:
        return self._runs[i].copy()

    def set_run(self, i: int, run: QuantizationRun) -> None:
        self._runs[i] = run.copy()

    def __repr__(self) -> str:
        return (f"QuantizationPlan({self._format.name}, runs={self._runs!r}, "
                f"P={len(self.permutation)}, n={self.transform_size}, O={len(self.outliers)})")


@dataclass
class RunArrays:
    """One run with its block parameters as arrays: the form the codec computes with."""

    layout: QuantizationBlockLayout
    scale: np.ndarray        # float64 [blocks]
    zero_point: np.ndarray   # float64 [blocks]
    offset: np.ndarray       # float64 [blocks]
    codebook: np.ndarray     # float64 [blocks, T] (T = len of each supplied table)

    @property
    def blocks(self) -> int:
        return int(self.scale.shape[0])

    @classmethod
    def from_run(cls, run: QuantizationRun, path: str) -> RunArrays:
        if run._codebook is None:
            # Tables of different lengths in one run cannot all match the layout's T.
            expected = run.layout.table_size
            j = next(i for i, t in enumerate(run._ragged) if len(t) != expected)
            raise OnnxLightError(
                "OL-PLAN-19", "the codebook length differs from books x entries x vector",
                path=f"{path} -> blocks[{j}] -> codebook", actual=len(run._ragged[j]),
                expected=expected,
            )
        return cls(copy.copy(run.layout), run._scale.copy(), run._zero_point.copy(), run._offset.copy(),
                   run._codebook.copy())

    def part(self, start: int, stop: int) -> RunArrays:
        """Blocks ``start .. stop - 1`` as views (for chunked decoding)."""
        return RunArrays(self.layout, self.scale[start:stop], self.zero_point[start:stop],
                         self.offset[start:stop], self.codebook[start:stop])

    def to_run(self) -> QuantizationRun:
        return QuantizationRun.from_arrays(copy.copy(self.layout), self.scale, self.zero_point, self.offset,
                                           self.codebook.reshape(self.blocks, -1))


def default_layout(fmt: QuantizationFormat, count: int) -> QuantizationBlockLayout:
    """The profile's layout for blocks of ``count`` elements (OL-PROF-05 .. OL-PROF-26)."""
    d = PROFILES[fmt]
    return QuantizationBlockLayout(count, d.method, d.bits, d.signed, d.books, d.entries,
                                   d.vector, d.base3, d.cast_type)


def default_block(fmt: QuantizationFormat) -> QuantizationBlockParameters:
    d = PROFILES[fmt]
    return QuantizationBlockParameters(1.0, d.zero_point, 0.0, list(d.table_values))


def make_quantization_plan(format: QuantizationFormat, count: int,
                           block_size: int = 128) -> QuantizationPlan:
    """Divide ``count`` elements into contiguous blocks of at most ``block_size`` (OL-PLAN-02)."""
    fmt = require_format(format)
    if not fmt.portable:
        raise OnnxLightError(
            "OL-PLAN-03", "ORT MatMulNBits profiles are planned with make_matmul_nbits_plan, "
            "not make_quantization_plan", path="format", actual=fmt.wire_name,
            expected="a portable profile (0..39)",
        )
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) \
            or not 1 <= int(block_size) <= U32_MAX:
        raise OnnxLightError("OL-PLAN-01", "block_size is outside [1, 2^32 - 1]",
                             path="block_size", actual=block_size, expected="1 .. 4294967295")
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or int(count) < 0:
        raise OnnxLightError("OL-PLAN-27", "count must be a non-negative element count",
                             path="count", actual=count, expected=">= 0")
    count, block_size = int(count), int(block_size)
    runs: list[QuantizationRun] = []
    block = default_block(fmt)
    if 0 < count < block_size:
        runs.append(QuantizationRun.uniform(default_layout(fmt, count), block, 1))
    elif count:
        full, rest = divmod(count, block_size)
        runs.append(QuantizationRun.uniform(default_layout(fmt, block_size), block, full))
        if rest:
            runs.append(QuantizationRun.uniform(default_layout(fmt, rest), block, 1))
    plan = QuantizationPlan(fmt)
    plan._runs = runs   # fresh runs: no defensive copy needed
    return plan
