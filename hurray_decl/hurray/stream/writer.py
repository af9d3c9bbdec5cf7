"""Writing a Hurray stream (STREAM-FORMAT.md § 7).

:class:`StreamWriter` writes each frame as the descriptor's bytes (the tensor writer, version
1.0) followed by its buffers in table order, and nothing else (HS-WR-02). Every check runs
before the frame's first byte (HS-WR-01): the buffer count and sizes, sync_mode 0x00
(HS-SYNC-01), version 1.0 (HS-VER-04), the descriptor's own rules and the rules on buffer
contents, so that nothing the reader refuses is written. A composite is validated as a whole
tree first, depth included (HS-CMP-06). A sink that fails once part of a frame may have gone
out poisons the writer: every later write is refused (HS-WR-04). :meth:`StreamWriter.finish`
flushes and writes no terminator; it is idempotent, and writes after it are refused
(HS-WR-01-S).

Statistics (HS-WR-03): the writer holds every buffer whole before it writes the descriptor, and
writes the caller's statistics section as given; it computes none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hurray_decl.errors import ArgumentError, HurrayDeclError, RuleViolation
from hurray_decl.hurray.container.composite import CompositeWalk
from hurray_decl.hurray.stream.frames import MAX_DEPTH, CompositeItem, Item, TensorItem, dotted, frame_path
from hurray_decl.hurray.tensor import TensorDescriptor, validate_buffers, write_tensor_descriptor
from hurray_decl.hurray.tensor.layouts import CompositeHead

_WRITER_COMPOSITE_RULES = ("HS-CMP-06", "HS-CMP-06", "HS-CMP-06")


class StreamWriter:
    """Frames to ``sink``: anything with ``write`` (a binary file, a pipe) or ``sendall`` (a socket).

    ``frames`` counts the frames written and ``position`` the bytes; ``flush`` and ``close`` are
    called on the sink only if it has them (``finish`` flushes, it never closes the sink).
    """

    def __init__(self, sink: Any) -> None:
        send = getattr(sink, "sendall", None)
        write = getattr(sink, "write", None)
        if not callable(send) and not callable(write):
            raise ArgumentError("sink", "a stream is written to an object with write() or sendall()",
                                actual=type(sink).__name__, expected="a binary file, a pipe or a socket")
        self.sink = sink
        self._send = send if callable(send) else None
        self._write = write if callable(write) else None
        self.frames = 0
        self.position = 0
        self.finished = False
        self.poisoned: HurrayDeclError | None = None

    # ------------------------------------------------------------ the public calls

    def write(self, descriptor: TensorDescriptor, buffers: Sequence[Any]) -> None:
        """One plain tensor: its descriptor and one bytes-like per buffer-table entry."""
        self._ready()
        if isinstance(getattr(descriptor, "layout", None), CompositeHead):
            raise RuleViolation("HS-CMP-06", "a composite head is written with its members by write_composite",
                                path=frame_path(self.frames, "descriptor.layout_tag"), actual="0x0B",
                                expected="a plain tensor")
        pieces = self._frame(descriptor, buffers, self.frames)
        self._emit(pieces)

    def write_item(self, item: Item) -> None:
        """A :class:`TensorItem` or :class:`CompositeItem`, as the reader returns them."""
        if isinstance(item, CompositeItem):
            self.write_composite(item)
        elif isinstance(item, TensorItem):
            self.write(item.descriptor, item.buffers)
        else:
            raise ArgumentError("item", "a TensorItem or a CompositeItem", actual=type(item).__name__)

    def write_composite(self, composite: CompositeItem) -> None:
        """A head and its members, pre-order; the whole tree is checked before its first byte (HS-CMP-06)."""
        self._ready()
        if not isinstance(composite, CompositeItem):
            raise ArgumentError("composite", "a CompositeItem(head, members)", actual=type(composite).__name__)
        walk = CompositeWalk(max_depth=MAX_DEPTH, rules=_WRITER_COMPOSITE_RULES, where=lambda name: name)
        pieces: list[Any] = []
        self._tree(composite, walk, pieces, [self.frames])
        walk.finish()
        self._emit(pieces, frames=self._count(composite))

    def finish(self) -> None:
        """Flush the sink; nothing is written (there is no terminator). Idempotent."""
        if self.finished:
            return
        self.finished = True
        flush = getattr(self.sink, "flush", None)
        if callable(flush) and self.poisoned is None:
            try:
                flush()
            except OSError as err:
                raise self._poison(err) from err

    def __enter__(self) -> StreamWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    # ------------------------------------------------------------ checks

    def _ready(self) -> None:
        if self.poisoned is not None:
            raise RuleViolation("HS-WR-04", "an earlier write failed part-way: this stream takes no more frames",
                                path=frame_path(self.frames), offset=self.position) from self.poisoned
        if self.finished:
            raise RuleViolation("HS-WR-01-S", "the stream is finished: it takes no more frames",
                                path=frame_path(self.frames), offset=self.position)

    def _frame(self, descriptor: Any, buffers: Sequence[Any], index: int) -> list[Any]:
        """The frame's pieces, every check passed (HS-WR-01, HS-SYNC-01, HS-VER-04)."""
        if not isinstance(descriptor, TensorDescriptor):
            raise ArgumentError("descriptor", "a TensorDescriptor", actual=type(descriptor).__name__)
        d = descriptor.checked()
        if (d.version_major, d.version_minor) != (1, 0):
            raise RuleViolation("HS-VER-04", "writers emit version 1.0 descriptors",
                                path=frame_path(index, "descriptor.version_minor"),
                                actual=f"{d.version_major}.{d.version_minor}", expected="1.0")
        try:
            contents = [memoryview(b).cast("B") for b in buffers]
        except TypeError as err:
            raise ArgumentError("buffers", "one bytes-like object per buffer-table entry") from err
        if len(contents) != len(d.buffers):
            raise RuleViolation("HS-WR-01", "one buffer per buffer-table entry",
                                path=frame_path(index, "descriptor.buffer_count"), actual=len(contents),
                                expected=len(d.buffers))
        for i, (handle, content) in enumerate(zip(d.buffers, contents)):
            if handle.sync_mode != 0:
                raise RuleViolation("HS-SYNC-01", "a stream carries producer-synced buffers only",
                                    path=frame_path(index, f"descriptor.buffers[{i}].sync_mode"),
                                    actual=handle.sync_mode, expected=0)
            if len(content) != handle.byte_size:
                raise RuleViolation("HS-WR-01", "a buffer's length is its handle's byte_size",
                                    path=frame_path(index, f"buffer[{i}]"), actual=len(content),
                                    expected=handle.byte_size)
        try:
            raw = write_tensor_descriptor(d, writer_rules=True)
            if not isinstance(d.layout, CompositeHead):
                validate_buffers(d, contents, checked=True)
        except HurrayDeclError as err:
            if err.code.startswith("HS-") or err.code == "ARGUMENT":
                raise
            raise RuleViolation("HS-WR-01", f"the frame breaks {err.code}: {err.detail}",
                                path=frame_path(index, dotted(err.path)), actual=err.actual,
                                expected=err.expected) from err
        return [raw, *contents]

    def _tree(self, item: Item, walk: CompositeWalk, pieces: list[Any], counter: list[int]) -> None:
        index = counter[0]
        counter[0] += 1
        if isinstance(item, CompositeItem):
            head = item.head
            layout = getattr(head, "layout", None)
            if not isinstance(layout, CompositeHead):
                raise RuleViolation("HS-CMP-06", "a composite's head has layout 0x0B", path=frame_path(index),
                                    actual=getattr(head, "layout_tag", None), expected="0x0B")
            if layout.member_count != len(item.members):
                raise RuleViolation("HS-CMP-06", "a head's member_count is the number of its members",
                                    path=frame_path(index, "descriptor.layout.member_count"),
                                    actual=len(item.members), expected=layout.member_count)
            pieces += self._frame(head, (), index)
            walk.arrive(frame_path(index), head)
            for member in item.members:
                self._tree(member, walk, pieces, counter)
            walk.settle()
        elif isinstance(item, TensorItem):
            if isinstance(getattr(item.descriptor, "layout", None), CompositeHead):
                raise RuleViolation("HS-CMP-06", "a head is given as a CompositeItem with its members",
                                    path=frame_path(index, "descriptor.layout_tag"), actual="0x0B")
            pieces += self._frame(item.descriptor, item.buffers, index)
            walk.arrive(frame_path(index), item.descriptor)
            walk.settle()
        else:
            raise ArgumentError("members", "each member is a TensorItem or a CompositeItem", actual=type(item).__name__)

    def _count(self, item: Item) -> int:
        if isinstance(item, CompositeItem):
            return 1 + sum(self._count(m) for m in item.members)
        return 1

    # ------------------------------------------------------------ output

    def _emit(self, pieces: list[Any], frames: int = 1) -> None:
        for piece in pieces:
            view = memoryview(piece).cast("B")
            try:
                if self._send is not None:
                    self._send(view)
                else:
                    while len(view):  # a raw file may take fewer bytes than given
                        done = self._write(view)  # type: ignore[misc]
                        done = len(view) if done is None else done
                        if done <= 0:
                            raise OSError(f"the sink took no bytes of {len(view)}")
                        view = view[done:]
                        self.position += done
                    continue
            except OSError as err:
                raise self._poison(err) from err
            self.position += len(view)
        self.frames += frames

    def _poison(self, err: OSError) -> HurrayDeclError:
        self.poisoned = RuleViolation("HS-WR-04", f"the sink failed: {err.strerror or err}",
                                      path=frame_path(self.frames), offset=self.position)
        return self.poisoned


def write_stream(items: Sequence[Item]) -> bytes:
    """The bytes of a stream holding ``items``, in order."""
    import io

    sink = io.BytesIO()
    with StreamWriter(sink) as writer:
        for item in items:
            writer.write_item(item)
    return sink.getvalue()


__all__ = ["StreamWriter", "write_stream"]
