"""Hurray tensor descriptors: framing, every layout, the buffer table and the optional
sections (DIGEST § 5), with the quantization descriptor checked against its tensor.

The names below are imported from their submodule on first use, so that reading a descriptor
does not load the writer or the buffer validation (see ``tests/test_cli_startup.py``).
"""

from __future__ import annotations

import importlib
from typing import Any

_SOURCES: dict[str, tuple[str, ...]] = {
    "buffers": ("BufferHandle",),
    "layouts": ("COO", "CSC", "CSF", "CSR", "LAYOUTS", "BlockPaged", "ColumnMajor", "CompositeHead", "Hilbert",
                "Layout", "Morton", "OpaqueLayout", "PrivateLayout", "RowMajor", "Strided", "Tiled"),
    "model": ("TensorDescriptor",),
    "reader": ("read_tensor_descriptor", "skip_descriptor"),
    "sections": ("CompositeMember", "ExtensionType", "Shard", "Statistics"),
    "validate": ("validate_buffers",),
    "writer": ("write_tensor_descriptor",),
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
