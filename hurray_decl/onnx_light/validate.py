"""Plan and block validation (RULES.md OL-PLAN), shared by the encoder and the decoder.

Every check works on whole arrays of block parameters, so a decoded plan of half a million
blocks is validated without a Python loop per block. An error names the first offending block.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hurray_decl.errors import OnnxLightError
from hurray_decl.onnx_light.extended import inverse_deviation_ok
from hurray_decl.onnx_light.methods.affine import code_range
from hurray_decl.onnx_light.methods.cast import CAST_WIDTHS
from hurray_decl.onnx_light.numerics import LOGICAL_CODES, LOGICAL_NAMES, spelled
from hurray_decl.onnx_light.plan import U32_MAX, U64_MAX, QuantizationBlockLayout, RunArrays
from hurray_decl.onnx_light.profiles import PROFILES, QuantizationFormat, QuantizationMethod
from hurray_decl.onnx_light.wire import record_bytes

__all__ = ["validate_geometry", "validate_layout", "validate_run"]


_METHOD_CODES = frozenset(int(method) for method in QuantizationMethod)
_METHODS = spelled([f"{int(method)} {method.wire_name}" for method in QuantizationMethod])
"""``0 affine, 1 codebook or 2 cast``."""


def _fail(code: str, message: str, path: str, actual=None, expected=None) -> OnnxLightError:
    return OnnxLightError(code, message, path=path, actual=actual, expected=expected)


def validate_layout(layout: QuantizationBlockLayout, path: str) -> None:
    """The header checks of one run (OL-PLAN-04, -05, -07, -08, -09, -17, -18, -24, -25)."""
    count, method = int(layout.count), int(layout.method)
    if count > U32_MAX:
        raise _fail("OL-PLAN-04", "block count is above 2^32 - 1", f"{path} -> count", count, "<= 4294967295")
    if count <= 0:
        raise _fail("OL-PLAN-05", "block count is 0", f"{path} -> count", count, ">= 1")
    if method not in _METHOD_CODES:
        raise _fail("OL-PLAN-07", "unknown block method", f"{path} -> method", method, _METHODS)
    if not 1 <= int(layout.bits) <= 16:
        raise _fail("OL-PLAN-08", "bits is outside [1, 16]", f"{path} -> bits", layout.bits, "1 .. 16")
    if int(layout.cast_type) not in CAST_WIDTHS:
        raise _fail("OL-PLAN-09", f"cast dtype is not {LOGICAL_NAMES}",
                    f"{path} -> cast_type", layout.cast_type, LOGICAL_CODES)
    if int(layout.signed_codes) not in (0, 1):
        raise _fail("OL-WIRE-22", "the signed flag is not 0 or 1", f"{path} -> signed_codes",
                    layout.signed_codes, "0 or 1")
    if int(layout.base3) not in (0, 1):
        raise _fail("OL-WIRE-22", "the base3 flag is not 0 or 1", f"{path} -> base3", layout.base3, "0 or 1")
    books, entries, vector = int(layout.books), int(layout.entries), int(layout.vector_size)
    if method == QuantizationMethod.CODEBOOK:
        for name, value in (("books", books), ("entries", entries), ("vector_size", vector)):
            if value <= 0:
                raise _fail("OL-PLAN-17", f"a codebook block needs {name} > 0", f"{path} -> {name}", value, "> 0")
        if entries > 1 << int(layout.bits):
            raise _fail("OL-PLAN-18", "entries exceed 2^bits", f"{path} -> entries", entries,
                        f"<= {1 << int(layout.bits)}")
    if int(layout.base3) and not (method == QuantizationMethod.CODEBOOK and books == 1
                                  and entries == 3 and vector == 1):
        raise _fail("OL-PLAN-24", "base3 needs a codebook with books 1, entries 3 and vector 1",
                    f"{path} -> base3", layout.header(), "codebook, books 1, entries 3, vector 1")
    if min(books, entries, vector) < 0 or max(books, entries, vector) > U32_MAX:
        raise _fail("OL-WIRE-21", "a header value is outside [0, 2^32 - 1]", path, layout.header())
    sizes = (layout.table_size * 8, layout.code_count * int(layout.bits),
             count * CAST_WIDTHS[int(layout.cast_type)], record_bytes(layout))
    if max(sizes) > U64_MAX:
        raise _fail("OL-PLAN-25", "a size product overflows 64 bits", path, max(sizes), "<= 2^64 - 1")


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def validate_run(run: RunArrays, path: str) -> None:
    """The block-parameter checks of one run (OL-PLAN-06, -10 .. -16, -19 .. -23)."""
    layout = run.layout
    validate_layout(layout, path)
    if run.blocks == 0:
        raise _fail("OL-PLAN-06", "a run has no blocks", f"{path} -> blocks", 0, ">= 1")
    method = int(layout.method)
    scale, zp, offset, table = run.scale, run.zero_point, run.offset, run.codebook

    def check(mask: np.ndarray, code: str, message: str, name: str, values: np.ndarray, expected) -> None:
        if mask.any():
            j = _first(mask)
            raise _fail(code, message, f"{path} -> blocks[{j}] -> {name}",
                        repr(float(values[j])), expected)

    check(~np.isfinite(scale), "OL-PLAN-10", "scale is not finite", "scale", scale, "finite")
    check(scale <= 0, "OL-PLAN-11", "scale must be > 0", "scale", scale, "> 0")
    check(~np.isfinite(zp), "OL-PLAN-12", "zero point is not finite", "zero_point", zp, "finite")
    check(~np.isfinite(offset), "OL-PLAN-13", "offset is not finite", "offset", offset, "finite")
    if method != QuantizationMethod.AFFINE:
        check(offset != 0, "OL-PLAN-14", "only affine blocks may have an offset", "offset", offset, 0)
    if method == QuantizationMethod.AFFINE:
        check(zp != np.floor(zp), "OL-PLAN-15", "an affine zero point must be an integer",
              "zero_point", zp, "an integer")
        lo, hi = code_range(layout)
        check((zp < lo) | (zp > hi), "OL-PLAN-16", "the zero point is outside the code range",
              "zero_point", zp, f"{lo} .. {hi}")
    if method == QuantizationMethod.CODEBOOK:
        expected = layout.table_size
        if table.shape[1] != expected:
            raise _fail("OL-PLAN-19", "the codebook length differs from books x entries x vector"
                        " (learned-table profiles need their codebook)",
                        f"{path} -> blocks[0] -> codebook", table.shape[1], expected)
        bad = ~np.isfinite(table).all(axis=1)
        if bad.any():
            j = _first(bad)
            raise _fail("OL-PLAN-20", "a codebook entry is not finite", f"{path} -> blocks[{j}] -> codebook",
                        "non-finite entry", "finite")
        check(zp != 0, "OL-PLAN-21", "a codebook block needs zero point 0", "zero_point", zp, 0)
    else:
        if table.shape[1] != 0:
            raise _fail("OL-PLAN-23", "affine and cast blocks take no table", f"{path} -> blocks[0] -> codebook",
                        table.shape[1], 0)
    if method == QuantizationMethod.CAST:
        check(zp != 0, "OL-PLAN-22", "a cast block needs zero point 0", "zero_point", zp, 0)


def validate_geometry(fmt: QuantizationFormat, runs: Sequence[RunArrays], count: int,
                      permutation: np.ndarray, outliers: np.ndarray, transform_size: int,
                      forward: np.ndarray, inverse: np.ndarray, matrix_shape: Sequence[int]) -> None:
    """The plan-level checks (OL-PROF-03, OL-PLAN-26 .. -35) for ``count`` logical elements."""
    if not isinstance(fmt, QuantizationFormat) or not 0 <= int(fmt) < len(PROFILES):
        raise _fail("OL-PROF-03", "the plan's format is not one of the 43 profiles", "plan -> format",
                    repr(fmt), "0 .. 42")
    if not fmt.portable:
        raise _fail("OL-PLAN-03", "ORT MatMulNBits plans are encoded by the ORT layout, not the portable one",
                    "plan -> format", fmt.wire_name, "a portable profile")
    if len(matrix_shape):
        raise _fail("OL-PLAN-26", "matrix_shape is reserved for ORT profiles", "plan -> matrix_shape",
                    list(matrix_shape), "[]")
    covered = sum(int(r.layout.count) * r.blocks for r in runs)
    if covered != count:
        raise _fail("OL-PLAN-27", "the blocks do not cover the logical elements exactly", "plan -> runs",
                    covered, count)
    if permutation.size:
        if permutation.size != count or not np.array_equal(np.sort(permutation), np.arange(count)):
            raise _fail("OL-PLAN-28", "the permutation is not each index of [0, N) exactly once",
                        "plan -> permutation", permutation.size, f"a permutation of range({count})")
    if outliers.size:
        if ((outliers < 0) | (outliers >= count)).any():
            j = _first((outliers < 0) | (outliers >= count))
            raise _fail("OL-PLAN-29", "an outlier index is outside [0, N)", f"plan -> outliers[{j}]",
                        int(outliers[j]), f"0 .. {count - 1}")
        if np.unique(outliers).size != outliers.size:
            raise _fail("OL-PLAN-30", "an outlier index is repeated", "plan -> outliers",
                        outliers.tolist()[:16], "unique indices")
    n = int(transform_size)
    if n < 0:
        raise _fail("OL-PLAN-31", "transform_size is negative", "plan -> transform_size", n, ">= 0")
    for name, matrix in (("forward", forward), ("inverse", inverse)):
        if matrix.size != n * n:
            raise _fail("OL-PLAN-31", f"{name} does not hold transform_size^2 values",
                        f"plan -> {name}", matrix.size, n * n)
    if n and count % n:
        raise _fail("OL-PLAN-32", "transform_size does not divide the element count",
                    "plan -> transform_size", n, f"a divisor of {count}")
    for name, matrix in (("forward", forward), ("inverse", inverse)):
        if not np.isfinite(matrix).all():
            raise _fail("OL-PLAN-33", f"{name} has a non-finite entry", f"plan -> {name}",
                        "non-finite", "finite")
    if n:
        ok = inverse_deviation_ok(forward.reshape(n, n), inverse.reshape(n, n))
        if not ok.all():
            i, j = (int(v) for v in np.argwhere(~ok)[0])
            product = float(np.dot(forward.reshape(n, n)[i], inverse.reshape(n, n)[:, j]))
            raise _fail("OL-PLAN-34", "forward x inverse differs from the identity by more than 1e-6",
                        f"plan -> forward x inverse [{i}][{j}]", repr(product), repr(float(i == j)))
    if PROFILES[fmt].needs_transform and n == 0:
        raise _fail("OL-PLAN-35", f"{fmt.wire_name} requires transforms (transform_size > 0)",
                    "plan -> transform_size", 0, "> 0")
