"""Hurray streams (STREAM-FORMAT.md): tensor descriptors, each followed by its buffers, back to
back, read as they arrive from bytes, files, pipes and sockets, and written to any sink.

:func:`read_stream` yields :class:`TensorItem` and :class:`CompositeItem` values;
:class:`StreamWriter` writes them. Every refusal carries an HS rule code, a ``frame[k]...`` path
and the byte offset in the stream.

The names below are imported from their submodule on first use, so that the command line's
stream detection (:mod:`.frames`) loads neither the reader's buffer checks nor NumPy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hurray_decl.lazy_modules import lazy_package

__all__, __getattr__, __dir__ = lazy_package(globals(), {
    "hurray_decl.hurray.stream.frames": ("DESCRIPTOR_LIMIT", "CompositeItem", "Item", "TensorItem"),
    "hurray_decl.hurray.stream.reader": ("StreamReader", "read_stream"),
    "hurray_decl.hurray.stream.writer": ("StreamWriter", "write_stream"),
})


if TYPE_CHECKING:  # the public names, each imported from its submodule on first use (see __getattr__)
    from hurray_decl.hurray.stream.frames import (
        DESCRIPTOR_LIMIT as DESCRIPTOR_LIMIT,
        CompositeItem as CompositeItem,
        Item as Item,
        TensorItem as TensorItem,
    )
    from hurray_decl.hurray.stream.reader import StreamReader as StreamReader, read_stream as read_stream
    from hurray_decl.hurray.stream.writer import StreamWriter as StreamWriter, write_stream as write_stream
