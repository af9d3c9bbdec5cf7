"""The conversions of ``convert`` as a table: a :class:`Reader` per source :class:`Kind` and a
:class:`Writer` per :class:`Target`. A writer's :attr:`Writer.steps` are the source kinds it
accepts, each with the conversion of one of that reader's items; :data:`PAIRS`, every (source,
target) ``convert`` makes, is derived from them. A writer either holds every converted tensor
and writes them at once (:attr:`Writer.whole`), or writes each as it is converted
(:attr:`Writer.stream`: memory holds one tensor at a time); the staged writers themselves are
:mod:`hurray_decl.cli.writers`'. The safetensors sides (:attr:`Writer.run`, :attr:`Reader.run`)
are conversions of their own (:mod:`hurray_decl.cli.safetensors_sides`).

:func:`convert` runs one pair: the reader reads, each item is converted (a :class:`Row` per
item, the reason and the options that would convert a refused one), the writer writes, and the
report is printed. Nothing heavy is imported here until a conversion runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hurray_decl.cli import writers
from hurray_decl.cli.common import INVALID, OK, SCALE_TYPES, InvalidInput, UsageError, progress
from hurray_decl.cli.kinds import Kind, Target
from hurray_decl.cli.report import SKIPPED, Row, missing_tensors, report_conversion
from hurray_decl.cli.safetensors_sides import convert_safetensors

Item = Any  # a GGUF tensor, a named Hurray tensor or an ONNX initializer
Step = Callable[[Item], Any]


@dataclass(frozen=True)
class Read:
    """What a reader gives: the items, how each is described in the report (name, type, shape),
    the source's metadata as container KV values and the GGML types it records, the GGUF KV
    entries, and the ONNX model the initializers belong to."""

    items: Sequence[Item]
    describe: Callable[[Item], tuple[str, str, tuple[int, ...]]]
    kv: dict[str, Any] = field(default_factory=dict)
    recorded: dict[str, str] = field(default_factory=dict)
    gguf_kv: list[Any] = field(default_factory=list)
    model: Any = None


@dataclass(frozen=True)
class Reader:
    kind: Kind
    read: Callable[[argparse.Namespace], Read]
    kv: Callable[[Read, list[Row], argparse.Namespace], dict[str, Any]]
    """The output's KV entries once every item is converted."""
    lazy: bool = False
    """Its items' data are read as each converts: a writer that can streams them."""
    dequantizes: bool = True
    """Whether ``--dequantize`` reads it."""
    own_schemes: bool = True
    """Whether it reads the project's private schemes without ``--private-schemes``."""


@dataclass(frozen=True)
class Writer:
    target: Target
    steps: Mapping[Kind, Callable[[Read, argparse.Namespace], Step]] = field(default_factory=dict)
    """The source kinds it accepts: each one's conversion of one item."""
    whole: Callable[[Path, list[tuple[str, Any]], dict[str, Any], list[Row], argparse.Namespace], str] | None = None
    stream: Callable[[Path, writers.Staging], AbstractContextManager[writers.Sink]] | None = None
    """The sink each converted tensor is pushed into, as it is made (memory holds one at a time)."""
    dequantized: bool = False
    """Whether it takes ``--dequantize``."""
    run: Callable[[argparse.Namespace], int] | None = None
    """A conversion of its own, for every source."""

    def streams(self, reader: Reader, target: Path) -> bool:
        return self.stream is not None and (self.whole is None or (reader.lazy and target.suffix != ".bin"))


# --- readers --------------------------------------------------------------------------------------

def _lib() -> Any:
    from hurray_decl.convert import tensors

    return tensors


def _metadata() -> Any:
    from hurray_decl.convert import metadata

    return metadata


def read_gguf(args: argparse.Namespace) -> Read:
    from hurray_decl.cli.inputs import regular_file, window_data
    from hurray_decl.convert.gguf import read_gguf_model
    from hurray_decl.errors import ArgumentError

    path = regular_file(args)
    try:  # the layout checked whole here (RULES.md codes); each tensor's data read when converted
        model = read_gguf_model(path if path is not None else bytes(window_data(args)))
    except ArgumentError as err:  # a KV key the conversion records types under: invalid input
        raise InvalidInput(f"invalid input: {err.detail}") from None
    return Read(model.tensors, lambda t: (t.name, t.type_name, t.shape), gguf_kv=model.kv)


def _hurray(tensors: list[writers.NamedTensor], kv: dict[str, Any] | None = None) -> Read:
    return Read(tensors, lambda t: (t.name, Target.HURRAY, tuple(t.descriptor.shape)), kv or {},
                _metadata().tensor_types(kv or {}))


def read_descriptor(args: argparse.Namespace) -> Read:
    from hurray_decl.cli.inputs import map_file, read_descriptor
    from hurray_decl.hurray.tensor import read_tensor_descriptor

    if not args.buffer:
        raise UsageError("a Hurray descriptor needs its buffers: --buffer FILE, once per buffer")
    descriptor = read_tensor_descriptor(read_descriptor(args.input).data)
    buffers = [bytes(map_file(b, what="--buffer")) for b in args.buffer]
    return _hurray([writers.NamedTensor(args.name or Path(args.input).stem, descriptor, buffers)])


def read_stream(args: argparse.Namespace) -> Read:
    """The tensors of a Hurray stream, named ``NAME.0``, ``NAME.1`` ... (``--name``, else the input's stem)."""
    import sys

    from hurray_decl.cli.inputs import open_source
    from hurray_decl.hurray.stream import CompositeItem, read_stream

    stem = args.name or Path(args.input).stem
    tensors = []
    source = open_source(args)
    try:
        for i, item in enumerate(read_stream(source)):
            if isinstance(item, CompositeItem):
                raise InvalidInput(f"invalid input: frame {i} of {args.input} is a composite; convert takes streams "
                                   "of plain tensors")
            tensors.append(writers.NamedTensor(f"{stem}.{i}", item.descriptor, [bytes(b) for b in item.buffers]))
    finally:
        if source.stream is not sys.stdin.buffer:
            source.stream.close()
    return _hurray(tensors)


def read_container(args: argparse.Namespace) -> Read:
    """Every tensor of a ``.hrry`` container (checked, memory-mapped) and its KV entries."""
    from hurray_decl.cli.inputs import window_data

    writers.container_package()
    from hurray_decl.hurray.container import open_container

    container = open_container(window_data(args)).validate()
    tensors = [writers.NamedTensor(t.name, t.descriptor, list(t.buffers)) for t in container.tensors()]
    return _hurray(tensors, dict(container.kv))


def read_model(args: argparse.Namespace) -> Read:
    from hurray_decl.cli.inputs import window_data
    from hurray_decl.onnx_light import EncodedValueProto
    from hurray_decl.onnx_light.inputs import parse

    model = parse(window_data(args), Kind.MODEL)  # the one protobuf reader of every command, its rule on refusal

    def describe(value: Any) -> tuple[str, str, tuple[int, ...]]:
        if isinstance(value, EncodedValueProto):
            dims = value.logical_type.tensor_type.shape.dim
            return value.name, value.struct_type.name.rsplit("/", 1)[-1] or "encoded", tuple(d.dim_value for d in dims)
        return value.name, f"TensorProto:{value.data_type}", tuple(value.dims)

    kv = _metadata().from_metadata_props((p.key, p.value) for p in model.metadata_props)
    items = list(model.graph.encoded_initializer) + list(model.graph.initializer)
    return Read(items, describe, kv, _metadata().tensor_types(kv), model=model)


def _with_missing(entries: dict[str, Any], rows: list[Row]) -> dict[str, Any]:
    """A partial model says which tensors it misses."""
    missing = [(r.code or "", r.source, r.name) for r in missing_tensors(rows)]
    return entries | _metadata().missing_kv(missing) if missing else entries


def gguf_kv(read: Read, rows: list[Row], args: argparse.Namespace) -> dict[str, Any]:
    """The GGUF entries, and the types of the tensors kept."""
    kept = [] if args.dequantize else [(r.name, r.source) for r in rows if r.converted]
    return _with_missing(_metadata().container_kv(read.gguf_kv, kept), rows)


def source_kv(read: Read, rows: list[Row], args: argparse.Namespace) -> dict[str, Any]:
    """The source's own entries, the recorded GGML types of the tensors converted only."""
    kv = dict(read.kv)
    if kv and read.recorded:
        metadata = _metadata()
        kept = {r.name for r in rows if r.converted}
        kv[metadata.TENSOR_TYPES_KEY] = metadata.container_kv(
            [], [(n, t) for n, t in read.recorded.items() if n in kept])[metadata.TENSOR_TYPES_KEY]
    return _with_missing(kv, rows)


READERS: dict[Kind, Reader] = {reader.kind: reader for reader in (
    Reader(Kind.GGUF, read_gguf, gguf_kv, lazy=True, own_schemes=False),
    Reader(Kind.CONTAINER, read_container, source_kv),
    Reader(Kind.STREAM, read_stream, source_kv),
    Reader(Kind.DESCRIPTOR, read_descriptor, source_kv),
    Reader(Kind.MODEL, read_model, source_kv, dequantizes=False),
)}
"""The input kinds ``convert`` reads (and :data:`SAFETENSORS`, a conversion of its own)."""
SAFETENSORS = convert_safetensors
"""``convert`` of a safetensors source, whatever the target."""


# --- writers --------------------------------------------------------------------------------------

def _dtype(args: argparse.Namespace) -> str:
    return str(args.dtype or "float32")


def _scale(args: argparse.Namespace) -> str:
    return str(args.scale_type or SCALE_TYPES[0])


def _each_hurray(step: Callable[[Read, argparse.Namespace], Step]) -> dict[Kind, Callable[[Read, argparse.Namespace],
                                                                                          Step]]:
    return dict.fromkeys((Kind.DESCRIPTOR, Kind.CONTAINER, Kind.STREAM), step)


def hurray_whole(target: Path, results: list[tuple[str, Any]], kv: dict[str, Any], rows: list[Row],
                 args: argparse.Namespace) -> str:
    return writers.hurray_whole(target, results, kv)


def onnx_light_whole(target: Path, results: list[tuple[str, Any]], kv: dict[str, Any], rows: list[Row],
                     args: argparse.Namespace) -> str:
    model = _lib().onnx_light_model(results)
    for key, text in _metadata().to_metadata_props(kv):
        entry = model.metadata_props.add()
        entry.key, entry.value = key, text
    writers.stage_model(target, model, check=True)
    return str(target) + (f" ({len(kv)} metadata entries)" if kv else "")


def ort_whole(target: Path, results: list[tuple[str, Any]], kv: dict[str, Any], rows: list[Row],
              args: argparse.Namespace) -> str:
    from hurray_decl.convert.ort import matmul_nbits_model

    writers.stage_model(target, matmul_nbits_model(results), check=False)
    return str(target)


def gguf_whole(target: Path, results: list[tuple[str, Any]], kv: dict[str, Any], rows: list[Row],
               args: argparse.Namespace) -> str:
    """The KV entries GGUF holds (the others listed as skipped), the tensors in the GGUF order
    when the source records it."""
    metadata = _metadata()
    entries, refused = metadata.gguf_entries(kv)
    refused += metadata.check_gguf_entries(entries)
    names = {key for key, _ in refused}
    rows += [Row(f"kv {key}", "kv", (), SKIPPED, code=err.code, reason=err.detail) for key, err in refused]
    order = {n: i for i, n in enumerate(metadata.tensor_types(kv))}
    tensors = sorted((t for _, t in results), key=lambda t: order.get(t.name, len(order)))
    return writers.write_gguf(target, [e for e in entries if e.key not in names], tensors,
                              getattr(args, "split_max_size", None) or 0)


WRITERS: dict[Target, Writer] = {writer.target: writer for writer in (
    Writer(Target.HURRAY, {
        Kind.GGUF: lambda r, a: (lambda t: _lib().dequantized_tensor(t, _dtype(a))) if a.dequantize
        else lambda t: _lib().gguf_to_hurray(t, a.private_schemes),
        Kind.STREAM: lambda r, a: (lambda t: _lib().hurray_dequantized(t.descriptor, t.buffers, _dtype(a)))
        if a.dequantize else lambda t: (t.descriptor, t.buffers),
        Kind.MODEL: lambda r, a: lambda v: _lib().initializer_to_hurray(v, r.model, r.recorded.get(v.name))},
        whole=hurray_whole, stream=writers.hurray_out, dequantized=True),
    Writer(Target.ONNX_LIGHT, {
        Kind.GGUF: lambda r, a: _lib().gguf_to_onnx_light_tensor,
        **_each_hurray(lambda r, a: lambda t: _lib().hurray_to_onnx_light(t.descriptor, t.buffers))},
        whole=onnx_light_whole),
    Writer(Target.ORT, {
        Kind.GGUF: lambda r, a: lambda t: _lib().gguf_to_ort(t, scale_type=_scale(a)),
        **_each_hurray(lambda r, a: lambda t: _lib().hurray_to_ort(t.descriptor, t.buffers, scale_type=_scale(a)))},
        whole=ort_whole),
    Writer(Target.GGUF, {
        **_each_hurray(lambda r, a: writers.planned(
            lambda t: _lib().hurray_to_gguf(t.name, t.descriptor, t.buffers, r.recorded.get(t.name)))),
        Kind.MODEL: lambda r, a: writers.planned(
            lambda v: _lib().initializer_to_gguf(v, r.model, r.recorded.get(v.name)))},
        whole=gguf_whole),
    Writer(Target.SAFETENSORS, run=convert_safetensors),
    Writer(Target.NPZ, {
        Kind.GGUF: lambda r, a: lambda t: _lib().gguf_npz(t, a.dequantize, _dtype(a)),
        **_each_hurray(lambda r, a: lambda t: _lib().hurray_npz(t.name, t.descriptor, t.buffers, a.dequantize,
                                                                 _dtype(a)))},
        stream=writers.npz_out, dequantized=True),
)}
"""One writer per :class:`Target` ``convert --to`` names."""

PAIRS = {(kind, writer.target) for writer in WRITERS.values() for kind in writer.steps}
"""(source kind, target) of every conversion the table makes (the safetensors sides are their own)."""


# --- one conversion -------------------------------------------------------------------------------

def converted(read: Read, step: Step, rows: list[Row], args: argparse.Namespace) -> Iterator[tuple[str, Any]]:
    """Convert the items one at a time, yielding each result as it is made and adding a row per
    item to ``rows`` (the reason, and the options that would convert it, when there is no result).
    Without ``--partial``, nothing more is yielded after the first refusal (the output will not be
    written), but every item is still converted, so that every refusal is listed."""
    from hurray_decl.convert.tensors import converts_with
    from hurray_decl.errors import HurrayDeclError

    for item in progress(read.items, "convert"):
        name, source, shape = read.describe(item)
        try:
            result = step(item)
        except HurrayDeclError as err:
            rows.append(Row(name, source, shape, SKIPPED, code=err.code, reason=err.detail,
                            converts_with=converts_with(source, args.to)))
            continue
        rows.append(Row(name, source, shape, "converted"))
        if args.partial or not missing_tensors(rows):
            yield name, result


def convert(reader: Reader, writer: Writer, args: argparse.Namespace) -> int:
    """Read, convert and write one (source, target) pair of :data:`PAIRS`, then report."""
    if reader.own_schemes or args.private_schemes:  # the project reads and writes its own private schemes
        from hurray_decl.hurray.quantization import register_project_schemes

        register_project_schemes()
    target = Path(args.output).expanduser().absolute()
    read = reader.read(args)
    rows: list[Row] = []
    results = converted(read, writer.steps[reader.kind](read, args), rows, args)
    if writer.stream is not None and writer.streams(reader, target):
        written: str | None = None
        try:
            with writers.staging() as stage, writer.stream(target, stage) as sink:
                for name, result in results:  # each written and dropped before the next is converted
                    sink.put(name, result)
                written = sink.finish(reader.kv(read, rows, args) if sink.takes_kv else None)
                if not writers.kept(rows, args.partial):
                    raise writers.NotWritten
        except writers.NotWritten:
            written = None
        report_conversion(rows, written, args)
        return OK if written is not None else INVALID
    held = list(results)
    if not held or (missing_tensors(rows) and not args.partial) or writer.whole is None:
        report_conversion(rows, None, args)
        return INVALID
    written = writer.whole(target, held, reader.kv(read, rows, args), rows, args)
    report_conversion(rows, written, args)
    return OK
