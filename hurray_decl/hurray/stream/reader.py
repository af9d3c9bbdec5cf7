"""Reading a Hurray stream from bytes, a file, a pipe or a socket (STREAM-FORMAT.md § 6).

:func:`read_stream` returns a :class:`StreamReader`, an iterator of items
(:class:`~.frames.TensorItem`, :class:`~.frames.CompositeItem`). Each item is returned as soon
as its last byte has arrived and its checks have passed; the reader never asks its source for a
byte of the next frame first (HS-FRM-14). Each fault is refused as soon as the bytes revealing
it have arrived (HS-FRM-13): the prefix after its 10 bytes (8 for ``HRRYFILE``), the descriptor
after descriptor_length bytes and before any buffer byte, truncation at end of input. After a
refusal the reader is dead and raises the same error again (HS-FRM-10).

Nothing is allocated from a size the stream claims: the descriptor only once descriptor_length
passed its limit, buffer storage growing by at most 1 MiB per read with the bytes that arrived
(HS-FRM-08), composites counted, their members listed as they arrive (HS-CMP-05). With a buffer
limit, the buffer bytes held at once (a frame's, with those of the members of its open composites)
are bounded before any of them is read (HS-FRM-08); ``keep_buffers=False`` skips buffer bytes as
they arrive, a chunk at a time, so that a listing holds none.

The reader's state is bounded by the open composite, never by the frames seen: the start of each
frame of the item being read (:attr:`StreamReader.starts`, for the offsets of composite errors), its
members, and counters. :meth:`StreamReader.advance` reads one frame at a time, for callers that
show frames as they arrive (a dump) rather than items.

The descriptor is read by the tensor reader (the compiled parse, and the traced parse for the
position of a refusal); its refusals are HS-FRM-09 (HS-FRM-05/06, HS-VER-02 for the prefix
fields), the descriptor rule named in the message, the path and offset rebased into the stream
(``frame[2].descriptor.shape[0]`` at its byte).
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Iterator
from typing import Any

from hurray_decl.errors import ArgumentError, HurrayDeclError, OpaqueDataAccess, RuleViolation, TruncatedError
from hurray_decl.hurray.container.composite import CompositeWalk
from hurray_decl.hurray.stream.frames import (
    CHUNK,
    COMPOSITE_RULES,
    CONTAINER_MAGIC,
    DESCRIPTOR_LIMIT,
    DESCRIPTOR_RULE,
    MAX_DEPTH,
    PREFIX_FIELDS,
    PREFIX_LENGTH,
    PREFIX_RULES,
    CompositeItem,
    Item,
    TensorItem,
    dotted,
    frame_path,
)
from hurray_decl.hurray.tensor import read_tensor_descriptor, validate_buffers
from hurray_decl.hurray.tensor.descriptor import preamble_fast
from hurray_decl.hurray.tensor.header import PREAMBLE
from hurray_decl.hurray.tensor.layouts import CompositeHead
from hurray_decl.hurray.tensor.model import TensorDescriptor
from hurray_decl.hurray.tensor.reader import field_positions

_LENGTH_AT = PREFIX_FIELDS["descriptor_length"]
_LENGTH = struct.Struct("<I")  # descriptor_length is a u32 (the preamble declaration)


class Source:
    """Bytes from whatever the stream arrives on, counted: ``take(n)`` returns at most ``n`` bytes
    (fewer only at end of input) and never asks the transport for more than ``n``."""

    def __init__(self, source: Any) -> None:
        self.position = 0
        self._data: memoryview | None = None
        self._recv: Callable[[Any, int], int] | None = None
        self._read: Callable[[int], Any] | None = None
        if isinstance(source, (bytes, bytearray, memoryview, mmap.mmap)):
            self._data = memoryview(source).cast("B")
        elif callable(getattr(source, "recv_into", None)):
            self._recv = source.recv_into
        elif callable(getattr(source, "read", None)):
            self._read = source.read
        else:
            raise ArgumentError("source", "a stream is read from bytes or an object with read() or recv_into()",
                                actual=type(source).__name__, expected="bytes, a binary file, a pipe or a socket")

    def take(self, count: int) -> bytes:
        """Up to ``count`` bytes (a descriptor or a prefix: bounded by the limits before this call)."""
        out = bytearray()
        self.fill(out, count)
        return bytes(out)

    def skip(self, count: int) -> int:
        """Consume up to ``count`` bytes without keeping them, :data:`CHUNK` at a time; the number consumed."""
        if self._data is not None:
            got = min(len(self._data) - self.position, count)
            self.position += got
            return got
        left = count
        while left > 0:
            out = bytearray()
            self.fill(out, min(CHUNK, left))
            if not out:
                break
            left -= len(out)
        return count - left

    def fill(self, out: bytearray, count: int) -> None:
        """Append up to ``count`` bytes to ``out``, at most :data:`CHUNK` per read: ``out`` grows
        with the bytes that arrived, never with ``count`` (HS-FRM-08)."""
        if self._data is not None:
            start = self.position
            end = min(len(self._data), start + count)
            out += self._data[start:end]
            self.position = end
            return
        scratch = bytearray(min(CHUNK, count)) if self._recv is not None else None
        left = count
        while left > 0:
            want = min(CHUNK, left)
            if scratch is not None and self._recv is not None:
                got = self._recv(scratch, want)
                if not got:
                    return
                out += memoryview(scratch)[:got]
            elif self._read is not None:
                part = self._read(want)
                if part is None:  # a non-blocking source with nothing yet
                    raise ArgumentError("source", "a stream is read from a blocking source",
                                        actual="read() returned None", expected="bytes, or b'' at end of input")
                if not part:
                    return
                got = len(part)
                if got > want:
                    raise ArgumentError("source", "read(n) returned more than n bytes", actual=got, expected=want)
                out += part
            left -= got
            self.position += got


class StreamReader:
    """An iterator over the items of one stream (see the module's documentation).

    ``position`` is the number of bytes consumed; ``frames`` the number of frames read;
    ``error`` the refusal once the stream is dead; ``item_frame`` and ``item_start`` the first
    frame and the byte offset of the item being read (of the last one returned, once returned);
    ``held`` the buffer bytes the open composites' members hold.
    """

    def __init__(self, source: Any, *, descriptor_limit: int = DESCRIPTOR_LIMIT, buffer_limit: int | None = None,
                 permissive: bool = False, check_buffers: bool = True, keep_buffers: bool = True) -> None:
        if not isinstance(descriptor_limit, int) or descriptor_limit < PREFIX_LENGTH:
            raise ArgumentError("descriptor_limit", "a byte count that can hold a prefix", actual=descriptor_limit,
                                expected=f">= {PREFIX_LENGTH}")
        if buffer_limit is not None and (not isinstance(buffer_limit, int) or buffer_limit < 0):
            raise ArgumentError("buffer_limit", "a byte count, or None for no limit", actual=buffer_limit,
                                expected=">= 0 or None")
        if check_buffers and not keep_buffers:
            raise ArgumentError("keep_buffers", "buffers are checked on their contents: keep them, or pass "
                                "check_buffers=False", actual=keep_buffers, expected=True)
        self.source = Source(source)
        self.descriptor_limit = descriptor_limit
        self.buffer_limit = buffer_limit
        self.permissive = permissive
        self.check_buffers = check_buffers
        self.keep_buffers = keep_buffers
        self.frames = 0
        self.error: HurrayDeclError | None = None
        self.ended = False
        self.item_frame = 0
        self.item_start = 0
        self.held = 0
        self.starts: dict[str, int] = {}
        """The start of each frame of the item being read (cleared as the next item starts)."""
        self._walk = CompositeWalk(self.starts.get, max_depth=MAX_DEPTH, rules=COMPOSITE_RULES,
                                   where=lambda name: name)
        self._open: list[tuple[TensorDescriptor, list[Item]]] = []
        self._done: Item | None = None
        self.on_frame: Callable[[int, int, bytes, TensorDescriptor, tuple[bytearray, ...]], None] | None = None
        """Called as ``on_frame(index, offset, descriptor bytes, descriptor, buffers)`` as each frame is
        complete, before the composite checks that frame closes (a dump, a progress line)."""
        self.partial: tuple[int, int, bytes] = (0, 0, b"")
        """(frame index, offset, the bytes read of its prefix and descriptor) of the frame being read."""

    @property
    def position(self) -> int:
        return self.source.position

    def __iter__(self) -> StreamReader:
        return self

    def __next__(self) -> Item:
        while True:
            item = self.advance()
            if item is not None:
                return item
            if self.ended:
                raise StopIteration

    def advance(self) -> Item | None:
        """Read one frame: the top-level item it completes, or None (a member of an open composite, or
        the end of input, after which ``ended`` is true). A refusal kills the reader, as in iteration."""
        if self.error is not None:
            raise self.error
        if self.ended:
            return None
        try:
            item = self._frame()
        except HurrayDeclError as err:
            self.error = err
            raise
        return item

    def frame_by_frame(self) -> Iterator[Item | None]:
        """:meth:`advance` until the end of input: each frame's result, as the frame is read."""
        while not self.ended:
            yield self.advance()

    # ------------------------------------------------------------ one frame

    def _frame(self) -> Item | None:
        start = self.position
        first = self.source.take(1)
        if not first:  # end of input at a frame boundary: clean unless a composite is open
            self._walk.finish()
            self.ended = True
            return None
        index = self.frames
        if not self._walk.stack:  # a new top-level item: the frames of the last one are forgotten
            self.starts.clear()
            self.item_frame, self.item_start = index, start
        name = frame_path(index)
        self.starts[name] = start
        raw, descriptor = self._descriptor(first, start, index)
        self.frames += 1
        self._walk.arrive(name, descriptor)
        buffers: tuple[bytearray, ...] = ()
        if isinstance(descriptor.layout, CompositeHead):
            self._open.append((descriptor, []))
        else:
            buffers = self._buffers(descriptor, start, index)
            self._open_member(TensorItem(descriptor, buffers))
        if self.on_frame is not None:
            self.on_frame(index, start, raw, descriptor, buffers)
        self._walk.settle()
        return self._close()

    def _open_member(self, item: Item) -> None:
        if self._open:
            self._open[-1][1].append(item)
            if isinstance(item, TensorItem):
                self.held += sum(len(b) for b in item.buffers)
        else:
            self._done = item
            self.held = 0

    def _close(self) -> Item | None:
        """The composites the walk closed become items; the finished top-level item, if any."""
        while len(self._open) > len(self._walk.stack):
            head, members = self._open.pop()
            self._open_member(CompositeItem(head, tuple(members)))
        done, self._done = self._done, None
        return done

    # ------------------------------------------------------------ the frame's parts

    def _descriptor(self, first: bytes, start: int, index: int) -> tuple[bytes, TensorDescriptor]:
        raw = first
        self.partial = (index, start, raw)
        if index == 0:  # HRRYFILE is decided on 8 bytes (HS-FRM-12), before the prefix's last 2
            raw += self.source.take(len(CONTAINER_MAGIC) - 1)
            if raw == CONTAINER_MAGIC:
                raise RuleViolation("HS-FRM-12", "a .hrry container, not a stream",
                                    path=frame_path(index, "descriptor.magic"), offset=start, actual=raw,
                                    expected="a frame: HRRY then a version byte")
        raw += self.source.take(PREFIX_LENGTH - len(raw))
        self.partial = (index, start, raw)
        if len(raw) < PREFIX_LENGTH:
            raise self._truncated(index, "prefix", PREFIX_LENGTH, len(raw))
        length = self._prefix(raw, start, index)
        raw += self.source.take(length - PREFIX_LENGTH)  # bounded by the limit just checked (HS-FRM-08)
        self.partial = (index, start, raw)
        if len(raw) < length:
            raise self._truncated(index, "descriptor", length, len(raw))
        try:
            descriptor: TensorDescriptor = read_tensor_descriptor(raw, permissive=self.permissive)
        except HurrayDeclError as err:
            raise self._descriptor_error(err, start, index) from err
        for i, handle in enumerate(descriptor.buffers):  # before any buffer byte is consumed
            if handle.sync_mode != 0:
                raise self._field_error("HS-SYNC-01", "a stream carries producer-synced buffers only", raw, start,
                                        index, f"descriptor -> buffers -> {i} -> sync_mode", handle.sync_mode, 0)
        if self.buffer_limit is not None:  # the bytes held at once: this frame's and the open composites'
            held = self.held if self.keep_buffers else 0
            for i, handle in enumerate(descriptor.buffers):
                held += handle.byte_size
                if held > self.buffer_limit:
                    what = "a buffer" if held == handle.byte_size else "the buffers held at once"
                    raise self._field_error("HS-FRM-08", f"{what} above the reader's buffer limit", raw, start,
                                            index, f"descriptor -> buffers -> {i} -> byte_size", f"{held} bytes",
                                            f"<= {self.buffer_limit} bytes")
        return raw, descriptor

    def _prefix(self, raw: bytes, start: int, index: int) -> int:
        """descriptor_length, after the prefix checks of HS-D03, in their order (the compiled preamble
        parse; the interpreted one says which rule refused)."""
        try:
            if preamble_fast(raw, self.permissive) is None:
                PREAMBLE.parse(raw, permissive=self.permissive)
        except HurrayDeclError as err:
            code = PREFIX_RULES.get(err.code, DESCRIPTOR_RULE)
            field = err.path.split(" -> ")[-1]
            raise RuleViolation(code, f"the prefix breaks {err.code}: {err.detail}",
                                path=frame_path(index, f"descriptor.{field}"),
                                offset=start + PREFIX_FIELDS.get(field, 0), actual=err.actual,
                                expected=err.expected) from err
        length: int = _LENGTH.unpack_from(raw, _LENGTH_AT)[0]
        if length > self.descriptor_limit:
            raise RuleViolation("HS-FRM-07", "descriptor_length above the reader's descriptor limit",
                                path=frame_path(index, "descriptor.descriptor_length"), offset=start + _LENGTH_AT,
                                actual=length, expected=f"<= {self.descriptor_limit}")
        return length

    def _buffers(self, descriptor: TensorDescriptor, start: int, index: int) -> tuple[bytearray, ...]:
        buffers: list[bytearray] = []
        for i, handle in enumerate(descriptor.buffers):
            if not self.keep_buffers:
                got = self.source.skip(handle.byte_size)
                if got < handle.byte_size:
                    raise self._truncated(index, f"buffer[{i}]", handle.byte_size, got)
                continue
            out = bytearray()
            self.source.fill(out, handle.byte_size)
            if len(out) < handle.byte_size:
                raise self._truncated(index, f"buffer[{i}]", handle.byte_size, len(out))
            buffers.append(out)  # kept as it grew: a copy would double the peak (HS-FRM-08)
        contents = tuple(buffers)
        if self.check_buffers:
            try:
                validate_buffers(descriptor, contents, permissive=self.permissive, checked=True)
            except OpaqueDataAccess:
                pass  # a permissive read of an unrecognised part: its data is never interpreted
            except HurrayDeclError as err:
                first = start + (descriptor.descriptor_length or 0)
                where = err.path.split(" -> ")
                at = first
                if len(where) > 2 and where[1] == "buffers" and where[2].isdigit():
                    at += sum(h.byte_size for h in descriptor.buffers[:int(where[2])])
                    rest = dotted(" -> ".join(where[3:]))
                    path = frame_path(index, f"buffer[{where[2]}]" + rest)
                else:
                    path = frame_path(index, dotted(err.path))
                raise RuleViolation(DESCRIPTOR_RULE, f"the buffers break {err.code}: {err.detail}", path=path,
                                    offset=at, actual=err.actual, expected=err.expected) from err
        return contents

    # ------------------------------------------------------------ errors

    def _truncated(self, index: int, part: str, wanted: int, got: int) -> TruncatedError:
        return TruncatedError("HS-FRM-04", f"the input ends inside the {part.split('[')[0]} of a frame",
                              path=frame_path(index, part), offset=self.position, actual=f"{got} bytes",
                              expected=f"{wanted} bytes")

    def _descriptor_error(self, err: HurrayDeclError, start: int, index: int) -> HurrayDeclError:
        return RuleViolation(DESCRIPTOR_RULE, f"the descriptor breaks {err.code}: {err.detail}",
                             path=frame_path(index, dotted(err.path)),
                             offset=None if err.offset is None else start + err.offset,
                             actual=err.actual, expected=err.expected)

    def _field_error(self, code: str, message: str, raw: bytes, start: int, index: int, field: str,
                     actual: Any, expected: Any) -> RuleViolation:
        """A refusal of an accepted descriptor's field, at the field's byte (the traced parse's positions)."""
        at = field_positions(raw, permissive=self.permissive).get(field, 0)
        return RuleViolation(code, message, path=frame_path(index, dotted(field)), offset=start + at,
                             actual=actual, expected=expected)


def read_stream(source: Any, *, descriptor_limit: int = DESCRIPTOR_LIMIT, buffer_limit: int | None = None,
                permissive: bool = False, check_buffers: bool = True, keep_buffers: bool = True) -> StreamReader:
    """The items of the Hurray stream ``source`` (bytes, a binary file, a pipe, a socket: anything
    with ``read`` or ``recv_into``), read as they arrive.

    ``descriptor_limit`` bounds descriptor_length (HS-FRM-07); ``buffer_limit``, when given,
    bounds the buffer bytes held at once (a frame's, with its open composites' members') before
    any of them is read (HS-FRM-08). ``check_buffers`` runs the rules that need buffer contents on
    each tensor (HS-FRM-09); ``keep_buffers=False`` (with ``check_buffers=False``) skips the buffer
    bytes, so items carry none; ``permissive`` reads descriptors in permissive mode. Refusals are
    :class:`~hurray_decl.errors.HurrayDeclError` with an HS code.
    """
    return StreamReader(source, descriptor_limit=descriptor_limit, buffer_limit=buffer_limit,
                        permissive=permissive, check_buffers=check_buffers, keep_buffers=keep_buffers)


def iter_stream(source: Any, **options: Any) -> Iterator[Item]:
    """:func:`read_stream` as a plain generator."""
    yield from read_stream(source, **options)


__all__ = ["Source", "StreamReader", "iter_stream", "read_stream"]
