"""Hurray streams (STREAM-FORMAT.md): tensor descriptors, each followed by its buffers, back to
back, read as they arrive from bytes, files, pipes and sockets, and written to any sink.

:func:`read_stream` yields :class:`TensorItem` and :class:`CompositeItem` values;
:class:`StreamWriter` writes them. Every refusal carries an HS rule code, a ``frame[k]...`` path
and the byte offset in the stream.
"""

from hurray_decl.hurray.stream.frames import DESCRIPTOR_LIMIT, CompositeItem, Item, TensorItem
from hurray_decl.hurray.stream.reader import StreamReader, read_stream
from hurray_decl.hurray.stream.writer import StreamWriter, write_stream

__all__ = ["DESCRIPTOR_LIMIT", "CompositeItem", "Item", "StreamReader", "StreamWriter", "TensorItem", "read_stream",
           "write_stream"]
