"""The quantization plan: plan -> runs -> (layout, blocks), and the portable plan factory.

The classes mirror the original's Python surface (DIGEST.md § 13): ``plan.runs`` and
``run.blocks`` hand out *copies*, and changes are assigned back with ``set_run`` /
``set_block`` or by assigning the list. ``run.layout`` is the run's own layout object.

For bulk work the codec converts a plan to :class:`RunArrays` (one NumPy array per block
parameter), and the decoder builds those arrays straight from the payload without creating a
Python object per block.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from ..errors import OnnxLightError
from .profiles import PROFILES, QuantizationFormat, QuantizationMethod, require_format

__all__ = [
    "QuantizationBlockLayout",
    "QuantizationBlockParameters",
    "QuantizationRun",
    "QuantizationPlan",
    "RunArrays",
    "make_quantization_plan",
    "U32_MAX",
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
    cast_type: int = 10

    def header(self) -> tuple[int, ...]:
        return (int(self.count), int(self.method), int(self.bits), int(self.signed_codes),
                int(self.books), int(self.entries), int(self.vector_size), int(self.base3),
                int(self.cast_type))

    @classmethod
    def from_header(cls, values: Sequence[int]) -> "QuantizationBlockLayout":
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
            return -(-int(self.count) // int(self.vector_size)) * int(self.books)
        return int(self.count)

    @property
    def code_bytes(self) -> int:
        """C: packed code bytes of one block (OL-WIRE-32)."""
        from .methods.cast import CAST_WIDTHS  # the cast method owns its dtype widths

        if int(self.method) == QuantizationMethod.CAST:
            return int(self.count) * CAST_WIDTHS[int(self.cast_type)]
        if int(self.base3):
            return -(-self.code_count // 5)
        return -(-self.code_count * int(self.bits) // 8)

    @property
    def record_size(self) -> int:
        """Payload bytes of one block: scale, zero_point, offset (f64 each), table, codes."""
        return 8 + 8 + 8 + 8 * self.table_size + self.code_bytes


@dataclass
class QuantizationBlockParameters:
    """The numerical parameters of one block; ``codebook`` is flat (book -> entry -> component)."""

    scale: float = 1.0
    zero_point: float = 0.0
    offset: float = 0.0
    codebook: list[float] = field(default_factory=list)

    def copy(self) -> "QuantizationBlockParameters":
        return QuantizationBlockParameters(self.scale, self.zero_point, self.offset, list(self.codebook))


def _copy_blocks(blocks: Iterable[QuantizationBlockParameters]) -> list[QuantizationBlockParameters]:
    return [b.copy() for b in blocks]


class QuantizationRun:
    """Blocks sharing one layout. ``blocks`` returns copies; assign the list back to change it."""

    def __init__(self, layout: QuantizationBlockLayout,
                 blocks: Iterable[QuantizationBlockParameters] = ()) -> None:
        self.layout = layout
        self._blocks = _copy_blocks(blocks)

    @property
    def blocks(self) -> list[QuantizationBlockParameters]:
        return _copy_blocks(self._blocks)

    @blocks.setter
    def blocks(self, blocks: Iterable[QuantizationBlockParameters]) -> None:
        self._blocks = _copy_blocks(blocks)

    def block(self, j: int) -> QuantizationBlockParameters:
        return self._blocks[j].copy()

    def set_block(self, j: int, block: QuantizationBlockParameters) -> None:
        self._blocks[j] = block.copy()

    def copy(self) -> "QuantizationRun":
        return QuantizationRun(copy.copy(self.layout), self._blocks)

    def __len__(self) -> int:
        return len(self._blocks)

    def __repr__(self) -> str:
        return f"QuantizationRun(layout={self.layout!r}, blocks={len(self._blocks)})"


class QuantizationPlan:
    """A profile, its runs, and the optional permutation, transform pair and outliers."""

    def __init__(self, format: QuantizationFormat, runs: Iterable[QuantizationRun] = (),
                 *, permutation: Sequence[int] = (), transform_size: int = 0,
                 forward: Sequence[float] = (), inverse: Sequence[float] = (),
                 outliers: Sequence[int] = (), matrix_shape: Sequence[int] = ()) -> None:
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
    def from_run(cls, run: QuantizationRun, path: str) -> "RunArrays":
        blocks = run._blocks
        lengths = {len(b.codebook) for b in blocks}
        if len(lengths) > 1:
            # Tables of different lengths in one run cannot all match the layout's T.
            expected = run.layout.table_size
            j = next(i for i, b in enumerate(blocks) if len(b.codebook) != expected)
            raise OnnxLightError(
                "OL-PLAN-19", "the codebook length differs from books x entries x vector",
                path=f"{path} -> blocks[{j}] -> codebook", actual=len(blocks[j].codebook),
                expected=expected,
            )
        width = lengths.pop() if lengths else 0
        try:
            table = np.array([b.codebook for b in blocks], dtype=np.float64).reshape(len(blocks), width)
            params = np.array([(b.scale, b.zero_point, b.offset) for b in blocks],
                              dtype=np.float64).reshape(len(blocks), 3)
        except (TypeError, ValueError) as exc:
            raise OnnxLightError("OL-PLAN-10", f"a block parameter is not a number: {exc}",
                                 path=path) from exc
        return cls(copy.copy(run.layout), params[:, 0].copy(), params[:, 1].copy(),
                   params[:, 2].copy(), table)

    def to_run(self) -> QuantizationRun:
        tables = self.codebook.tolist()
        blocks = [
            QuantizationBlockParameters(float(s), float(z), float(o), t)
            for s, z, o, t in zip(self.scale.tolist(), self.zero_point.tolist(),
                                  self.offset.tolist(), tables)
        ]
        run = QuantizationRun(copy.copy(self.layout))
        run._blocks = blocks
        return run


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
    if 0 < count < block_size:
        runs.append(QuantizationRun(default_layout(fmt, count), [default_block(fmt)]))
    elif count:
        full, rest = divmod(count, block_size)
        block = default_block(fmt)
        run = QuantizationRun(default_layout(fmt, block_size))
        run._blocks = [block.copy() for _ in range(full)]
        runs.append(run)
        if rest:
            runs.append(QuantizationRun(default_layout(fmt, rest), [block]))
    return QuantizationPlan(fmt, runs)
