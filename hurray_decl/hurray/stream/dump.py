"""The annotated hex dump of a stream: every byte named, ``frame[2].descriptor.shape[0]`` for a
descriptor field (the descriptor dump's rows, rebased) and ``frame[2].buffer[1]`` for the bytes
of a buffer (one row per buffer, its first 16 bytes shown), built frame by frame as the reader
reads (:func:`stream_rows`: each frame's rows as the frame completes, nothing kept of the frames
before); a refused frame shows the bytes it had, its failing field marked."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from hurray_decl.dump.rows import RAW_ROW, Dump, Row, RowStream
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


def stream_rows(source: Any, *, permissive: bool = False, buffer_limit: int | None = None,
                each: Callable[[list[Row]], None] | None = None) -> RowStream:
    """Rows and verdict of the stream ``source`` (anything :func:`read_stream` reads), produced frame
    by frame as the frames arrive (a member's rows before its composite closes); ``each`` is called
    with each frame's rows as the frame completes. Memory holds one frame's rows and the open item."""

    def produce(stream: RowStream) -> Iterator[Row]:
        reader = read_stream(source, permissive=permissive, buffer_limit=buffer_limit)
        pending: list[Row] = []
        completed = -1  # the last frame whose rows were made

        def on_frame(index: int, start: int, raw: bytes, descriptor: TensorDescriptor, buffers: Any) -> None:
            nonlocal completed
            completed = index
            new = frame_rows(index, start, raw, descriptor, buffers, permissive)
            pending.extend(new)
            if each is not None:
                each(new)

        reader.on_frame = on_frame
        try:
            for _ in reader.frame_by_frame():
                yield from pending
                pending.clear()
        except HurrayDeclError as err:
            stream.error = err  # before the rows holding its offset (a frame its composite's close refused)
            yield from pending
            index, start, raw = reader.partial
            if index != completed and raw:  # refused before it was complete: what arrived of its descriptor
                new = _descriptor_rows(index, start, raw, permissive)
                if each is not None:
                    each(new)
                yield from new

    return RowStream(produce)


def stream_dump(source: Any, *, permissive: bool = False, buffer_limit: int | None = None,
                each: Callable[[list[Row]], None] | None = None) -> Dump:
    """:func:`stream_rows`, every row collected."""
    return stream_rows(source, permissive=permissive, buffer_limit=buffer_limit, each=each).collect()


__all__ = ["frame_rows", "stream_dump", "stream_rows"]
