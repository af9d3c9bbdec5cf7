"""Codebook blocks: scalar, vector and additive tables with a greedy residual search.

Encoding (DIGEST.md § 8.2): per logical vector (the last may be partial), the residual is
``x / scale``; for each book in turn the entry with the smallest squared distance over the
logical components is chosen, ties keeping the first entry, and subtracted from the residual.
Distances accumulate in 80-bit extended precision as in the original's x86-64 build (OD-02),
and a candidate wins only when strictly smaller.

Decoding: ``scale * sum over books of table[book][index][j]``; an index >= entries is refused.
"""

from __future__ import annotations

import numpy as np

from hurray_decl.errors import OnnxLightError
from hurray_decl.onnx_light.extended import nearest_entries
from hurray_decl.onnx_light.methods.affine import ratio_scales
from hurray_decl.onnx_light.packing import pack_base3, pack_bits, unpack_base3, unpack_bits

__all__ = ["calibrate", "decode", "encode", "magnitude"]

_CHUNK = 1 << 21  # distance-matrix elements per chunk


def _tables(run) -> np.ndarray:
    layout = run.layout
    return run.codebook.reshape(run.blocks, int(layout.books), int(layout.entries), int(layout.vector_size))


def _vectors(values: np.ndarray, vector: int) -> tuple[np.ndarray, np.ndarray]:
    """Values [B, count] as [B, nvec, vector] (zero-padded) and the logical-component mask."""
    blocks, count = values.shape
    nvec = -(-count // vector)
    padded = np.zeros((blocks, nvec * vector))
    padded[:, :count] = values
    mask = np.zeros(nvec * vector, dtype=bool)
    mask[:count] = True
    return padded.reshape(blocks, nvec, vector), mask.reshape(nvec, vector)


def search(residual: np.ndarray, tables: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Greedy residual search; returns indices [B, nvec, books]. ``residual`` is updated in place."""
    blocks, nvec, vector = residual.shape
    books, entries = tables.shape[1], tables.shape[2]
    indices = np.empty((blocks, nvec, books), dtype=np.int64)
    weight = mask.astype(np.float64)
    step = max(1, _CHUNK // max(1, nvec * entries * vector))
    for book in range(books):
        for start in range(0, blocks, step):
            r = residual[start:start + step]                     # [b, nvec, v]
            t = tables[start:start + step, book]                 # [b, E, v]
            choice = nearest_entries(r, t, mask)
            indices[start:start + step, :, book] = choice
            chosen = np.take_along_axis(t, choice.reshape(choice.shape[0], -1)[:, :, None], axis=1)
            with np.errstate(over="ignore", invalid="ignore"):
                r -= chosen * weight
    return indices


def encode(values: np.ndarray, run, path: str) -> np.ndarray:
    layout = run.layout
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = values / run.scale[:, None]
    if not np.isfinite(scaled).all():
        j, k = (int(i) for i in np.argwhere(~np.isfinite(scaled))[0])
        raise OnnxLightError("OL-NUM-16", "the codebook residual x / scale is not finite",
                             path=f"{path} -> blocks[{j}] -> values[{k}]",
                             actual=repr(float(values[j, k])), expected="finite")
    residual, mask = _vectors(scaled, int(layout.vector_size))
    indices = search(residual, _tables(run), mask).reshape(run.blocks, -1)
    if not np.isfinite(residual).all():   # a chosen entry subtracted past the double range
        j = int(np.argwhere(~np.isfinite(residual))[0][0])
        raise OnnxLightError("OL-NUM-16", "the codebook residual overflows after subtracting an entry",
                             path=f"{path} -> blocks[{j}]", actual="non-finite", expected="finite")
    if int(layout.base3):
        return pack_base3(indices)
    return pack_bits(indices.astype(np.uint32), int(layout.bits))


def decode(data: np.ndarray, run, path: str) -> np.ndarray:
    layout = run.layout
    codes = layout.code_count
    if int(layout.base3):
        indices = unpack_base3(data, codes, path)
    else:
        indices = unpack_bits(data, codes, int(layout.bits), path)
    entries = int(layout.entries)
    if (indices >= entries).any():
        j, k = (int(i) for i in np.argwhere(indices >= entries)[0])
        raise OnnxLightError("OL-NUM-18", "a codebook index is >= entries",
                             path=f"{path}[{j}] -> codes -> index {k}", actual=int(indices[j, k]),
                             expected=f"< {entries}")
    tables = _tables(run)
    books, vector = tables.shape[1], tables.shape[3]
    indices = indices.reshape(run.blocks, -1, books).astype(np.intp)
    total = np.zeros((run.blocks, indices.shape[1], vector))
    for book in range(books):
        total = total + np.take_along_axis(tables[:, book], indices[:, :, book, None], axis=1)
    values = total.reshape(run.blocks, -1)[:, : int(layout.count)]
    return values * run.scale[:, None]


def magnitude(run) -> float:
    """An upper bound of |scale * sum over books of an entry component| over the run."""
    tables = _tables(run)
    if not tables.size:
        return 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        worst = float(np.abs(tables).max(axis=(0, 2, 3)).sum())
        return worst * float(np.abs(run.scale).max()) * (1 + 2.0**-40)


def calibrate(values: np.ndarray, run, path: str) -> np.ndarray:
    """Scalar tables only: low and high are the smallest and largest entries (OL-CAL-15)."""
    layout = run.layout
    if int(layout.books) != 1 or int(layout.vector_size) != 1:
        raise OnnxLightError("OL-CAL-15", "calibration requires explicit scales for vector/additive "
                             "codebooks", path=f"{path} -> scales", actual=(layout.books, layout.vector_size),
                             expected="books 1 and vector 1")
    return ratio_scales(values, run.codebook.min(axis=1), run.codebook.max(axis=1))
