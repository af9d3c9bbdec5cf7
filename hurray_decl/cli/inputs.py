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

Which kind an input is, and which handler runs for it: :mod:`hurray_decl.cli.detection`.
"""

from __future__ import annotations

import argparse
import errno
import io
import mmap
import os
import re
import stat
import string
import sys
from dataclasses import dataclass
from typing import Any, BinaryIO

from hurray_decl.cli.common import FileProblem, UsageError, integer_at_least, note
from hurray_decl.cli.kinds import FORCED, Kind, title

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


def forced_kind_option(command: argparse.ArgumentParser, choices: tuple[Kind, ...] = FORCED) -> None:
    """``--kind``: the input kind to read, or :attr:`Kind.AUTO` (detected from the bytes)."""
    named = ", ".join(f"{choice} ({title(choice)})" for choice in choices if choice is not Kind.AUTO)
    command.add_argument("--kind", choices=choices, default=Kind.AUTO,
                         help=f"the input kind: {named}; default: detected from the bytes")


def name_option(command: argparse.ArgumentParser) -> None:
    """``--name``: an onnx-light model's encoded value (dequantize, extract: a container's tensor)."""
    command.add_argument("--name", default=None,
                         help="an onnx-light model's encoded value to use, by name (default: all of them); for "
                              "dequantize and extract, the tensor of a .hrry container")


def index_option(command: argparse.ArgumentParser) -> None:
    command.add_argument("--index", type=int, default=None, metavar="K",
                         help="for a stream: frame[K], as inspect numbers the frames")


def progress_option(command: argparse.ArgumentParser) -> None:
    command.add_argument("--progress", action="store_true",
                         help="for a stream: a line per item as it arrives (inspect: per frame, on stderr)")


def buffer_limit_option(command: argparse.ArgumentParser) -> None:
    command.add_argument("--buffer-limit", type=parse_size, default=None, metavar="SIZE",
                         help="the buffer bytes held at once (a stream's frame, or a pipe read to detect its "
                              "kind), past which a frame is refused (HS-FRM-08): bytes, or K, M, G, T; none for "
                              "no limit (default: the available memory)")


def window_options(command: argparse.ArgumentParser) -> None:
    buffer_limit_option(command)
    command.add_argument("--offset", type=integer_at_least(0), default=0, metavar="N",
                         help="start reading at byte N of the input (offsets shown count from there)")
    command.add_argument("--length", type=integer_at_least(0), default=None, metavar="N",
                         help="read at most N bytes from --offset on")


NO_LIMIT = -1
"""``--buffer-limit none``."""
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^(\d+)\s*([KMGT]?)(?:I?B)?$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``--buffer-limit``'s value (:mod:`hurray_decl.cli.stream`): bytes (``4096``, ``512M``, ``1GiB``),
    or :data:`NO_LIMIT` for ``none``."""
    if text.strip().lower() == "none":
        return NO_LIMIT
    found = _SIZE.match(text.strip())
    if found is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size: bytes, with K, M, G or T (powers of 1024), or none")
    return int(found.group(1)) * UNITS[found.group(2).upper()]


def available_memory() -> int | None:
    """The memory available to a new allocation now (Linux's MemAvailable, else the free pages), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def buffer_limit(args: argparse.Namespace) -> int | None:
    """The stream reader's buffer limit for ``args`` (``--buffer-limit``, :mod:`hurray_decl.cli.stream`); None: none."""
    given = getattr(args, "buffer_limit", None)
    if given is None:
        return available_memory()
    return None if given == NO_LIMIT else int(given)


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
            self.left = None
            self.skip(offset)
            self.left = length  # the window starts after the skipped bytes

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

    def read1(self, count: int = -1) -> bytes:
        """The bytes at hand, at most ``count`` (one read of the source: what a pipe holds now)."""
        want = CHUNK if count is None or count < 0 else count
        if self.left is not None:
            want = min(want, self.left)
        if want <= 0:
            return b""
        reader = getattr(self.stream, "read1", None)
        part = reader(want) if callable(reader) else self.stream.read(want)
        if self.left is not None:
            self.left -= len(part)
        return part

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


def read_noted(args: argparse.Namespace, quantization: bool | None = None) -> Input:
    """The descriptor's bytes (a payload's with ``quantization``, default ``args.quantization``),
    with a one-line note on standard error for the bytes after it."""
    payload = getattr(args, "quantization", False) if quantization is None else quantization
    got = read_descriptor(args.input, quantization=payload, offset=args.offset, length=args.length)
    if got.unread:
        end = ("the descriptor ends after {} bytes (its descriptor_length)" if got.declared
               else "the header is refused, so only its {} bytes were read").format(len(got.data))
        note(f"note: {end}; the {got.unread} bytes after it were not read")
    return got


def decode_descriptor(data: bytes, args: argparse.Namespace) -> Any:
    """The descriptor model of ``data``, as ``args`` says (kind, permissive)."""
    if args.quantization:
        from hurray_decl.hurray.quantization import decode_quantization

        return decode_quantization(data, permissive=args.permissive)
    from hurray_decl.hurray.tensor import read_tensor_descriptor

    return read_tensor_descriptor(data, permissive=args.permissive)


def _window(stream: Any, args: argparse.Namespace) -> Window:
    return Window(stream, getattr(args, "offset", 0) or 0, getattr(args, "length", None))


def open_source(args: argparse.Namespace) -> Window:
    """The window of ``args.input`` to read a stream from, as it arrives (a file, standard input,
    a pipe already read by :func:`detect`, or hex bytes)."""
    source = args.input
    if source == "-":
        return _window(sys.stdin.buffer, args)
    if source in HANDED_ON:
        return _window(io.BytesIO(HANDED_ON[source]), args)
    info = existing(source)
    if info is None:
        data = parse_hex(source)
        if data is None:
            raise UsageError(f"argument INPUT: {source!r} is neither an existing file nor hex bytes")
        return _window(io.BytesIO(data), args)
    return _window(open_file(source, info), args)


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


_REPLACED: list[Any] = []


HANDED_ON: dict[str, bytes] = {}
"""Pipes named by a path (``/dev/stdin``, ``<(...)``) that :func:`detect` has read already: their
window's bytes, by name (the handlers read them from here)."""


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


def hand_on_stdin(taken: bytes, window: Window) -> None:
    """Standard input after detection: the bytes read, then the rest of the window as it arrives."""
    _REPLACED.append(sys.stdin)  # kept: a dropped wrapper would close the buffer it wraps
    sys.stdin = io.TextIOWrapper(io.BufferedReader(_Prefixed(taken, window)))  # type: ignore[arg-type]


def regular_file(args: argparse.Namespace) -> str | None:
    """``args.input`` when it names a regular file read whole (no window), for readers that open
    or map a file by its name; None for standard input, hex bytes, a pipe or a window."""
    source = args.input
    if source == "-" or source in HANDED_ON or getattr(args, "offset", 0) or getattr(args, "length", None) is not None:
        return None
    info = existing(source)
    return source if info is not None and stat.S_ISREG(info.st_mode) else None


def window_data(args: argparse.Namespace) -> Any:
    """Every byte of ``args.input``'s window: a memory map's view for a regular file, else bytes."""
    source = args.input
    offset, length = getattr(args, "offset", 0) or 0, getattr(args, "length", None)
    if source != "-" and source not in HANDED_ON:
        info = existing(source)
        if info is not None and stat.S_ISREG(info.st_mode):
            with open_file(source, info) as stream:
                size = os.fstat(stream.fileno()).st_size
                if offset >= size or length == 0:
                    return b""
                view = memoryview(mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ))
            end = size if length is None else min(size, offset + length)
            return view[offset:end]
    spelled = source_stream(source)
    return Window(io.BytesIO(spelled) if isinstance(spelled, bytes) else spelled, offset, length).read()
