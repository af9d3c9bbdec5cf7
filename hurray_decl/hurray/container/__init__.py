"""The Hurray container file (``.hrry``, FILE-FORMAT.md): one declaration of its header, KV
section, index and trailer; a reader with the O/T/V check levels; a one-pass writer.

Tensors inside are read and written through the public tensor API
(:func:`~hurray_decl.hurray.tensor.read_tensor_descriptor`, :func:`~hurray_decl.hurray.tensor.write_tensor_descriptor`,
:func:`~hurray_decl.hurray.tensor.validate_buffers`).
"""

from hurray_decl.hurray.container.crc import crc32c
from hurray_decl.hurray.container.declarations import FileFlag, KVTag
from hurray_decl.hurray.container.model import FileHeader, IndexEntry, KVValue, Trailer
from hurray_decl.hurray.container.reader import (
    Composite,
    Container,
    Placement,
    Skipped,
    Tensor,
    is_container,
    open_container,
    read_container,
    validate_container,
)

__all__ = [
    "Composite", "Container", "FileFlag", "FileHeader", "IndexEntry", "KVTag", "KVValue", "Placement", "Skipped",
    "Tensor", "Trailer", "crc32c", "is_container", "open_container", "read_container", "validate_container",
]
