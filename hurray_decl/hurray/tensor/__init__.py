"""Hurray tensor descriptors: framing, every layout, the buffer table and the optional
sections (DIGEST § 5), with the quantization descriptor checked against its tensor.

The names below are imported from their submodule on first use, so that reading a descriptor
does not load the writer or the buffer validation (see ``tests/test_cli_startup.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hurray_decl.lazy_modules import lazy_package

__all__, __getattr__, __dir__ = lazy_package(globals(), {
    "hurray_decl.hurray.tensor.buffers": ("BufferHandle",),
    "hurray_decl.hurray.tensor.layouts": (
        "COO", "CSC", "CSF", "CSR", "LAYOUTS", "BlockPaged", "ColumnMajor", "CompositeHead", "Compressed", "Hilbert",
        "Layout", "Morton", "OpaqueLayout", "PrivateLayout", "RowMajor", "Strided", "Tiled",
    ),
    "hurray_decl.hurray.tensor.model": ("TensorDescriptor",),
    "hurray_decl.hurray.tensor.reader": ("read_tensor_descriptor", "skip_descriptor"),
    "hurray_decl.hurray.tensor.sections": ("CompositeMember", "ExtensionType", "Shard", "Statistics"),
    "hurray_decl.hurray.tensor.validate": ("validate_buffers",),
    "hurray_decl.hurray.tensor.writer": ("write_tensor_descriptor",),
})


if TYPE_CHECKING:  # the public names, each imported from its submodule on first use (see __getattr__)
    from hurray_decl.hurray.tensor.buffers import BufferHandle as BufferHandle
    from hurray_decl.hurray.tensor.layouts import (
        COO as COO,
        CSC as CSC,
        CSF as CSF,
        CSR as CSR,
        LAYOUTS as LAYOUTS,
        BlockPaged as BlockPaged,
        ColumnMajor as ColumnMajor,
        CompositeHead as CompositeHead,
        Compressed as Compressed,
        Hilbert as Hilbert,
        Layout as Layout,
        Morton as Morton,
        OpaqueLayout as OpaqueLayout,
        PrivateLayout as PrivateLayout,
        RowMajor as RowMajor,
        Strided as Strided,
        Tiled as Tiled,
    )
    from hurray_decl.hurray.tensor.model import TensorDescriptor as TensorDescriptor
    from hurray_decl.hurray.tensor.reader import (
        read_tensor_descriptor as read_tensor_descriptor,
        skip_descriptor as skip_descriptor,
    )
    from hurray_decl.hurray.tensor.sections import (
        CompositeMember as CompositeMember,
        ExtensionType as ExtensionType,
        Shard as Shard,
        Statistics as Statistics,
    )
    from hurray_decl.hurray.tensor.validate import validate_buffers as validate_buffers
    from hurray_decl.hurray.tensor.writer import write_tensor_descriptor as write_tensor_descriptor
