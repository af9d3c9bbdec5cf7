"""Where a command's input comes from, and how much of it is read.

A descriptor argument is, in this order:

1. ``-``: standard input;
2. an existing path: a regular file, or a stream such as ``/dev/stdin`` or a process
   substitution ``<(...)`` (a folder is refused);
3. hex bytes of any length, with or without ``0x`` prefixes, spaces and colons
   (``0a0b``, ``0x0a 0x0b``, ``0a:0b``);
4. anything else that looks like a path (it has a ``/``, a ``\\``, a leading ``.`` or ``~``, or a
   file suffix) is a missing file (exit 3); the rest is a usage error (exit 2).

A name that is both hex and not an existing file (``cafe``) is hex: write ``./cafe`` for the file.

Only what the descriptor declares is read: the first bytes give ``descriptor_length``, that many
bytes are read, and the bytes after them are counted (a regular file's are not even read) and
reported in one line. ``--offset`` and ``--length`` choose a window of the input first (a
descriptor inside a larger file). A bare quantization payload has no length of its own: the
whole window is read. (A descriptor whose buffers fit in the rest of the input is a stream, not
read here: see :mod:`hurray_decl.cli.stream`.)
"""

from __future__ import annotations

import argparse
import errno
import io
import mmap
import os
import stat
import string
import sys
from dataclasses import dataclass
from typing import Any, BinaryIO

from hurray_decl.cli.common import FileProblem, UsageError, integer_at_least

CHUNK = 1 << 20
"""Bytes per read when a stream's unread tail is counted or skipped."""

HEX_DIGITS = frozenset(string.hexdigits)


@dataclass(frozen=True)
class Input:
    """The bytes read for one descriptor and how many bytes of the window after them were not read;
    ``declared`` is false when the header was refused, so that only the header's bytes were read."""

    data: bytes
    unread: int
    declared: bool = True


def input_argument(command: argparse.ArgumentParser, *, optional: bool = False) -> None:
    """The descriptor argument, the kind options and ``--offset`` / ``--length``."""
    command.add_argument("input", metavar="INPUT", nargs="?" if optional else None,
                         help="the descriptor: a file, - for standard input, or hex bytes")
    kind_options(command)
    window_options(command)


def window_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--offset", type=integer_at_least(0), default=0, metavar="N",
                         help="start reading at byte N of the input (offsets shown count from there)")
    command.add_argument("--length", type=integer_at_least(0), default=None, metavar="N",
                         help="read at most N bytes from --offset on")


def kind_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--quantization", action="store_true",
                         help="the input is a bare quantization payload, not a tensor descriptor")
    command.add_argument("--permissive", action="store_true",
                         help="accept unrecognised scheme, type and layout tags as opaque parts")


def parse_hex(text: str) -> bytes | None:
    """The bytes ``text`` spells in hex (``0x`` prefixes, spaces and colons allowed), or None if it is not hex."""
    tokens = text.replace(":", " ").split()
    digits = "".join(t[2:] if t[:2] in ("0x", "0X") else t for t in tokens)
    if not digits or not HEX_DIGITS.issuperset(digits):
        return None
    if len(digits) % 2:
        raise UsageError(f"argument INPUT: an odd number of hex digits ({len(digits)})")
    return bytes.fromhex(digits)


def looks_like_path(text: str) -> bool:
    name = text.replace("\\", "/")
    return "/" in name or name.startswith((".", "~")) or "." in name.rsplit("/", 1)[-1]


def existing(path: str) -> os.stat_result | None:
    """``os.stat(path)``, or None when nothing is there (names too long for a path included)."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        if err.errno in (errno.ENAMETOOLONG, errno.EINVAL):
            return None
        raise FileProblem(f"{path}: {err.strerror}") from None


def open_file(path: str, info: os.stat_result | None = None, *, what: str = "INPUT") -> BinaryIO:
    """An existing file or stream opened for reading; folders and missing files refused (exit 3)."""
    info = info if info is not None else existing(path)
    if info is None:
        raise FileProblem(f"argument {what}: no such file: {path}")
    if stat.S_ISDIR(info.st_mode):
        raise FileProblem(f"argument {what}: {path} is a folder, not a file")
    try:
        return open(path, "rb")  # closed by the caller
    except OSError as err:
        raise FileProblem(f"argument {what}: {path}: {err.strerror}") from None


def source_stream(source: str) -> BinaryIO | bytes:
    """The stream to read ``source`` from, or the bytes its hex spells."""
    if source == "-":
        return sys.stdin.buffer
    if source in HANDED_ON:
        return HANDED_ON[source]
    info = existing(source)
    if info is not None:
        return open_file(source, info)
    data = parse_hex(source)
    if data is not None:
        return data
    if looks_like_path(source):
        raise FileProblem(f"argument INPUT: no such file: {source}")
    raise UsageError(f"argument INPUT: {source!r} is neither an existing file nor hex bytes")


class Window:
    """Reads from ``stream`` at most ``length`` bytes after skipping ``offset``."""

    def __init__(self, stream: BinaryIO, offset: int, length: int | None) -> None:
        self.stream = stream
        self.left = length
        self.size = None
        try:
            info = os.fstat(stream.fileno())
            if stat.S_ISREG(info.st_mode):
                self.size = info.st_size
        except (OSError, io.UnsupportedOperation, AttributeError):
            pass
        if self.size is not None:
            stream.seek(offset, os.SEEK_CUR)
            rest = max(0, self.size - stream.tell())
            self.left = rest if length is None else min(length, rest)
        else:
            self.skip(offset)

    def read(self, count: int | None = None) -> bytes:
        """Up to ``count`` bytes (None: the rest of the window)."""
        if self.left is not None:
            count = self.left if count is None else min(count, self.left)
        parts = []
        while count is None or count > 0:
            part = self.stream.read(CHUNK if count is None else min(count, CHUNK))
            if not part:
                break
            parts.append(part)
            if count is not None:
                count -= len(part)
            if self.left is not None:
                self.left -= len(part)
        return b"".join(parts)

    def skip(self, count: int | None) -> int:
        """Discard up to ``count`` bytes (None: to the end of the window); how many there were."""
        if self.size is not None and count is None:
            skipped, self.left = self.left or 0, 0
            return skipped
        skipped = 0
        while count is None or skipped < count:
            want = CHUNK if count is None else min(CHUNK, count - skipped)
            if self.left is not None:
                want = min(want, self.left)
            if want <= 0:
                break
            part = self.stream.read(want)
            if not part:
                break
            skipped += len(part)
            if self.left is not None:
                self.left -= len(part)
        return skipped


def read_descriptor(source: str, *, quantization: bool = False, offset: int = 0,
                    length: int | None = None) -> Input:
    """The bytes of one descriptor from ``source`` (see the module's documentation)."""
    stream = source_stream(source)
    if isinstance(stream, bytes):
        stream = io.BytesIO(stream)
    try:
        window = Window(stream, offset, length)
        if quantization:
            return Input(window.read(), 0)
        from hurray_decl.errors import HurrayDeclError
        from hurray_decl.hurray.tensor import skip_descriptor
        from hurray_decl.hurray.tensor.header import HEADER_LENGTH, PREAMBLE_LENGTH

        data = window.read(PREAMBLE_LENGTH)
        try:
            length, declared = skip_descriptor(data), True
        except HurrayDeclError:  # the reader refuses the header: its fields are all there is to show
            length, declared = HEADER_LENGTH, False
        data += window.read(max(0, length - len(data)))
        return Input(data, window.skip(None), declared)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


class _Prefixed(io.RawIOBase):
    """Bytes already read from a stream, then the rest of that stream as it arrives."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self.head, self.rest = memoryview(head), rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if len(self.head):
            count = min(len(buffer), len(self.head))
            buffer[:count] = self.head[:count]
            self.head = self.head[count:]
            return count
        read1 = getattr(self.rest, "read1", None)
        data = read1(len(buffer)) if callable(read1) else self.rest.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def peek_stdin(head: bytes) -> None:
    """Put ``head``, bytes just read from standard input, back in front of what is still to come,
    so that the next reader of ``-`` sees them again without standard input being read to its end."""
    if head:
        _REPLACED.append(sys.stdin)  # kept: a dropped wrapper would close the buffer it wraps
        sys.stdin = io.TextIOWrapper(io.BufferedReader(_Prefixed(head, sys.stdin.buffer)))


_REPLACED: list[Any] = []


def read_whole(source: str) -> bytes:
    """Every byte of ``source``, for the commands that tell input kinds apart by their content
    (onnx-light messages). A Hurray descriptor or container, known by its magic, is read no
    further than the magic: the Hurray commands read it themselves, only as far as it declares.
    Standard input read here is handed on, so the next reader of ``-`` sees the same bytes."""
    from hurray_decl.hurray.tensor.header import MAGIC

    stream = source_stream(source)
    if isinstance(stream, bytes):
        return stream
    if stream is sys.stdin.buffer:
        head = stream.read(len(MAGIC))
        if head == MAGIC:  # Hurray input: the Hurray commands read it themselves, as it arrives
            peek_stdin(head)
            return head
        data = head + stream.read()
        sys.stdin = io.TextIOWrapper(io.BytesIO(data))
        return data
    with stream:
        if not stream.seekable():  # a pipe by name (/dev/stdin, <(...)): what is read here is handed on
            HANDED_ON[source] = stream.read()
            return HANDED_ON[source]
        head = stream.read(len(MAGIC))
        return head if head == MAGIC else head + stream.read()


HANDED_ON: dict[str, bytes] = {}
"""Streams named by a path that :func:`read_whole` has read already: their bytes, by name."""


def read_text(source: str, what: str = "INPUT") -> str:
    """The UTF-8 text of a file, or of standard input for ``-``."""
    if source == "-":
        raw = sys.stdin.buffer.read()
    else:
        with open_file(source, what=what) as stream:
            raw = stream.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(f"argument {what}: {source} is not UTF-8 text (byte {err.start}); "
                         "a binary descriptor is read by decode, not encode") from None


def map_file(path: str, what: str = "--buffers") -> memoryview | bytes:
    """A buffer file's contents, memory-mapped when it is a regular file (read whole otherwise)."""
    with open_file(path, what=what) as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            return stream.read()
        if info.st_size == 0:
            return b""
        return memoryview(mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ))
