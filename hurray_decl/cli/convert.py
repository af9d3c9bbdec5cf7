"""The conversion command ``convert`` (safetensors sources and targets are routed to :mod:`.models`).

``register(subparsers)`` adds them to ``hurray-decl``; each handler takes the argparse namespace
and returns the exit status: 0 done, 1 invalid input (the rule code is printed), 2 usage error,
3 file or environment error, 130 interrupted. Failures print one line on stderr, never a
traceback, and leave no file behind: every output is written under a temporary name in its
target folder and renamed into place once everything has been converted and checked.

Hurray outputs go through :func:`write_hurray`, the one place that knows their forms: a
``.hrry`` container (:func:`write_container`), ``NAME.bin`` (one tensor: the descriptor, and its
buffers in ``NAME.buf0.bin``, ``NAME.buf1.bin`` ...), or a folder of those with a
``manifest.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from hurray_decl.cli.kinds import Kind, Target

OK, INVALID, USAGE, FILE_ERROR, INTERRUPTED = 0, 1, 2, 3, 130
TARGETS = tuple(Target)  # safetensors: routed to cli.models
SCALE_TYPES = ("float32", "float16", "bfloat16")  # also the --dtype choices (convert.tensors.DEQUANTIZE_DTYPES)


class CommandError(Exception):
    """A one-line failure with its exit status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _say(message: str) -> None:
    print(f"hurray-decl: {message}", file=sys.stderr)


def _guarded(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Run a handler, turning every expected failure into one line and its exit status."""
    from hurray_decl.cli.common import verdict
    from hurray_decl.errors import ARGUMENT, HurrayDeclError

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except CommandError as err:
            _say(str(err))
            return err.status
        except HurrayDeclError as err:
            if err.code == ARGUMENT:
                _say(f"usage: {err}")
                return USAGE
            _say(verdict(err))
            return INVALID
        except BrokenPipeError:
            raise  # the reader of our output went away: the top level stops quietly
        except OSError as err:
            _say(f"file or environment error: {err}")
            return FILE_ERROR
        except MemoryError:
            _say("environment error: the system refused the memory this conversion needs; nothing written")
            return FILE_ERROR
        except KeyboardInterrupt:
            _say("interrupted; nothing written")
            return INTERRUPTED

    return run


# --- outputs ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NamedTensor:
    name: str
    descriptor: Any
    buffers: list[bytes] | list[memoryview]


@dataclass
class Staging:
    """Outputs written under temporary names beside their targets, renamed into place by
    :meth:`commit`, files and folders alike through :class:`hurray_decl.cli.outputs.Batch`
    (recognisable temporaries, stale ones of killed runs removed, the free space checked, the
    permissions of a replaced file kept)."""

    files: Any = None

    def __post_init__(self) -> None:
        if self.files is None:
            from hurray_decl.cli.outputs import Batch

            self.files = Batch()

    def path(self, target: Path, folder: bool = False, size: int = 0) -> Path:
        parent = target.parent
        if not parent.is_dir():
            raise CommandError(FILE_ERROR, f"cannot write {target}: the folder {parent} does not exist")
        if target.is_dir() and (not folder or any(target.iterdir())):
            raise CommandError(FILE_ERROR, f"cannot write {target}: it is {'a non-empty' if folder else 'a'} folder")
        if folder and target.exists() and not target.is_dir():
            raise CommandError(FILE_ERROR, f"cannot write the folder {target}: a file of that name exists")
        if not folder:
            return Path(self.files.file(target, size))
        return Path(self.files.folder(target))

    def write(self, target: Path, data: bytes) -> None:
        self.path(target, size=len(data)).write_bytes(data)

    def commit(self) -> None:
        self.files.commit()

    def discard(self) -> None:
        self.files.discard()


def _commit(write: Callable[[Staging], None]) -> None:
    """Stage every output with ``write``, then rename all of them; on any failure (SIGTERM and
    SIGHUP included, as :func:`hurray_decl.cli.outputs.batch` catches them) remove them all."""
    from hurray_decl.cli.outputs import batch

    with batch() as files:
        stage = Staging(files)
        try:
            write(stage)
            stage.commit()
        finally:
            stage.discard()


def _descriptor_files(folder_or_bin: Path, tensor: NamedTensor, stem: str) -> list[tuple[Path, bytes]]:
    from hurray_decl.hurray.tensor import write_tensor_descriptor

    files = [(folder_or_bin / f"{stem}.bin", write_tensor_descriptor(tensor.descriptor))]
    files += [(folder_or_bin / f"{stem}.buf{i}.bin", bytes(b)) for i, b in enumerate(tensor.buffers)]
    return files


def _container_package() -> None:
    """Refuse .hrry files in a build without ``hurray_decl.hurray.container``."""
    if find_spec(f"{__package__}.container") is None:
        raise CommandError(FILE_ERROR, "this build has no .hrry container support; use -o NAME.bin for one tensor "
                           "or -o FOLDER for a folder of descriptors and buffers")


def write_container(path: Path, tensors: Iterable[NamedTensor], kv: Any = None) -> Any:
    """Write ``tensors`` (and the KV entries ``kv``) as a ``.hrry`` container at ``path`` (a temporary
    file, renamed afterwards), with the one-pass writer of ``hurray_decl.hurray.container``: each
    tensor is written as it comes, so an iterator of tensors is never held whole. ``kv`` may be a
    function giving the entries, called once every tensor is written (entries that depend on which
    tensors converted)."""
    _container_package()
    from hurray_decl.hurray.container.writer import ContainerWriter

    with path.open("wb") as stream:
        writer = ContainerWriter(stream, tensor_count_hint=len(tensors) if isinstance(tensors, Sequence) else None)
        for tensor in tensors:
            writer.add(tensor.name, tensor.descriptor, tensor.buffers)
        entries = kv() if callable(kv) else kv
        writer.finish(entries or None)
    return entries


def read_container_tensors(source: Any) -> list[NamedTensor]:
    """Every tensor of a ``.hrry`` container, read with ``hurray_decl.hurray.container`` (checked, memory-mapped)."""
    return read_container_model(source)[0]


def read_container_model(source: Any) -> tuple[list[NamedTensor], dict[str, Any]]:
    """Every tensor of a ``.hrry`` container (a path, or its bytes: a memory map's view) and its
    KV entries (``KVValue``s, in file order)."""
    _container_package()
    from hurray_decl.hurray.container import open_container, read_container

    container = (read_container(source) if isinstance(source, (str, Path)) else open_container(source)).validate()
    return [NamedTensor(t.name, t.descriptor, list(t.buffers)) for t in container.tensors()], dict(container.kv)


def write_hurray(target: Path, tensors: Iterable[NamedTensor], stage: Staging, kv: Any = None) -> str:
    """Stage Hurray tensors at ``target``: a ``.hrry`` container (with ``kv``: entries, or a function
    giving them after the last tensor), one ``NAME.bin`` tensor, or a folder (the container and the
    folder take the tensors one by one, as an iterator gives them)."""
    if target.suffix == ".hrry":
        entries = write_container(stage.path(target), tensors, kv)
        return f"the container {target}" + (f" ({len(entries)} KV entries)" if entries else "")
    if target.suffix == ".bin":
        tensors = list(tensors)
        if len(tensors) != 1:
            raise CommandError(USAGE, f"{len(tensors)} tensors do not fit one {target.name}: give -o FOLDER or "
                               "-o NAME.hrry")
        files = _descriptor_files(target.parent, tensors[0], target.stem)
        for path, data in files:
            stage.write(path, data)
        return ", ".join(str(p) for p, _ in files)
    folder = stage.path(target, folder=True)
    manifest, used = [], set()
    count = 0
    for tensor in tensors:
        count += 1
        stem = re.sub(r"[^A-Za-z0-9._-]", "_", tensor.name) or "tensor"
        while stem in used:
            stem += "_"
        used.add(stem)
        files = _descriptor_files(folder, tensor, stem)
        for path, data in files:
            path.write_bytes(data)
        manifest.append({"name": tensor.name, "descriptor": files[0][0].name,
                         "buffers": [p.name for p, _ in files[1:]]})
    (folder / "manifest.json").write_text(json.dumps({"tensors": manifest}, indent=2) + "\n", encoding="utf-8")
    return f"the folder {target} ({count} tensors and manifest.json)"


# --- reporting ----------------------------------------------------------------------------------

@dataclass
class Row:
    name: str
    source: str
    shape: tuple[int, ...]
    converted: bool
    code: str | None = None
    reason: str = ""
    converts_with: tuple[str, ...] = ()  # the options that would convert a refused tensor

    def text(self) -> str:
        head = f"{'converted' if self.converted else 'skipped':9}  {self.name}  {self.source}  {list(self.shape)}"
        if self.converted:
            return head
        hint = f" (converts with {', '.join(self.converts_with)})" if self.converts_with else ""
        return f"{head}  {self.code}: {self.reason}{hint}"


def missing_tensors(rows: Sequence[Row]) -> list[Row]:
    """The rows of the tensors (not KV entries) that did not convert."""
    return [r for r in rows if not r.converted and r.source != "kv"]


def _progress(items: Sequence[Any], label: str) -> Iterable[Any]:
    """Items with a progress bar on a terminal (stderr), silent otherwise."""
    from tqdm import tqdm

    return tqdm(items, desc=label, unit="tensor", file=sys.stderr, leave=False,
                disable=len(items) < 2 or not sys.stderr.isatty())


def _converted(items: Sequence[Any], describe: Callable[[Any], tuple[str, str, tuple[int, ...]]],
               convert: Callable[[Any], Any], rows: list[Row], args: argparse.Namespace,
               keep: bool = True) -> Iterator[tuple[str, Any]]:
    """Convert the items one at a time, yielding each result as it is made and adding a row per
    item to ``rows`` (the reason, and the options that would convert it, when there is no result).
    With ``keep`` false, nothing more is yielded after the first refusal (the output will not be
    written), but every item is still converted, so that every refusal is listed."""
    from hurray_decl.convert.tensors import converts_with
    from hurray_decl.errors import HurrayDeclError

    for item in _progress(items, "convert"):
        name, source, shape = describe(item)
        try:
            result = convert(item)
        except HurrayDeclError as err:
            rows.append(Row(name, source, shape, False, err.code, err.detail, converts_with(source, args.to)))
            continue
        rows.append(Row(name, source, shape, True))
        if keep or not missing_tensors(rows):
            yield name, result


def _convert_each(items: Sequence[Any], describe: Callable[[Any], tuple[str, str, tuple[int, ...]]],
                  convert: Callable[[Any], Any], args: argparse.Namespace) -> tuple[list[Row], list[tuple[str, Any]]]:
    """Convert every item, keeping the results and a row per item (the reason when there is none);
    without ``--partial`` the results are dropped after the first refusal."""
    rows: list[Row] = []
    results = list(_converted(items, describe, convert, rows, args, keep=args.partial))
    return rows, results


class _NotWritten(Exception):
    """Raised inside a streamed write when the output must not be kept (nothing converted, or a
    tensor refused without ``--partial``): the staged output is discarded."""


def _stream_hurray(target: Path, items: Sequence[Any], describe: Callable[[Any], tuple[str, str, tuple[int, ...]]],
                   convert: Callable[[Any], Any], args: argparse.Namespace,
                   kv: Callable[[list[Row]], Any] | None = None) -> int:
    """Convert and write tensor by tensor (a ``.hrry`` container or a folder): each converted
    tensor is written and dropped before the next is read, so memory holds one tensor at a time.
    A container gets the KV entries ``kv`` makes from the rows, once every tensor is written."""
    rows: list[Row] = []

    def write(stage: Staging) -> str:
        converted = _converted(items, describe, convert, rows, args, keep=args.partial)
        tensors = (NamedTensor(name, *tensor) for name, tensor in converted)
        return write_hurray(target, tensors, stage, None if kv is None else lambda: kv(rows))

    return _commit_streamed(write, rows, args)


def _commit_streamed(write: Callable[[Staging], str], rows: list[Row], args: argparse.Namespace) -> int:
    """Stage a streamed output with ``write`` (which fills ``rows`` and says what it wrote) and
    keep it only when something converted and, without ``--partial``, every tensor did; then report."""
    written = []

    def kept(stage: Staging) -> None:
        written.append(write(stage))
        if not any(r.converted for r in rows) or (missing_tensors(rows) and not args.partial):
            raise _NotWritten

    try:
        _commit(kept)
    except _NotWritten:
        _report(rows, None, args)
        return INVALID
    _report(rows, written[0], args)
    return OK


def _stream_npz(target: Path, items: Sequence[Any], describe: Callable[[Any], tuple[str, str, tuple[int, ...]]],
                convert: Callable[[Any], Any], args: argparse.Namespace) -> int:
    """Convert and write a ``.npz`` tensor by tensor: each array is written into the archive (as
    ``NAME.npy``, uncompressed, as ``numpy.savez`` writes it) and dropped before the next is made."""
    import zipfile

    import numpy as np

    rows: list[Row] = []

    def write(stage: Staging) -> str:
        with zipfile.ZipFile(stage.path(target), "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            for name, values in _converted(items, describe, convert, rows, args, keep=args.partial):
                with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, np.ascontiguousarray(values), allow_pickle=False)
        return f"{target} ({sum(r.converted for r in rows)} arrays)"

    return _commit_streamed(write, rows, args)


def _report(rows: Sequence[Row], written: str | None, args: argparse.Namespace) -> None:
    """The rows, then one summary line; or, with ``--json``, one document. A refused tensor without
    ``--partial`` means nothing was written; with it, the output is partial and says so."""
    done = sum(r.converted for r in rows)
    missing = missing_tensors(rows)
    summary = f"{done} converted, {len(rows) - done} skipped"
    if written is None:
        outcome = "nothing written"
        if missing and done and not args.partial:
            outcome += (f": {len(missing)} tensor{'s' if len(missing) > 1 else ''} did not convert (--partial writes "
                        "the others)")
    elif missing:
        outcome = (f"wrote {written}, a partial model: {len(missing)} tensor{'s' if len(missing) > 1 else ''} "
                   f"missing ({', '.join(r.name for r in missing[:8])}{', ...' if len(missing) > 8 else ''})")
    else:
        outcome = f"wrote {written}"
    if args.json:  # the key set of every conversion report (quantize's and the safetensors sources' too)
        from hurray_decl.cli.outputs import tensor_record

        print(json.dumps({"source": str(args.input), "to": args.to, "output": written,
                          "partial": bool(written and missing), "missing": [r.name for r in missing], "tensors": [
                              tensor_record(r.name, r.source, r.shape, "converted" if r.converted else "skipped",
                                            code=r.code, reason=r.reason, converts_with=r.converts_with)
                              for r in rows]}, indent=2))
        return
    for row in rows:
        print(row.text())
    print(f"{summary}; {outcome}")


# --- sources --------------------------------------------------------------------------------------

SOURCES = (Kind.GGUF, Kind.CONTAINER, Kind.STREAM, Kind.DESCRIPTOR, Kind.MODEL)
"""The input kinds ``convert`` reads here (safetensors sources are :mod:`.models`')."""
READS = ("a GGUF file, a .hrry container, a Hurray stream or descriptor, an ONNX model of onnx-light values or a "
         "safetensors file")


def source_kind(args: argparse.Namespace) -> Kind:
    """One of :data:`SOURCES`: the kind
    :func:`hurray_decl.cli.detection.detect` decided for the input (by magic, structure and suffix);
    input of no kind is refused here (exit 1)."""
    from hurray_decl.cli.detection import detect

    found = detect(args)
    if found.reason == "fallback":
        raise CommandError(INVALID, f"invalid input: {args.input} is none of the kinds convert reads ({READS}) by its "
                           "first bytes")
    return found.kind


def _read_model(args: argparse.Namespace) -> Any:
    from hurray_decl.cli.detection import MODEL
    from hurray_decl.cli.inputs import window_data
    from hurray_decl.onnx_light.inputs import parse

    return parse(window_data(args), MODEL)  # the one protobuf reader of every command, its rule on refusal


def _read_hurray(args: argparse.Namespace) -> list[NamedTensor]:
    from hurray_decl.cli.inputs import map_file, read_descriptor
    from hurray_decl.hurray.tensor import read_tensor_descriptor

    if not args.buffer:
        raise CommandError(USAGE, "a Hurray descriptor needs its buffers: --buffer FILE, once per buffer")
    descriptor = read_tensor_descriptor(read_descriptor(args.input).data)
    buffers = [bytes(map_file(b, what="--buffer")) for b in args.buffer]
    return [NamedTensor(args.name or Path(args.input).stem, descriptor, buffers)]


def _read_stream(args: argparse.Namespace) -> list[NamedTensor]:
    """The tensors of a Hurray stream, named ``NAME.0``, ``NAME.1`` ... (``--name``, else the input's stem)."""
    from hurray_decl.cli.inputs import open_source
    from hurray_decl.hurray.stream import CompositeItem, read_stream

    stem = args.name or Path(args.input).stem
    tensors = []
    source = open_source(args)
    try:
        for i, item in enumerate(read_stream(source)):
            if isinstance(item, CompositeItem):
                raise CommandError(INVALID, f"invalid input: frame {i} of {args.input} is a composite; convert takes "
                                   "streams of plain tensors")
            tensors.append(NamedTensor(f"{stem}.{i}", item.descriptor, [bytes(b) for b in item.buffers]))
    finally:
        if source.stream is not sys.stdin.buffer:
            source.stream.close()
    return tensors


def _model_bytes(model: Any, check: bool) -> bytes:
    if check:
        from hurray_decl.onnx_light import check_model_values

        check_model_values(model)
    try:
        return model.SerializeToString()
    except ValueError as err:  # protobuf refuses messages of 2 GiB and more
        raise CommandError(FILE_ERROR, f"the ONNX model is too large for one protobuf message ({err})") from None


# --- the commands ------------------------------------------------------------------------------------

def _output(path: str) -> Path:
    return Path(path).expanduser().absolute()


PAIRS = {(Kind.GGUF, Target.HURRAY), (Kind.GGUF, Target.ONNX_LIGHT), (Kind.GGUF, Target.ORT),
         (Kind.DESCRIPTOR, Target.ORT), (Kind.DESCRIPTOR, Target.ONNX_LIGHT), (Kind.CONTAINER, Target.ORT),
         (Kind.CONTAINER, Target.ONNX_LIGHT), (Kind.MODEL, Target.HURRAY), (Kind.CONTAINER, Target.GGUF),
         (Kind.DESCRIPTOR, Target.GGUF), (Kind.MODEL, Target.GGUF), (Kind.STREAM, Target.GGUF),
         (Kind.STREAM, Target.ONNX_LIGHT), (Kind.STREAM, Target.ORT), (Kind.STREAM, Target.HURRAY),
         (Kind.GGUF, Target.NPZ), (Kind.CONTAINER, Target.NPZ), (Kind.DESCRIPTOR, Target.NPZ),
         (Kind.STREAM, Target.NPZ)}
"""(source kind, target) of every conversion ``convert`` makes here (safetensors ones: :mod:`.models`)."""


def cmd_convert(args: argparse.Namespace) -> int:
    """``convert`` of a source whose kind :func:`hurray_decl.cli.detection.dispatch` detected."""
    from hurray_decl.cli.inputs import regular_file, window_data

    kind = source_kind(args)
    target = _output(args.output)
    pairs = PAIRS if kind == Kind.STREAM else {pair for pair in PAIRS if pair[0] != Kind.STREAM}
    if (kind, args.to) not in pairs:
        raise CommandError(USAGE, f"no conversion from {kind} to {args.to}; converted: "
                           + ", ".join(f"{a} -> {b}" for a, b in sorted(pairs)))
    from hurray_decl.convert import metadata, tensors as convert

    if args.dequantize and kind == Kind.MODEL:
        raise CommandError(USAGE, "--dequantize reads GGUF files and Hurray containers, streams and descriptors")
    if args.dequantize and args.to not in (Target.HURRAY, Target.NPZ):
        raise CommandError(USAGE, f"--dequantize writes --to hurray, safetensors or npz, not --to {args.to}")
    if args.to == Target.NPZ and args.dtype == "bfloat16":
        raise CommandError(USAGE, "a .npz has no bfloat16 (numpy.load cannot read it): --dtype float32 or float16")
    if args.dtype and not args.dequantize:
        raise CommandError(USAGE, "--dtype is the type of dequantized values: give --dequantize too")
    dtype = args.dtype or "float32"
    if kind != Kind.GGUF or args.private_schemes:  # the project reads and writes its own private schemes
        from hurray_decl.hurray.quantization import register_project_schemes

        register_project_schemes()
    scale_type = args.scale_type or SCALE_TYPES[0]
    items: Sequence[Any]  # GGUF tensors, named Hurray tensors or ONNX initializers
    step: Callable[[Any], Any]  # one item to its converted form
    kv: dict[str, Any] = {}  # the source's metadata as container KV values
    gguf_kv: list[Any] = []
    if kind == Kind.GGUF:
        from hurray_decl.convert.gguf import read_gguf_model
        from hurray_decl.errors import ArgumentError

        path = regular_file(args)
        try:  # the layout checked whole here (RULES.md codes); each tensor's data read when converted
            gguf_model = read_gguf_model(path if path is not None else bytes(window_data(args)))
        except ArgumentError as err:  # a KV key the conversion records types under: invalid input
            raise CommandError(INVALID, f"invalid input: {err.detail}") from None
        items, gguf_kv = gguf_model.tensors, gguf_model.kv
        describe = lambda t: (t.name, t.type_name, t.shape)  # noqa: E731
        step = {"hurray": (lambda t: convert.dequantized_tensor(t, dtype)) if args.dequantize
                else lambda t: convert.gguf_to_hurray(t, args.private_schemes),
                "onnx-light": convert.gguf_to_onnx_light_tensor,
                "ort": lambda t: convert.gguf_to_ort(t, scale_type=scale_type),
                "npz": lambda t: convert.gguf_npz(t, args.dequantize, dtype)}[args.to]
    elif kind in (Kind.DESCRIPTOR, Kind.CONTAINER, Kind.STREAM):
        if kind == Kind.DESCRIPTOR:
            items = _read_hurray(args)
        elif kind == Kind.STREAM:
            items = _read_stream(args)
        else:
            items, kv = read_container_model(window_data(args))
        describe = lambda t: (t.name, Target.HURRAY, tuple(t.descriptor.shape))  # noqa: E731
        recorded = metadata.tensor_types(kv)
        step = {"hurray": (lambda t: convert.hurray_dequantized(t.descriptor, t.buffers, dtype)) if args.dequantize
                else lambda t: (t.descriptor, t.buffers),
                "onnx-light": lambda t: convert.hurray_to_onnx_light(t.descriptor, t.buffers),
                "ort": lambda t: convert.hurray_to_ort(t.descriptor, t.buffers, scale_type=scale_type),
                "npz": lambda t: convert.hurray_npz(t.name, t.descriptor, t.buffers, args.dequantize, dtype),
                "gguf": _planned(lambda t: convert.hurray_to_gguf(t.name, t.descriptor, t.buffers,
                                                                  recorded.get(t.name)))}[args.to]
    else:
        model = _read_model(args)
        items = list(model.graph.encoded_initializer) + list(model.graph.initializer)
        kv = metadata.from_metadata_props((p.key, p.value) for p in model.metadata_props)
        describe = _describe_initializer
        recorded = metadata.tensor_types(kv)
        step = {"hurray": lambda v: convert.initializer_to_hurray(v, model, recorded.get(v.name)),
                "gguf": _planned(lambda v: convert.initializer_to_gguf(v, model, recorded.get(v.name)))}[args.to]

    def with_missing(entries: dict[str, Any], rows: list[Row]) -> dict[str, Any]:  # a partial model says so
        missing = [(r.code or "", r.source, r.name) for r in missing_tensors(rows)]
        return entries | metadata.missing_kv(missing) if missing else entries

    def gguf_container_kv(rows: list[Row]) -> dict[str, Any]:  # the GGUF entries, and the types of the tensors kept
        kept = [] if args.dequantize else [(r.name, r.source) for r in rows if r.converted]
        return with_missing(metadata.container_kv(gguf_kv, kept), rows)

    if kind == Kind.GGUF and args.to == Target.HURRAY and target.suffix != ".bin":
        return _stream_hurray(target, items, describe, step, args, gguf_container_kv)
    if args.to == Target.NPZ:
        return _stream_npz(target, items, describe, step, args)
    rows, results = _convert_each(items, describe, step, args)
    if not results or (missing_tensors(rows) and not args.partial):
        _report(rows, None, args)
        return INVALID
    if kind == Kind.GGUF:
        kv = gguf_container_kv(rows)
    else:
        if kv:  # the recorded GGML types, of the tensors converted only
            types = metadata.tensor_types(kv)
            kept = {n for n, _ in results}
            if types:
                kv[metadata.TENSOR_TYPES_KEY] = metadata.container_kv(
                    [], [(n, t) for n, t in types.items() if n in kept])[metadata.TENSOR_TYPES_KEY]
        kv = with_missing(kv, rows)
    written = []
    if args.to == Target.GGUF:
        entries, refused = metadata.gguf_entries(kv)
        refused += metadata.check_gguf_entries(entries)
        names = {key for key, _ in refused}
        rows += [Row(f"kv {key}", "kv", (), False, err.code, err.detail) for key, err in refused]
        order = {n: i for i, n in enumerate(metadata.tensor_types(kv))}  # the GGUF order, when recorded
        tensors = sorted((t for _, t in results), key=lambda t: order.get(t.name, len(order)))
        written.append(_write_gguf(target, [e for e in entries if e.key not in names], tensors,
                                   getattr(args, "split_max_size", None) or 0))
        _report(rows, written[0], args)
        return OK

    def write(stage: Staging) -> None:
        if args.to == Target.HURRAY:
            written.append(write_hurray(target, [NamedTensor(n, *t) for n, t in results], stage, kv))
            return
        if args.to == "ort":
            from hurray_decl.convert.ort import matmul_nbits_model

            stage.write(target, _model_bytes(matmul_nbits_model(results), check=False))
        else:
            model = convert.onnx_light_model(results)
            for key, text in metadata.to_metadata_props(kv):
                entry = model.metadata_props.add()
                entry.key, entry.value = key, text
            stage.write(target, _model_bytes(model, check=True))
        written.append(str(target) + (f" ({len(kv)} metadata entries)" if kv and args.to == Target.ONNX_LIGHT else ""))

    _commit(write)
    _report(rows, written[0], args)
    return OK


@dataclass(frozen=True)
class PlannedGguf:
    """A tensor the gguf target takes, as the first pass leaves it: the source item, the conversion,
    and the name, GGML type, byte shape and size of its GGUF form (the converted bytes themselves
    dropped; the second pass converts the item again and writes the bytes)."""

    item: Any
    convert: Callable[[Any], Any]
    name: str
    type_name: str
    byte_shape: tuple[int, ...]
    nbytes: int

    def data(self) -> Any:
        """The tensor's GGUF bytes, converted again, as a uint8 array of :attr:`byte_shape`."""
        import numpy as np

        from hurray_decl.errors import HurrayDeclError

        try:
            tensor = self.convert(self.item)
        except HurrayDeclError as err:  # converted in the first pass: its bytes are not the same now
            raise CommandError(FILE_ERROR, f"the source changed during the conversion: {self.name} is now refused "
                               f"({err}); nothing written") from None
        data = np.asarray(tensor.data, np.uint8).reshape(tensor.byte_shape)
        if (tensor.name, tensor.type_name, data.shape) != (self.name, self.type_name, self.byte_shape):
            raise CommandError(FILE_ERROR, f"the source changed during the conversion: {self.name} is now "
                               f"{tensor.type_name} {list(data.shape)} bytes, not {self.type_name} "
                               f"{list(self.byte_shape)}; nothing written")
        return data


def _planned(convert: Callable[[Any], Any]) -> Callable[[Any], PlannedGguf]:
    """The first pass of the gguf target: ``convert`` (an item to a ``GgufTensor``) run for what it
    refuses and for the GGML type it picks, both of which depend on the values (the narrowest type
    that holds them exactly), so no shape-only rule gives them; its bytes are dropped at once."""

    def plan(item: Any) -> PlannedGguf:
        tensor = convert(item)
        shape = tensor.byte_shape
        return PlannedGguf(item, convert, tensor.name, tensor.type_name, shape, int(tensor.data.nbytes))

    return plan


def _write_gguf(target: Path, entries: Sequence[Any], tensors: Sequence[PlannedGguf], split_max_size: int = 0) -> str:
    """Write a ``.gguf`` file with gguf's ``GGUFWriter``: ``entries`` (their GGUF types kept) and
    ``tensors`` (:class:`PlannedGguf`), through a temporary file renamed once complete
    (``cli.outputs.atomic``). Every tensor's info goes first, from the plan; then each tensor is
    converted again, written and dropped before the next, so memory holds one tensor at a time.
    ``write_tensor_data`` pads as ``write_tensors_to_file`` does: the same bytes. With
    ``split_max_size``, GGUFWriter's own splitting writes ``<stem>-%05d-of-%05d.gguf`` files
    of at most that many bytes of tensor data (the split keys in each) into a temporary folder
    beside ``target``; they are renamed into place together once all are complete."""
    from hurray_decl.cli.common import FileProblem
    from hurray_decl.cli.outputs import atomic, batch, target as checked

    try:
        if not split_max_size:
            with atomic(target) as temporary:
                _write_gguf_into(temporary, entries, tensors)
            return f"{target} ({len(tensors)} tensors, {len(entries)} KV entries)"
        import os

        with batch() as stage:  # a staging folder named like the temporaries: a killed run's is removed later
            folder = stage.folder(checked(target).parent / f"{target.name}.splits")
            _write_gguf_into(folder / target.name, entries, tensors, split_max_size)
            made = sorted(folder.iterdir())
            with batch() as files:
                for path in made:
                    os.replace(path, files.file(target.parent / path.name))
            stage.discard()  # the folder is empty now: removed, never renamed into place
    except FileProblem as err:
        raise CommandError(FILE_ERROR, str(err)) from None
    return f"{target.parent / made[0].name} and {len(made) - 1} more ({len(tensors)} tensors, {len(entries)} KV " \
           "entries)"


def _write_gguf_into(path: Path, entries: Sequence[Any], tensors: Sequence[PlannedGguf],
                     split_max_size: int = 0) -> None:
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFWriter

    from hurray_decl.convert.metadata import write_gguf_entries

    architecture = next((e.value for e in entries if e.key == "general.architecture" and e.type == "STRING"), b"")
    alignment = next((e.value for e in entries if e.key == "general.alignment" and e.type == "UINT32"), None)
    writer = GGUFWriter(path, architecture.decode("utf-8", "replace"), split_max_size=split_max_size)
    if alignment:  # the entry itself is one of ``entries``
        writer.data_alignment = int(alignment)
    write_gguf_entries(writer, entries)
    for planned in tensors:
        writer.add_tensor_info(planned.name, planned.byte_shape, np.dtype(np.uint8), planned.nbytes,
                               raw_dtype=GGMLQuantizationType[planned.type_name])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for planned in _progress(tensors, "write"):
        data = planned.data()
        writer.write_tensor_data(data)
        del data  # dropped before the next tensor is converted
    writer.close()


def _describe_initializer(value: Any) -> tuple[str, str, tuple[int, ...]]:
    from hurray_decl.onnx_light import EncodedValueProto

    if isinstance(value, EncodedValueProto):
        dims = value.logical_type.tensor_type.shape.dim
        return value.name, value.struct_type.name.rsplit("/", 1)[-1] or "encoded", tuple(d.dim_value for d in dims)
    return value.name, f"TensorProto:{value.data_type}", tuple(value.dims)


def register(subparsers: Any) -> None:
    """Add ``convert`` to the ``hurray-decl`` sub-command parser (``quantize`` is in :mod:`.models`)."""
    from hurray_decl.cli.common import byte_count

    convert = subparsers.add_parser(
        "convert", help="convert GGUF, Hurray and onnx-light tensors between the formats, exactly",
        description="Convert every tensor of SOURCE to its exact form in the target; a tensor that has none is "
                    "listed with its rule and what would convert it, and nothing is written (--partial writes the "
                    "others). SOURCE is a .gguf file, a .hrry container, a Hurray stream, a Hurray descriptor (with "
                    "--buffer for each buffer) or an "
                    "ONNX model holding onnx-light values. --to hurray writes NAME.bin, a FOLDER or NAME.hrry "
                    "(with the source's metadata as KV); --to gguf a .gguf file (KV and tensors, GGUFWriter); "
                    "--to onnx-light an ONNX model of onnx-light encoded initializers; --to ort an ONNX model of "
                    "com.microsoft MatMulNBits nodes (input NAME.A, output NAME.Y = NAME.A @ W^T); --to npz a .npz of "
                    "plain arrays (with --dequantize, of every tensor). Exit 0 written, "
                    "1 invalid input or a tensor that does not convert, 2 usage error, 3 file error.")
    convert.add_argument("input", metavar="SOURCE", help="a .gguf file, a .hrry container, a Hurray stream or "
                         "descriptor, an ONNX model or a safetensors file (or - for standard input)")
    convert.add_argument("-o", "--output", required=True, help="the output file or folder")
    convert.add_argument("--to", choices=TARGETS, default=Target.HURRAY, help="the target format (default: hurray)")
    convert.add_argument("--buffer", action="append", metavar="FILE",
                         help="a buffer of a Hurray descriptor SOURCE, in order; repeat for each")
    convert.add_argument("--name", help="the tensor's name when SOURCE is one Hurray descriptor")
    convert.add_argument("--scale-type", choices=SCALE_TYPES, default=None,
                         help="the MatMulNBits matrix and scale type for --to ort (default: float32, exact for "
                              "float16 scales)")
    convert.add_argument("--partial", action="store_true",
                         help="write the tensors that convert even when others do not (the output's KV, the "
                              "summary and the --json report name the missing ones); without it a tensor that "
                              "does not convert means nothing is written, exit 1")
    convert.add_argument("--private-schemes", action="store_true",
                         help="--to hurray: write GGUF's K-quants (Q2_K .. Q6_K) in the project's private scheme "
                              "ggml_super_block (0xF0), exactly; other readers do not know it (HQ-EXT-04)")
    convert.add_argument("--dequantize", action="store_true",
                         help="write every quantized tensor's values, unquantized (--to hurray or --to safetensors; "
                              "from GGUF: the values gguf computes, bit for bit); plain tensors keep their type")
    convert.add_argument("--dtype", choices=SCALE_TYPES,
                         help="the type of dequantized values (default float32; float16 and bfloat16 round to "
                              "nearest, ties to even)")
    convert.add_argument("--split-max-size", type=byte_count, metavar="SIZE",
                         help="--to safetensors or gguf: shards of at most SIZE bytes of tensor data (N, NK, NM, NG: "
                              "powers of 1000), named NAME-00001-of-0000N.safetensors with "
                              "NAME.safetensors.index.json, or NAME-00001-of-0000N.gguf (GGUFWriter's splits)")
    convert.add_argument("--json", action="store_true", help="print the report as JSON")
    convert.set_defaults(check=check_options)
    from hurray_decl.cli.detection import handles

    handles(subparsers, "convert", dict.fromkeys(SOURCES, _guarded(cmd_convert)))


def check_options(args: argparse.Namespace) -> None:
    """The options of ``convert`` that apply to one target only, refused for the others."""
    from hurray_decl.cli.common import UsageError

    if args.scale_type is not None and args.to != Target.ORT:
        raise UsageError(f"argument --scale-type: applies to --to ort only (the MatMulNBits matrix and scale "
                         f"type), not --to {args.to}")
