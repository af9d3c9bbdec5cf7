"""The annotated hex dump of a stream: every byte named, ``frame[2].descriptor.shape[0]`` for a
descriptor field (the descriptor dump's rows, rebased) and ``frame[2].buffer[1]`` for the bytes
of a buffer (one row per buffer, its first 16 bytes shown), built frame by frame as the reader
reads; a refused frame shows the bytes it had, its failing field marked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hurray_decl.dump.rows import RAW_ROW, Dump, Row
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray.dump import tensor_dump
from hurray_decl.hurray.stream.frames import frame_path
from hurray_decl.hurray.stream.reader import read_stream
from hurray_decl.hurray.tensor.model import TensorDescriptor


def _descriptor_rows(index: int, start: int, raw: bytes, permissive: bool) -> list[Row]:
    prefix = frame_path(index, "descriptor")
    return [replace(r, offset=r.offset + start, field=f"{prefix}.{r.field}")
            for r in tensor_dump(raw, permissive=permissive).rows]


def frame_rows(index: int, start: int, raw: bytes, descriptor: TensorDescriptor, buffers: Any,
               permissive: bool = False) -> list[Row]:
    """The rows of one complete frame."""
    rows = _descriptor_rows(index, start, raw, permissive)
    at = start + len(raw)
    for i, content in enumerate(buffers):
        shown = bytes(content[:RAW_ROW]).hex(" ").upper()  # the row's size says how many bytes follow
        rows.append(Row(at, len(content), shown, frame_path(index, f"buffer[{i}]"), f"{len(content)} bytes"))
        at += len(content)
    return rows


def stream_dump(source: Any, *, permissive: bool = False,
                each: Callable[[list[Row]], None] | None = None) -> Dump:
    """Rows and verdict of the stream ``source`` (anything :func:`read_stream` reads); ``each`` is
    called with each frame's rows as the frame completes."""
    rows: list[Row] = []
    done: set[int] = set()

    def on_frame(index: int, start: int, raw: bytes, descriptor: TensorDescriptor, buffers: Any) -> None:
        done.add(index)
        new = frame_rows(index, start, raw, descriptor, buffers, permissive)
        rows.extend(new)
        if each is not None:
            each(new)

    reader = read_stream(source, permissive=permissive)
    reader.on_frame = on_frame
    error: HurrayDeclError | None = None
    try:
        for _ in reader:
            pass
    except HurrayDeclError as err:
        error = err
        index, start, raw = reader.partial
        if index not in done and raw:  # refused before it was complete: what arrived of its descriptor
            new = _descriptor_rows(index, start, raw, permissive)
            rows.extend(new)
            if each is not None:
                each(new)
    return Dump(rows, error)


__all__ = ["frame_rows", "stream_dump"]
