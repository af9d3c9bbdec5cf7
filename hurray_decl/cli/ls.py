"""``hurray-decl ls FILE``: one line per tensor (name, element type, shape, scheme, layout, bytes).

The summary view of a ``.hrry`` container, a Hurray stream or bare descriptor, an ONNX model of
onnx-light values, a ``.gguf`` file (a split model: every split), or a safetensors file (a
sharded model: its ``model.safetensors.index.json``), like ``gguf-dump``'s table. The input is read through
:mod:`hurray_decl.cli.inputs`, as every command reads its input: a file, ``-`` for standard
input, or hex bytes; its kind decided once by :func:`~hurray_decl.cli.detection.detect` (the magic
``GGUF``, ``HRRYFILE`` (a container), ``HRRY`` (a stream, or a bare descriptor when the bytes are
one descriptor), else an onnx-light message by its structure; the suffix decides for damaged
input, so that a ``.gguf`` whose magic is damaged is refused as a GGUF, HF-HDR-03), and missing,
empty and folder inputs are refused as for every command. Input of no kind is judged as a tensor
descriptor, as ``validate`` judges it (HT-HDR-04), and an onnx-light value or tensor is not a
file of tensors to list (exit 2). Each file is checked as far as the listing reads it: a GGUF's
whole layout (:mod:`hurray_decl.convert.gguf_file`), a container at open, each stream frame
(buffers skipped, not checked), the model's protobuf; a refusal is the verdict line of every
command, ``invalid: [CODE] path at byte N: message`` (exit 1). Shapes are in NumPy order (the
contiguous dimension last; ``gguf-dump`` prints GGUF's ``ne`` order, contiguous first); bytes are
the tensor's data (GGUF, onnx-light ``raw_data``) or its buffers (Hurray).

Text rows have fixed column widths (they fit 100 columns; a longer cell is cut with an ellipsis)
and are printed as they are read; ``--format json`` prints one document with the file, its kind
and every row in full.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hurray_decl.cli.common import OK
from hurray_decl.cli.kinds import Kind

COLUMNS = (("name", 27), ("type", 8), ("shape", 14), ("scheme", 16), ("layout", 14), ("bytes", 10))
"""Text columns and widths: five gaps of two spaces, 99 columns in all."""
NONE = "-"


@dataclass(frozen=True)
class Row:
    name: str
    type: str
    shape: tuple[int, ...]
    scheme: str
    layout: str
    bytes: int


def _cells(values: tuple[str, ...], columns: tuple[tuple[str, int], ...]) -> str:
    """The values in their columns; a value wider than its column is written whole, pushing the
    next ones right (never cut)."""
    line, end = "", 0  # end: where the columns so far end when nothing overflows
    for value, (name, width) in zip(values, columns):
        end += width + (2 if line or end else 0)
        cell = value.rjust(width) if name == "bytes" else value
        line = (line + "  " if line else "") + cell
        line = line.ljust(end) if len(line) < end else line
    return line.rstrip()


def text_line(values: tuple[str, ...]) -> str:
    """One row as text: one line when every value fits its column; else the whole name on a line of
    its own and the other values on the next, in their columns (names are never cut: each can
    be pasted into ``--name``)."""
    if len(values[0]) <= COLUMNS[0][1]:
        return _cells(values, COLUMNS)
    return values[0] + "\n" + _cells(("",) + tuple(values[1:]), COLUMNS)


def _shape(shape: tuple[int, ...]) -> str:
    return "x".join(str(n) for n in shape) if shape else "scalar"


# ------------------------------------------------------------------ the kinds

def _hurray_row(name: str, descriptor: Any) -> Row:
    from hurray_decl.hurray.quantization import scheme
    from hurray_decl.hurray.tables.element_types import BY_TAG
    from hurray_decl.hurray.tensor import LAYOUTS

    element = BY_TAG.get(descriptor.type_tag)
    layout = LAYOUTS.get(descriptor.layout.tag)
    q = descriptor.quantization
    return Row(name, element.name if element else f"0x{descriptor.type_tag:02X}", tuple(descriptor.shape),
               NONE if q is None else scheme(q.scheme_tag).name,
               layout.title if layout else f"0x{descriptor.layout.tag:02X}",
               sum(b.byte_size for b in descriptor.buffers))


def _window_bytes(args: argparse.Namespace) -> bytes:
    from hurray_decl.cli.inputs import window_data

    return bytes(window_data(args))


def gguf_rows(args: argparse.Namespace) -> Iterator[Row]:
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    from hurray_decl.cli.inputs import regular_file
    from hurray_decl.convert.gguf_splits import find_splits

    path = regular_file(args)
    for layout in find_splits(path if path is not None else _window_bytes(args)):  # a split: every split
        for t in layout.tensors:
            block = GGML_QUANT_SIZES[GGMLQuantizationType(t.ggml_type)][0]
            yield Row(t.name, t.type_name, t.shape, NONE if block == 1 else f"ggml block {block}", "row-major",
                      t.nbytes)


def safetensors_rows(args: argparse.Namespace) -> Iterator[Row]:
    """A safetensors file's tensors as stored (its dtype codes), or a sharded model's through its
    index, every shard checked against it first (CV-SHD), in shard order."""
    from hurray_decl.cli.common import UsageError
    from hurray_decl.cli.inputs import regular_file
    from hurray_decl.convert.safetensors import open_safetensors

    path = regular_file(args)
    if path is None:
        raise UsageError(f"argument FILE: a safetensors model is read from a file by its name, not from {args.input}")
    with open_safetensors(path) as opened:
        for e in opened.entries.values():
            yield Row(e.name, e.code, e.shape, NONE, "row-major", e.end - e.begin)


def container_rows(args: argparse.Namespace) -> Iterator[Row]:
    from hurray_decl.cli.inputs import window_data
    from hurray_decl.hurray.container import open_container

    container = open_container(window_data(args))
    for name in container.names:
        yield _hurray_row(name, container.tensor(name).descriptor)


def stream_rows(args: argparse.Namespace) -> Iterator[Row]:
    """A row per frame as the frame arrives (a composite's members before it closes), buffers skipped."""
    from hurray_decl.cli.inputs import buffer_limit, open_source
    from hurray_decl.hurray.stream import read_stream
    from hurray_decl.hurray.tensor.layouts import CompositeHead

    source = open_source(args)
    reader = read_stream(source, check_buffers=False, keep_buffers=False, buffer_limit=buffer_limit(args))
    heads: list[list[Any]] = []  # [name, members still to come, next member's number] per open composite
    arrived: list[Row] = []

    def on_frame(index: int, start: int, raw: bytes, descriptor: Any, buffers: Any) -> None:
        name = f"frame[{index}]"
        if heads:  # the reader checked member counts and depth before this call
            heads[-1][1:] = heads[-1][1] - 1, heads[-1][2] + 1
            name = f"{heads[-1][0]}.member[{heads[-1][2] - 1}]"
        arrived.append(_hurray_row(name, descriptor))
        if isinstance(descriptor.layout, CompositeHead):
            heads.append([name, descriptor.layout.member_count, 0])
        while heads and heads[-1][1] == 0:
            heads.pop()

    reader.on_frame = on_frame
    try:
        for _ in reader.frame_by_frame():
            yield from arrived
            arrived.clear()
    finally:
        if source.stream is not sys.stdin.buffer:
            source.stream.close()


def descriptor_rows(args: argparse.Namespace) -> Iterator[Row]:
    """The one descriptor the window starts with (as far as it declares), or the descriptor
    reader's refusal of bytes of no known kind."""
    from hurray_decl.cli.inputs import read_descriptor
    from hurray_decl.hurray.tensor import read_tensor_descriptor

    data = read_descriptor(args.input, offset=getattr(args, "offset", 0) or 0,
                           length=getattr(args, "length", None)).data
    yield _hurray_row(Path(args.input).stem, read_tensor_descriptor(data))


def onnx_rows(args: argparse.Namespace) -> Iterator[Row]:
    from hurray_decl.cli.inputs import window_data
    from hurray_decl.onnx_light.inputs import parse

    model = parse(window_data(args), Kind.MODEL)  # the one protobuf reader of every command, its rule on refusal
    for value in model.graph.encoded_initializer:
        tensor_type = value.logical_type.tensor_type
        profile = value.struct_type.name.rsplit("/", 1)[-1] or "encoded"
        shape = tuple(d.dim_value for d in tensor_type.shape.dim)
        yield Row(value.name, _data_type(tensor_type.elem_type), shape, f"onnx-light {profile}", NONE,
                  len(value.raw_data))
    for plain in model.graph.initializer:
        yield Row(plain.name, _data_type(plain.data_type), tuple(plain.dims), NONE, "row-major", len(plain.raw_data))


def _data_type(code: int) -> str:
    from hurray_decl.onnx_light import TensorProto

    try:
        return str(TensorProto.DataType.Name(code)).lower()
    except ValueError:
        return f"type {code}"


READERS = {Kind.GGUF: gguf_rows, Kind.CONTAINER: container_rows, Kind.STREAM: stream_rows,
           Kind.DESCRIPTOR: descriptor_rows, Kind.MODEL: onnx_rows, Kind.SAFETENSORS: safetensors_rows}
"""The input kinds ``ls`` lists, and the reader of each."""


# ------------------------------------------------------------------ the command

def cmd_ls(args: argparse.Namespace) -> int:
    from hurray_decl.cli.detection import detect

    kind = detect(args).kind
    rows = READERS[kind](args)
    if args.format == "json":
        listed = [{**asdict(r), "shape": list(r.shape)} for r in rows]
        print(json.dumps({"file": str(Path(args.input)), "kind": kind, "tensors": listed,
                          "bytes": sum(r["bytes"] for r in listed)}, indent=2))
        return OK
    first = next(rows, None)  # the file's kind confirmed (or refused) before the header
    print(text_line(tuple(name.upper() for name, _ in COLUMNS)), flush=True)
    count = total = 0
    flush = sys.stdout.isatty() or kind == Kind.STREAM  # a stream's rows are shown as its frames arrive
    for row in itertools.chain([] if first is None else [first], rows):
        print(text_line((row.name, row.type, _shape(row.shape), row.scheme, row.layout, str(row.bytes))),
              flush=flush)
        count, total = count + 1, total + row.bytes
    print(f"{count} tensor{'s' if count != 1 else ''}, {total} bytes ({kind})")
    return OK


def register(subparsers: Any) -> None:
    """Add ``ls`` to the ``hurray-decl`` sub-command parser, its input read through :mod:`hurray_decl.cli.inputs`."""
    from hurray_decl.cli.detection import handles
    from hurray_decl.cli.inputs import buffer_limit_option

    parser = subparsers.add_parser(
        "ls", help="list the tensors of a .hrry, stream, onnx-light model, .gguf or safetensors file",
        description="One line per tensor: name, element type, shape (NumPy order), scheme, layout and bytes, for a "
                    ".hrry container, a Hurray stream or descriptor, an ONNX model of onnx-light values, a .gguf "
                    "file or a safetensors file or sharded model's index (a file, - for standard input, or hex "
                    "bytes). Exit 0 listed, 1 invalid input (the rule code is printed), 2 usage error (an empty "
                    "input, an input that is not a file of tensors), 3 file error.")
    parser.add_argument("input", metavar="FILE", help="the file to list")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="text rows or one JSON document")
    buffer_limit_option(parser)
    handles(subparsers, "ls", dict.fromkeys(READERS, cmd_ls))
