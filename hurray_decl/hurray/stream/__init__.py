"""Hurray streams (STREAM-FORMAT.md): tensor descriptors, each followed by its buffers, back to
back, read as they arrive from bytes, files, pipes and sockets, and written to any sink.

:func:`read_stream` yields :class:`TensorItem` and :class:`CompositeItem` values;
:class:`StreamWriter` writes them. Every refusal carries an HS rule code, a ``frame[k]...`` path
and the byte offset in the stream.

The names below are imported from their submodule on first use, so that the command line's
stream detection (:mod:`.frames`) loads neither the reader's buffer checks nor NumPy.
"""

from __future__ import annotations

import importlib
from typing import Any

_SOURCES: dict[str, tuple[str, ...]] = {
    "frames": ("DESCRIPTOR_LIMIT", "CompositeItem", "Item", "TensorItem"),
    "reader": ("StreamReader", "read_stream"),
    "writer": ("StreamWriter", "write_stream"),
}
"""submodule -> the public names it defines."""

_MODULE_OF = {name: module for module, names in _SOURCES.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
