"""Lazy dask arrays of Hurray tensors (optional extra ``[dask]``), public as ``hurray_decl.dask``.

Each task of :func:`from_tensor` computes one window of the tensor (``t[box]``,
:meth:`~hurray_decl.hurray.values.Tensor.__getitem__`), which reads and dequantizes only that
window. A tensor read from a file is pickled as its path and name (the worker maps the file
itself), so the graph holds no data and ``dask.distributed`` can run it on other processes or
machines that see the same path.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hurray_decl.hurray.files import open_file
from hurray_decl.hurray.values import Tensor

if TYPE_CHECKING:
    import dask.array

__all__ = ["from_tensor", "open"]


def from_tensor(tensor: Tensor, chunks: Any = "auto") -> dask.array.Array:
    """A dask array of ``tensor``'s values in ``chunks`` (dask's chunk forms), one window per task."""
    return tensor.to_dask(chunks)


def open(path: str | Path, chunks: Any = "auto") -> dict[str, dask.array.Array]:
    """Every tensor of a file as a lazy dask array, by name."""
    f = open_file(path)
    return {name: from_tensor(f[name], chunks) for name in f}
