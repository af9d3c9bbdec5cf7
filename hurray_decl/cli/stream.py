"""Hurray streams on the ``hurray-decl`` command line.

:func:`register` teaches ``validate``, ``inspect``, ``decode``, ``dequantize``, ``extract`` and
``audit`` to read streams (STREAM-FORMAT.md), from files, hex and standard input, as the bytes
arrive: ``validate --progress`` prints a line per item as soon as it is complete, ``decode``
prints one JSON line per item, and a refusal is reported as soon as the bytes revealing it have
arrived. ``--kind stream`` forces the stream reader (an empty input is then a valid empty
stream, and a ``.hrry`` container is refused HS-FRM-12).

Detection (:func:`hurray_decl.cli.detection.detect`), without ``--kind``: an input is a stream when it
starts with a valid descriptor whose declared buffers (the sum of its buffer table's byte sizes) fit
in the rest of the input, and either more bytes follow them (judged as the next frame, whatever they
are) or there is at least one buffer byte. A descriptor whose buffers do not fit in the rest (a
descriptor inside a larger file, followed by unrelated bytes), or a descriptor without buffer bytes
and nothing after it, stays a descriptor, read as far as it declares; its verdict names the bytes it
judged. To decide, the first frame is read whole (from a regular file its buffers are skipped, not
read); on standard input those bytes are then handed on to the reader, so the first item's line
waits for the first byte of the next frame. ``validate`` of a stream reads every frame and checks
every buffer's contents: it never says ``valid`` for an input it read only part of. A file named
``*.stream`` is read as a stream whatever the probe says (the suffix decides between the two).

``--buffer-limit SIZE`` (bytes, or with a K, M, G or T suffix, powers of 1024; ``none`` for no
limit) bounds the buffer bytes the reader holds at once, a frame's with those of its open
composites' members: a byte_size past it is refused as HS-FRM-08 before any of its bytes is read
(on standard input, detection too reads no buffer past it). The default is the memory available
when the command starts, so that a claim no machine could hold, followed by endless input, is
refused at once instead of running out of memory. ``inspect`` prints each frame's rows as the frame
arrives, and ``ls`` each tensor's row, holding one frame (``ls`` skips buffer bytes as they arrive).

``--index K`` picks ``frame[K]`` (the numbering ``inspect`` shows) for ``dequantize`` and
``extract``; a stream has no names, so ``--name`` is refused. Both read and check the whole
stream before they write anything.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from hurray_decl.cli.common import INVALID, OK, UsageError
from hurray_decl.cli.detection import STREAM, handles
from hurray_decl.cli.inputs import buffer_limit, open_source

ROUTED = ("inspect", "validate", "decode", "dequantize", "extract")


def _reader(args: argparse.Namespace, **options: Any) -> Any:
    from hurray_decl.hurray.stream import read_stream

    return read_stream(open_source(args), permissive=getattr(args, "permissive", False),
                       buffer_limit=buffer_limit(args), **options)


# ------------------------------------------------------------------ the commands


def _describe(item: Any) -> str:
    from hurray_decl.hurray.stream import CompositeItem
    from hurray_decl.hurray.tables.element_types import BY_TAG

    if isinstance(item, CompositeItem):
        rule = {1: "partition", 2: "overlay", 3: "group"}.get(getattr(item.head.layout, "composition_rule", 0),
                                                             "composite")
        return f"composite {rule} {list(item.head.shape)}, {len(item.members)} members"
    d = item.descriptor
    element = BY_TAG.get(d.type_tag)
    name = element.name if element is not None else f"type 0x{d.type_tag:02X}"
    size = sum(len(b) for b in item.buffers)
    return f"tensor {name} {list(d.shape)}, {len(item.buffers)} buffers ({size} bytes)"


def cmd_validate(args: argparse.Namespace) -> int:
    from hurray_decl.cli import outputs

    if getattr(args, "buffers", None):
        raise UsageError("argument --buffers: a stream carries its buffers; give the stream alone")
    progress = sys.stderr if getattr(args, "format", "text") == "json" else sys.stdout

    def check() -> str:
        reader = _reader(args)
        items = first = 0
        for item in reader:
            if args.progress:
                print(f"frame[{first}] at byte {_start(reader, first)}: {_describe(item)}", flush=True, file=progress)
            items += 1
            first = reader.frames
            del item  # checked: its buffers go before the next frame's arrive (memory: one frame at a time)
        return f"stream of {items} item{'s' * (items != 1)} ({reader.frames} frames, {reader.position} bytes)"

    return outputs.report_verdict(args, STREAM, check)


def _start(reader: Any, frame: int) -> int:
    return int(reader.item_start)


def cmd_inspect(args: argparse.Namespace) -> int:
    """The stream's rows, each frame's printed as it arrives (the HTML page once the stream is read)."""
    from hurray_decl.dump.render import write
    from hurray_decl.hurray.stream.dump import stream_rows

    def progress(rows: list[Any]) -> None:
        if rows and args.progress:
            print(f"{rows[0].field.split('.')[0]}: {len(rows)} rows", file=sys.stderr, flush=True)

    from hurray_decl.cli.outputs import about

    result = stream_rows(open_source(args), permissive=getattr(args, "permissive", False),
                         buffer_limit=buffer_limit(args), each=progress)
    result.about.update(about(args, STREAM))
    if args.format == "html":
        from hurray_decl.cli.html import print_page

        return print_page(result.collect(), args)
    write(result, sys.stdout, args.format, every=0)  # a row is held only until the next one is made
    return INVALID if result.error is not None else OK


def _document(item: Any) -> dict[str, Any]:
    from hurray_decl.hurray.stream import CompositeItem

    if isinstance(item, CompositeItem):
        return {"head": json.loads(item.head.model_dump_json()), "members": [_document(m) for m in item.members]}
    return {"descriptor": json.loads(item.descriptor.model_dump_json()), "buffers": [len(b) for b in item.buffers]}


def cmd_decode(args: argparse.Namespace) -> int:
    """One JSON line per item as it arrives: ``{"frame": K, "offset": N, ...}``; a refusal is a last
    ``{"error": ...}`` line."""
    from hurray_decl.cli import outputs
    from hurray_decl.errors import HurrayDeclError

    reader = _reader(args)
    first = 0
    try:
        for item in reader:
            print(json.dumps({"frame": first, "offset": _start(reader, first), **_document(item)}), flush=True)
            first = reader.frames
    except HurrayDeclError as err:
        return outputs.report_error(args, STREAM, err, indent=None)
    return OK


def _frame(args: argparse.Namespace) -> Any:
    """The item that starts at ``frame[--index]`` (a composite with its members), or else the
    ``(descriptor, buffers)`` of that frame (a member), after the whole stream was read and checked."""
    from hurray_decl.errors import ArgumentError

    if getattr(args, "name", None) is not None:
        raise ArgumentError("--name", "a stream holds no names; pick a frame with --index (inspect numbers them)")
    if args.index is None:
        raise ArgumentError("--index", "a stream: pick a frame with --index K (frame[K] in inspect)")
    reader = _reader(args)
    found: list[tuple[Any, tuple[Any, ...]]] = []

    def keep(index: int, start: int, raw: bytes, descriptor: Any, buffers: Any) -> None:
        if index == args.index:
            found.append((descriptor, buffers))

    reader.on_frame = keep
    item: Any = None
    first = 0
    for each in reader:
        if first == args.index:  # an item starts at this frame: a composite comes with its members
            item = each
        first = reader.frames
    if item is not None:
        return item
    if not found:
        raise ArgumentError("--index", f"the stream has {reader.frames} frames", actual=args.index,
                            expected=f"0 to {reader.frames - 1}" if reader.frames else "(no frames)")
    return found[0]


def cmd_dequantize(args: argparse.Namespace) -> int:
    from hurray_decl.cli import outputs
    from hurray_decl.cli.common import region
    from hurray_decl.cli.outputs import write_values

    if args.buffers:
        raise UsageError("a stream carries its buffers: give no buffer files")
    outputs.target(args.output)
    key = region(args.region)
    write_values(args, _tensor(_frame(args)), key, f" of frame[{args.index}]")
    return OK


def _tensor(item: Any) -> Any:
    """A stream item (or a frame's ``(descriptor, buffers)``) as a Tensor, a composite's members included."""
    from hurray_decl.hurray.stream import CompositeItem
    from hurray_decl.hurray.tables.codes import CompositionRule
    from hurray_decl.hurray.tensor import CompositeHead
    from hurray_decl.hurray.values import Tensor

    if isinstance(item, CompositeItem):
        if item.head.layout.composition_rule not in (CompositionRule.PARTITION, CompositionRule.OVERLAY):
            raise UsageError("a group composite presents no single array: dequantize one of its members "
                             "(--index of a member's frame, as inspect numbers them)")
        return Tensor(item.head, (), members=[_tensor(m) for m in item.members])
    descriptor, buffers = (item.descriptor, item.buffers) if hasattr(item, "descriptor") else item
    if isinstance(descriptor.layout, CompositeHead):
        raise UsageError("this frame is a composite head inside another composite: dequantize the composite "
                         "that holds it, or one of its members")
    return Tensor(descriptor, list(buffers))


def cmd_extract(args: argparse.Namespace) -> int:
    from hurray_decl.cli import outputs
    from hurray_decl.hurray.tensor import write_tensor_descriptor

    folder = outputs.folder_target(args.output, create=True)
    found = _frame(args)
    descriptor, buffers = (found.head, ()) if hasattr(found, "head") else \
        (found.descriptor, found.buffers) if hasattr(found, "descriptor") else found
    contents = [(f"frame{args.index}.descriptor.bin", write_tensor_descriptor(descriptor, permissive=args.permissive))]
    contents += [(f"frame{args.index}.buffer{i}.bin", bytes(b)) for i, b in enumerate(buffers)]
    written = outputs.write_into(folder, contents)
    print(f"wrote frame[{args.index}]: " + ", ".join(str(p) for p in written))
    return OK


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate": cmd_validate, "inspect": cmd_inspect, "decode": cmd_decode,
    "dequantize": cmd_dequantize, "extract": cmd_extract,
}


def register(sub: Any) -> None:
    """Register the stream handlers of :data:`ROUTED` (the commands declare ``--progress``,
    ``--index`` and ``--kind`` themselves; ``audit`` reads ``*.stream`` files itself)."""
    for name in ROUTED:
        parser = sub.choices.get(name)
        if parser is None:
            continue
        handles(sub, name, {STREAM: HANDLERS[name]})


__all__ = ["STREAM", "register"]
