"""The kind of a command's input, decided once, and the handler that runs for it.

Every command that reads an input goes through :func:`dispatch`: the window is
chosen first (``--offset`` / ``--length`` apply to every kind), then :func:`detect` decides the
kind of the bytes in it, once, by magic prefix and structure, with the file suffix as a hint for
damaged input, and the command's handler for that kind runs (:data:`HANDLERS`, filled by each
command module's ``register``). Options that do not apply to the detected kind are usage errors
(:func:`hurray_decl.cli.kinds.applies`); GGUF and safetensors files are pointed to the commands that read them; an
empty input is "empty input" (no rule of RULES.md covers input of no kind: a usage-level error).

The bytes themselves are read through :mod:`hurray_decl.cli.inputs`.
"""

from __future__ import annotations

import argparse
import io
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from hurray_decl.cli.common import FileProblem, UsageError
from hurray_decl.cli.inputs import (
    CHUNK,
    HANDED_ON,
    Window,
    buffer_limit,
    existing,
    hand_on_stdin,
    looks_like_path,
    open_file,
    parse_hex,
    window_data,
)
from hurray_decl.cli.kinds import KINDS, ONNX_LIGHT, OPTIONS, SUFFIXES, TAKEN_BY, Kind, applies, title

DESCRIPTOR, QUANTIZATION, CONTAINER, STREAM = Kind.DESCRIPTOR, Kind.QUANTIZATION, Kind.CONTAINER, Kind.STREAM
VALUE, TENSOR, MODEL = Kind.VALUE, Kind.TENSOR, Kind.MODEL
GGUF, SAFETENSORS, EMPTY = Kind.GGUF, Kind.SAFETENSORS, Kind.EMPTY
AUTO, HURRAY = Kind.AUTO, Kind.HURRAY

DESCRIPTOR_MAGIC = KINDS[DESCRIPTOR].magic
CONTAINER_MAGIC = KINDS[CONTAINER].magic
CONTAINER_STEM = CONTAINER_MAGIC[:7]
"""``HRRYFIL`` and any eighth byte: a container whose magic is damaged, refused as one (HF-HDR-03)."""
GGUF_MAGIC = KINDS[GGUF].magic


@dataclass(frozen=True)
class Detected:
    """The kind of an input's window, as :func:`detect` decided it, and why (for messages)."""

    kind: Kind
    reason: str = "content"
    spent: bool = False
    """Whether detection applied the window to bytes it hands on (standard input, a pipe named by
    path): the handler then reads them from their start (:func:`dispatch` passes offset 0)."""


def _fifo(info: os.stat_result) -> bool:
    return not stat.S_ISREG(info.st_mode)


def _is_safetensors(head: bytes, total: int | None) -> bool:
    """A little-endian u64 header length that fits the input, then a JSON object."""
    if len(head) < 10 or head[8:9] != b"{":
        return False
    size = int.from_bytes(head[:8], "little")
    return 2 <= size and (total is None or size <= total - 8)


def _probe_stream(read: Callable[[int], bytes], skip: Callable[[int], int] | None,
                  limit: int | None = None) -> tuple[bool, bytes]:
    """(a stream, the bytes read) for an input starting with ``HRRY``; ``skip(n)`` (a regular file)
    passes over the first frame's buffers and returns how many bytes it passed (see
    :mod:`hurray_decl.cli.stream` for the rule). Buffers claiming more than ``limit`` bytes are not
    read: a stream, whose reader refuses that frame (HS-FRM-08)."""
    from hurray_decl.errors import HurrayDeclError
    from hurray_decl.hurray.stream.frames import DESCRIPTOR_LIMIT, MIN_DESCRIPTOR, PREFIX_FIELDS, PREFIX_LENGTH
    from hurray_decl.hurray.tensor import read_tensor_descriptor

    data = read(PREFIX_LENGTH)
    if len(data) < PREFIX_LENGTH:
        return False, data
    at = PREFIX_FIELDS["descriptor_length"]
    length = int.from_bytes(data[at:at + 4], "little")
    if not MIN_DESCRIPTOR <= length <= DESCRIPTOR_LIMIT:
        return False, data
    data += read(length - PREFIX_LENGTH)
    try:
        descriptor = read_tensor_descriptor(data)
    except HurrayDeclError:
        return False, data
    total = sum(h.byte_size for h in descriptor.buffers)
    if skip is None and limit is not None and total > limit:
        return True, data
    if skip is not None:
        if skip(total) < total:
            return False, data
        return bool(read(1)) or total > 0, data
    body = bytearray()
    while len(body) < total:
        part = read(min(CHUNK, total - len(body)))
        if not part:
            return False, data + bytes(body)
        body += part
    after = read(1)  # any byte after the buffers starts the next frame
    return bool(after) or total > 0, data + bytes(body) + after


def _onnx_kind(data: Any, hint: Kind | None) -> Kind | None:
    """The onnx-light kind the bytes read as (the best fit of the three messages), else the kind of
    a damaged one: the suffix's, or the kind whose walk read known fields and stopped only at a
    truncation; else None."""
    from hurray_decl.onnx_light.inputs import KINDS, MESSAGES, detect_kind
    from hurray_decl.onnx_light.protowire import walk

    kind = detect_kind(bytes(data))
    if kind in KINDS:
        return Kind(kind)
    if hint in ONNX_LIGHT:
        return hint
    best: tuple[int, str] | None = None
    for candidate in KINDS:
        result = walk(data, MESSAGES[candidate].DESCRIPTOR, rows=False)
        error = result.error
        truncated = error is not None and ("truncated" in error.reason or "past the end" in error.reason)
        if truncated and result.unknown == 0 and result.known >= 2 and (best is None or result.known > best[0]):
            best = (result.known, candidate)
    return Kind(best[1]) if best else None


SCAN = 32
"""Bytes read at each top-level field by :func:`protobuf_extent`: a key and a length (at most ten
bytes each), or a key and a fixed-width value."""


def protobuf_extent(at: Callable[[int, int], bytes], size: int | None) -> int | None:
    """How many bytes from the window's start decide the onnx-light walks of an input without a
    magic, read field by field at the top level (``at(start, count)`` reads the window's bytes
    from ``start``; ``size`` is the window's, None when unknown: a length is then checked by
    reading up to its end); None when the top level reads on to the end of the window (or
    holds a group): the walks then need every byte.

    A key of wire type 6 or 7 or of field number 0, a varint of more than ten bytes, or a length
    that runs past the end of the window stops every walk at that field, whichever message it
    reads the bytes as (the top level's wire structure is the same for all three); the fields
    before it lie wholly before it, so their nested bytes are walked alike. The walks of the
    bytes up to :data:`SCAN` bytes past that field's key therefore end as the walks of the whole
    window do: a huge file of no known kind is not read whole to find that out."""
    from hurray_decl.onnx_light.protowire import WireError, WireType, read_key, read_varint

    pos = 0
    while True:
        chunk = at(pos, SCAN)
        if len(chunk) < SCAN:  # the end of the window is near: the walks read to it
            return None
        try:
            _, wire, after = read_key(chunk, 0, SCAN)
            if wire in (WireType.SGROUP, WireType.EGROUP):
                return None
            if wire == WireType.VARINT:
                pos += read_varint(chunk, after, SCAN)[1]
            elif wire == WireType.LEN:
                length, body = read_varint(chunk, after, SCAN)
                stop = pos + body + length
                if (size is not None and stop > size) or (size is None and length and not at(stop - 1, 1)):
                    return pos + SCAN  # the walks stop here: the length runs past the end
                pos = stop
            else:
                pos += after + (8 if wire == WireType.I64 else 4)
        except WireError:  # a key every walk refuses, or a varint of more than ten bytes (a chunk holds two)
            return pos + SCAN


def _classify(head: bytes, total: int | None, hint: Kind | None, forced: Kind,
              read: Callable[[int], bytes], skip: Callable[[int], int] | None,
              whole: Callable[[], Any], at: Callable[[int, int], bytes], size: int | None,
              streams: bool = True, limit: int | None = None) -> tuple[Detected, bytes]:
    """The kind of an input whose first bytes are ``head`` (``read`` gives more, ``skip`` passes
    over bytes of a regular file, ``whole`` the whole window, ``at(start, count)`` the window's
    bytes from ``start``, ``size`` its size when known); also the bytes judged."""
    if forced == STREAM:
        return Detected(STREAM, "--kind stream"), head
    if forced in ONNX_LIGHT:
        return Detected(forced, f"--kind {forced}"), head
    if not head:
        return (Detected(STREAM, "suffix") if hint == STREAM else Detected(EMPTY)), head
    if head.startswith(CONTAINER_STEM):
        return Detected(CONTAINER, "magic"), head
    if head.startswith(DESCRIPTOR_MAGIC) and not streams:
        return Detected(DESCRIPTOR, "magic (a window of standard input is a stream only with --kind stream)"), head
    if head.startswith(DESCRIPTOR_MAGIC):
        replay = _Replay(head, read, skip)
        found, data = _probe_stream(replay.read, replay.skip if skip is not None else None, limit)
        if not found and hint == STREAM:  # a descriptor or a stream: the suffix tells
            return Detected(STREAM, "magic and suffix"), data
        return Detected(STREAM if found else DESCRIPTOR, "magic"), data
    if forced == HURRAY:
        return Detected(CONTAINER if hint == CONTAINER else DESCRIPTOR, "--kind hurray"), head
    if head.startswith(GGUF_MAGIC):
        return Detected(GGUF, "magic"), head
    if _is_safetensors(head, total):
        return Detected(SAFETENSORS, "structure"), head
    if hint in (CONTAINER, STREAM, GGUF, SAFETENSORS):
        return Detected(hint, "suffix"), head
    extent = protobuf_extent(at, size)
    data = whole() if extent is None else at(0, extent)
    kind = _onnx_kind(data, hint)
    if kind is not None:
        return Detected(kind, "structure"), bytes(data)
    return Detected(DESCRIPTOR, "fallback"), bytes(data)  # no kind fits: judged as a descriptor (HT-HDR-04)


class _Replay:
    """``head`` (bytes read already), then what ``read`` gives; ``skip`` passes over the rest."""

    def __init__(self, head: bytes, read: Callable[[int], bytes], skip: Callable[[int], int] | None) -> None:
        self.head, self.more, self.passer = head, read, skip

    def read(self, count: int) -> bytes:
        part, self.head = self.head[:count], self.head[count:]
        return part + self.more(count - len(part)) if count > len(part) else part

    def skip(self, count: int) -> int:
        part, self.head = self.head[:count], self.head[count:]
        return len(part) + (self.passer(count - len(part)) if self.passer is not None and count > len(part) else 0)


def _suffix_hint(source: str) -> Kind | None:
    name = source.replace("\\", "/").rsplit("/", 1)[-1].lower()
    for suffix, kind in SUFFIXES.items():
        if name.endswith(suffix):
            return kind
    return None


HEAD = 16
"""Bytes read first to tell kinds apart by their magic."""


def detect(args: argparse.Namespace) -> Detected:
    """The kind of ``args.input``'s window, decided once per command (:func:`dispatch` hands its
    handler the arguments with ``detected`` set, which this returns; nothing is written into
    ``args``).

    A regular file is read no further than its kind needs (its first frame's buffers are
    skipped, not read). Standard input and pipes named by path are read as far as detection
    needs, and those bytes are handed on: the command's handler reads the same window again, from
    its start (the result is ``spent``: the window has been applied)."""
    cached = getattr(args, "detected", None)
    if isinstance(cached, Detected):
        return cached
    forced = Kind(getattr(args, "kind", AUTO) or AUTO)
    if getattr(args, "quantization", False):
        if forced not in (AUTO, HURRAY):
            raise UsageError(f"argument --quantization: not with --kind {forced} (a quantization payload is Hurray)")
        found = Detected(QUANTIZATION, "--quantization")
    else:
        found = _detect_source(args, forced)
    return found


def _detect_source(args: argparse.Namespace, forced: Kind) -> Detected:
    source = args.input
    if forced == STREAM or forced in ONNX_LIGHT:  # nothing to read: the handler reads the window as it arrives
        if source != "-" and source not in HANDED_ON and existing(source) is None and parse_hex(source) is None:
            raise FileProblem(f"argument INPUT: no such file: {source}") if looks_like_path(source) else \
                UsageError(f"argument INPUT: {source!r} is neither an existing file nor hex bytes")
        return Detected(forced, f"--kind {forced}")
    offset, length = getattr(args, "offset", 0) or 0, getattr(args, "length", None)
    hint = _suffix_hint(source) if source not in ("-",) else None
    if source == "-":
        window = Window(sys.stdin.buffer, offset, length)
        taken = bytearray()

        def read(count: int) -> bytes:
            part = window.read(count)
            taken.extend(part)
            return part

        def whole() -> bytes:
            taken.extend(window.read())
            return bytes(taken)

        def at(start: int, count: int) -> bytes:
            while len(taken) < start + count:
                part = window.read(min(CHUNK, start + count - len(taken)))
                if not part:
                    break
                taken.extend(part)
            return bytes(taken[start:start + count])

        windowed = bool(offset) or length is not None
        found, _ = _classify(read(HEAD), None, hint, forced, read, None, whole, at, None, streams=not windowed,
                             limit=buffer_limit(args))
        hand_on_stdin(bytes(taken), window)
        return replace(found, spent=True)
    if source in HANDED_ON:
        data = HANDED_ON[source]
        return _classify_bytes(data, hint, forced)
    info = existing(source)
    if info is None:
        spelled = parse_hex(source)
        if spelled is None:
            if looks_like_path(source):
                raise FileProblem(f"argument INPUT: no such file: {source}")
            raise UsageError(f"argument INPUT: {source!r} is neither an existing file nor hex bytes")
        return _classify_bytes(Window(io.BytesIO(spelled), offset, length).read(), None, forced)
    stream = open_file(source, info)
    with stream:
        window = Window(stream, offset, length)
        if window.size is None:  # a pipe by name: read whole, handed on as bytes
            data = window.read()
            HANDED_ON[source] = data
            return replace(_classify_bytes(data, hint, forced), spent=True)
        if window.size < offset:
            raise UsageError(f"argument --offset: {offset} is past the end of {source} ({window.size} bytes)")
        if length is not None and offset + length > window.size:
            raise UsageError(f"argument --length: the window of {length} bytes from byte {offset} runs past the end "
                             f"of {source} ({window.size} bytes)")

        def skip(count: int) -> int:
            passed = min(count, window.left or 0)
            stream.seek(passed, os.SEEK_CUR)
            window.left = (window.left or 0) - passed
            return passed

        def whole_window() -> Any:
            return window_data(args)

        size = window.left or 0

        def at(start: int, count: int) -> bytes:  # once the kind's magic is ruled out: the stream is free to move
            if start >= size:
                return b""
            stream.seek(offset + start)
            return stream.read(min(count, size - start))

        found, _ = _classify(window.read(HEAD), window.left, hint, forced, window.read, skip, whole_window, at, size,
                             limit=buffer_limit(args))
        return found


def _classify_bytes(data: bytes, hint: Kind | None, forced: Kind) -> Detected:
    view = io.BytesIO(data)
    head = view.read(HEAD)

    def skip(count: int) -> int:
        passed = min(count, len(data) - view.tell())
        view.seek(passed, os.SEEK_CUR)
        return passed

    return _classify(head, len(data) - len(head), hint, forced, view.read, skip, lambda: data,
                     lambda start, count: data[start:start + count], len(data))[0]



# ------------------------------------------------------------------ dispatch

Handler = Callable[[argparse.Namespace], int]
HANDLERS: dict[str, dict[Kind, Handler]] = {}
"""command -> kind -> handler: what each command does with each kind of input (filled by the
command modules' ``register``, through :func:`handles`)."""

def handles(sub: Any, command: str, handlers: dict[Kind, Handler]) -> None:
    """Register ``handlers`` (kind -> handler) for ``command`` and route it through :func:`dispatch`."""
    parser = sub.choices.get(command)
    if parser is None:
        return
    HANDLERS.setdefault(command, {}).update(handlers)
    parser.set_defaults(run=dispatch)


def check_options(args: argparse.Namespace, kind: Kind) -> None:
    """Refuse every given option that does not apply to ``kind`` (exit 2)."""
    command = getattr(args, "command", "")
    for dest, flag in OPTIONS.items():
        value = getattr(args, dest, None)
        if value is None or value is False or (isinstance(value, (list, tuple)) and not value):
            continue
        if not applies(dest, kind, command):
            flag = "BUFFER" if dest == "buffers" and command == "dequantize" else flag
            raise UsageError(f"argument {flag}: does not apply to {title(kind)} input of {command}")


def dispatch(args: argparse.Namespace) -> int:
    """Run ``args.command``'s handler for the kind of its input (see the module's documentation).

    The handler gets the arguments resolved, in a new namespace (``args`` is left as parsed):
    the input (``validate --buffers A B DESC``: the last file), ``detected``, and the window
    spent (offset 0) when detection applied it to bytes it hands on."""
    command = args.command
    resolved = dict(vars(args))
    if command == "validate" and args.input is None:  # "validate --buffers A B DESC": the last file
        if not args.buffers:
            raise UsageError("argument INPUT: the descriptor is missing")
        resolved.update(input=args.buffers[-1], buffers=args.buffers[:-1])
    if resolved["input"] is None:
        raise UsageError("argument INPUT: the input is missing")
    found = detect(argparse.Namespace(**resolved))
    resolved["detected"] = found
    if found.spent:
        resolved.update(offset=0, length=None)
    run = argparse.Namespace(**resolved)
    if found.kind in (Kind.DESCRIPTOR, Kind.QUANTIZATION, Kind.CONTAINER, Kind.STREAM):
        from hurray_decl.hurray.quantization import register_project_schemes

        register_project_schemes()  # this package reads its own private schemes (HQ-EXT-03)
    handler = HANDLERS.get(command, {}).get(found.kind)
    if found.kind in TAKEN_BY and handler is None:
        raise UsageError(f"argument INPUT: {run.input} is {TAKEN_BY[found.kind]}, not {command}")
    if found.kind == EMPTY:
        raise UsageError(f"argument INPUT: empty input ({run.input} has no bytes"
                         + (" in the window" if getattr(args, "offset", 0) or getattr(args, "length", None) is not None
                            else "")
                         + ("; --kind stream reads it as an empty stream)" if hasattr(args, "kind") else ")"))
    if handler is None:
        takes = ", ".join(title(kind) for kind in HANDLERS.get(command, {}))
        raise UsageError(f"argument INPUT: {command} does not take {title(found.kind)} input (it takes {takes})")
    check_options(run, found.kind)
    return handler(run)
