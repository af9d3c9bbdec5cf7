"""Hurray tensor descriptors: framing, every layout, the buffer table and the optional
sections (DIGEST § 5), with the quantization descriptor checked against its tensor."""

from .buffers import BufferHandle
from .layouts import (
    COO,
    CSC,
    CSF,
    CSR,
    LAYOUTS,
    BlockPaged,
    ColumnMajor,
    CompositeHead,
    Hilbert,
    Layout,
    Morton,
    OpaqueLayout,
    PrivateLayout,
    RowMajor,
    Strided,
    Tiled,
)
from .model import TensorDescriptor
from .reader import read_tensor_descriptor, skip_descriptor
from .sections import CompositeMember, ExtensionType, Shard, Statistics
from .validate import validate_buffers
from .writer import write_tensor_descriptor

__all__ = [
    "COO", "CSC", "CSF", "CSR", "LAYOUTS", "BlockPaged", "BufferHandle", "ColumnMajor", "CompositeHead",
    "CompositeMember", "ExtensionType", "Hilbert", "Layout", "Morton", "OpaqueLayout", "PrivateLayout",
    "RowMajor", "Shard", "Statistics", "Strided", "TensorDescriptor", "Tiled", "read_tensor_descriptor",
    "skip_descriptor", "validate_buffers", "write_tensor_descriptor",
]
