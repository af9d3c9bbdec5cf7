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
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

OK, INVALID, USAGE, FILE_ERROR, INTERRUPTED = 0, 1, 2, 3, 130
TARGETS = ("hurray", "onnx-light", "ort", "gguf", "safetensors")  # safetensors: routed to cli.models
SCALE_TYPES = ("float32", "float16", "bfloat16")


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
    :meth:`commit`: files through :class:`hurray_decl.cli.outputs.Batch` (recognisable temporaries
    with the umask's permissions, stale ones of killed runs removed, the free space checked),
    folders as private temporary folders given the umask's permissions when renamed."""

    files: Any = None
    folders: list[tuple[Path, Path]] = field(default_factory=list)

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
        temp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=parent))
        self.folders.append((temp, target))
        return temp

    def write(self, target: Path, data: bytes) -> None:
        self.path(target, size=len(data)).write_bytes(data)

    def commit(self) -> None:
        mask = os.umask(0)
        os.umask(mask)
        for temp, target in self.folders:  # a temporary folder is private; the output gets the usual permissions
            os.chmod(temp, 0o777 & ~mask)
            os.replace(temp, target)
        self.folders.clear()
        self.files.commit()

    def discard(self) -> None:
        for temp, _ in self.folders:
            shutil.rmtree(temp, ignore_errors=True)
        self.folders.clear()
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

    def text(self) -> str:
        head = f"{'converted' if self.converted else 'skipped':9}  {self.name}  {self.source}  {list(self.shape)}"
        return head if self.converted else f"{head}  {self.code}: {self.reason}"


def _progress(items: Sequence[Any], label: str) -> Iterable[Any]:
    """Items with a progress bar on a terminal (stderr), silent otherwise."""
    from tqdm import tqdm

    return tqdm(items, desc=label, unit="tensor", file=sys.stderr, leave=False,
                disable=len(items) < 2 or not sys.stderr.isatty())


def _converted(items: Sequence[Any], describe: Callable[[Any], tuple[str, str, tuple[int, ...]]],
               convert: Callable[[Any], Any], rows: list[Row]) -> Iterator[tuple[str, Any]]:
    """Convert the items one at a time, yielding each result as it is made and adding a row per
    item to ``rows`` (the reason when there is no result)."""
    from hurray_decl.errors import HurrayDeclError

    for item in _progress(items, "convert"):
        name, source, shape = describe(item)
        try:
            result = convert(item)
        except HurrayDeclError as err:
            rows.append(Row(name, source, shape, False, err.code, err.detail))
            continue
        rows.append(Row(name, source, shape, True))
        yield name, result


def _convert_each(items: Sequence[Any], describe: Callable[[Any], tuple[str, str, tuple[int, ...]]],
                  convert: Callable[[Any], Any]) -> tuple[list[Row], list[tuple[str, Any]]]:
    """Convert every item, keeping the results and a row per item (the reason when there is none)."""
    rows: list[Row] = []
    results = list(_converted(items, describe, convert, rows))
    return rows, results


class _NothingConverted(Exception):
    """Raised inside a streamed write when no tensor converted: the staged output is discarded."""


def _stream_hurray(target: Path, items: Sequence[Any], describe: Callable[[Any], tuple[str, str, tuple[int, ...]]],
                   convert: Callable[[Any], Any], args: argparse.Namespace,
                   kv: Callable[[list[Row]], Any] | None = None) -> int:
    """Convert and write tensor by tensor (a ``.hrry`` container or a folder): each converted
    tensor is written and dropped before the next is read, so memory holds one tensor at a time.
    A container gets the KV entries ``kv`` makes from the rows, once every tensor is written."""
    rows: list[Row] = []
    written = []

    def write(stage: Staging) -> None:
        tensors = (NamedTensor(name, *tensor) for name, tensor in _converted(items, describe, convert, rows))
        written.append(write_hurray(target, tensors, stage, None if kv is None else lambda: kv(rows)))
        if not any(r.converted for r in rows):
            raise _NothingConverted

    try:
        _commit(write)
    except _NothingConverted:
        _report(rows, None, args)
        return INVALID
    _report(rows, written[0], args)
    return OK


def _report(rows: Sequence[Row], written: str | None, args: argparse.Namespace) -> None:
    done = sum(r.converted for r in rows)
    summary = f"{done} converted, {len(rows) - done} skipped"
    if args.json:
        print(json.dumps({"source": str(args.input), "to": args.to, "output": written, "tensors": [
            {"name": r.name, "type": r.source, "shape": list(r.shape), "converted": r.converted, "code": r.code,
             "reason": r.reason or None} for r in rows]}, indent=2))
        return
    for row in rows:
        print(row.text())
    print(f"{summary}; wrote {written}" if written else f"{summary}; nothing written")


# --- sources --------------------------------------------------------------------------------------

KINDS = {"gguf": "gguf", "container": "container", "stream": "stream", "descriptor": "hurray", "model": "onnx"}
"""The input kinds (:mod:`hurray_decl.cli.inputs`' names) ``convert`` reads, and the names its
messages give them (safetensors sources are :mod:`.models`')."""
READS = ("a GGUF file, a .hrry container, a Hurray stream or descriptor, an ONNX model of onnx-light values or a "
         "safetensors file")


def source_kind(args: argparse.Namespace) -> str:
    """``gguf``, ``container``, ``stream``, ``hurray`` (a tensor descriptor) or ``onnx``: the kind
    :func:`hurray_decl.cli.inputs.detect` decided for the input (by magic, structure and suffix);
    input of no kind is refused here (exit 1)."""
    from hurray_decl.cli.inputs import detect

    found = detect(args)
    if found.reason == "fallback":
        raise CommandError(INVALID, f"invalid input: {args.input} is none of the kinds convert reads ({READS}) by its "
                           "first bytes")
    return KINDS[found.kind]


def _read_model(args: argparse.Namespace) -> Any:
    from hurray_decl.cli.inputs import MODEL, window_data
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
    from hurray_decl.cli.stream import open_source
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


PAIRS = {("gguf", "hurray"), ("gguf", "onnx-light"), ("gguf", "ort"), ("hurray", "ort"), ("hurray", "onnx-light"),
         ("container", "ort"), ("container", "onnx-light"), ("onnx", "hurray"), ("container", "gguf"),
         ("hurray", "gguf"), ("onnx", "gguf"), ("stream", "gguf"), ("stream", "onnx-light"), ("stream", "ort"),
         ("stream", "hurray")}
"""(source kind, target) of every conversion ``convert`` makes here (safetensors ones: :mod:`.models`)."""


def cmd_convert(args: argparse.Namespace) -> int:
    """``convert`` of a source whose kind :func:`hurray_decl.cli.inputs.dispatch` detected."""
    from hurray_decl.cli.inputs import regular_file, window_data

    kind = source_kind(args)
    target = _output(args.output)
    pairs = PAIRS if kind == "stream" else {pair for pair in PAIRS if pair[0] != "stream"}
    if (kind, args.to) not in pairs:
        raise CommandError(USAGE, f"no conversion from {kind} to {args.to}; converted: "
                           + ", ".join(f"{a} -> {b}" for a, b in sorted(pairs)))
    from hurray_decl.convert import metadata, tensors as convert

    scale_type = args.scale_type
    items: Sequence[Any]  # GGUF tensors, named Hurray tensors or ONNX initializers
    kv: dict[str, Any] = {}  # the source's metadata as container KV values
    gguf_kv: list[Any] = []
    if kind == "gguf":
        from hurray_decl.convert.gguf import read_gguf_model
        from hurray_decl.errors import ArgumentError

        path = regular_file(args)
        try:  # the layout checked whole here (RULES.md codes); each tensor's data read when converted
            gguf_model = read_gguf_model(path if path is not None else bytes(window_data(args)))
        except ArgumentError as err:  # a KV key the conversion records types under: invalid input
            raise CommandError(INVALID, f"invalid input: {err.detail}") from None
        items, gguf_kv = gguf_model.tensors, gguf_model.kv
        describe = lambda t: (t.name, t.type_name, t.shape)  # noqa: E731
        step = {"hurray": convert.gguf_to_hurray, "onnx-light": convert.gguf_to_onnx_light_tensor,
                "ort": lambda t: convert.gguf_to_ort(t, scale_type=scale_type)}[args.to]
    elif kind in ("hurray", "container", "stream"):
        if kind == "hurray":
            items = _read_hurray(args)
        elif kind == "stream":
            items = _read_stream(args)
        else:
            items, kv = read_container_model(window_data(args))
        describe = lambda t: (t.name, "hurray", tuple(t.descriptor.shape))  # noqa: E731
        recorded = metadata.tensor_types(kv)
        step = {"hurray": lambda t: (t.descriptor, t.buffers),
                "onnx-light": lambda t: convert.hurray_to_onnx_light(t.descriptor, t.buffers),
                "ort": lambda t: convert.hurray_to_ort(t.descriptor, t.buffers, scale_type=scale_type),
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

    def gguf_container_kv(rows: list[Row]) -> dict[str, Any]:  # the GGUF entries, and the types of the tensors kept
        return metadata.container_kv(gguf_kv, [(r.name, r.source) for r in rows if r.converted])

    if kind == "gguf" and args.to == "hurray" and target.suffix != ".bin":
        return _stream_hurray(target, items, describe, step, args, gguf_container_kv)
    rows, results = _convert_each(items, describe, step)
    if not results:
        _report(rows, None, args)
        return INVALID
    if kind == "gguf":
        kv = gguf_container_kv(rows)
    elif kv:  # the recorded GGML types, of the tensors converted only
        types = metadata.tensor_types(kv)
        kept = {n for n, _ in results}
        if types:
            kv[metadata.TENSOR_TYPES_KEY] = metadata.container_kv(
                [], [(n, t) for n, t in types.items() if n in kept])[metadata.TENSOR_TYPES_KEY]
    written = []
    if args.to == "gguf":
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
        if args.to == "hurray":
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
        written.append(str(target) + (f" ({len(kv)} metadata entries)" if kv and args.to == "onnx-light" else ""))

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
        data = np.asarray(tensor.data, np.uint8).reshape(*tensor.shape[:-1], -1)
        if (tensor.name, tensor.type_name, data.shape) != (self.name, self.type_name, self.byte_shape):
            raise CommandError(FILE_ERROR, f"the source changed during the conversion: {self.name} is now "
                               f"{tensor.type_name} {list(data.shape)} bytes, not {self.type_name} "
                               f"{list(self.byte_shape)}; nothing written")
        return data


def _planned(convert: Callable[[Any], Any]) -> Callable[[Any], PlannedGguf]:
    """The first pass of the gguf target: ``convert`` (an item to a ``GgufTensor``) run for what it
    refuses and for the GGML type it picks, both of which depend on the values (the narrowest type
    that holds them exactly), so no shape-only rule gives them; its bytes are dropped at once."""
    import numpy as np

    def plan(item: Any) -> PlannedGguf:
        tensor = convert(item)
        shape = np.asarray(tensor.data, np.uint8).reshape(*tensor.shape[:-1], -1).shape
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
        folder = Path(tempfile.mkdtemp(prefix=".hurray-decl-splits-", dir=checked(target).parent))
        try:
            _write_gguf_into(folder / target.name, entries, tensors, split_max_size)
            made = sorted(folder.iterdir())
            with batch() as files:
                for path in made:
                    os.replace(path, files.file(target.parent / path.name))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
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
    convert = subparsers.add_parser(
        "convert", help="convert GGUF, Hurray and onnx-light tensors between the formats, exactly",
        description="Convert every tensor of SOURCE that has an exact form in the target and list the others with "
                    "the reason. SOURCE is a .gguf file, a .hrry container, a Hurray stream, a Hurray descriptor (with "
                    "--buffer for each buffer) or an "
                    "ONNX model holding onnx-light values. --to hurray writes NAME.bin, a FOLDER or NAME.hrry "
                    "(with the source's metadata as KV); --to gguf a .gguf file (KV and tensors, GGUFWriter); "
                    "--to onnx-light an ONNX model of onnx-light encoded initializers; --to ort an ONNX model of "
                    "com.microsoft MatMulNBits nodes (input NAME.A, output NAME.Y = NAME.A @ W^T). Exit 0 written, "
                    "1 invalid input or nothing convertible, 2 usage error, 3 file error.")
    convert.add_argument("input", metavar="SOURCE", help="a .gguf file, a .hrry container, a Hurray stream or "
                         "descriptor, an ONNX model or a safetensors file (or - for standard input)")
    convert.add_argument("-o", "--output", required=True, help="the output file or folder")
    convert.add_argument("--to", choices=TARGETS, default="hurray", help="the target format (default: hurray)")
    convert.add_argument("--buffer", action="append", metavar="FILE",
                         help="a buffer of a Hurray descriptor SOURCE, in order; repeat for each")
    convert.add_argument("--name", help="the tensor's name when SOURCE is one Hurray descriptor")
    convert.add_argument("--scale-type", choices=SCALE_TYPES, default="float32",
                         help="the MatMulNBits matrix and scale type for --to ort (default: float32, exact for "
                              "float16 scales)")
    convert.add_argument("--json", action="store_true", help="print the report as JSON")
    from hurray_decl.cli.inputs import handles

    handles(subparsers, "convert", dict.fromkeys(KINDS, _guarded(cmd_convert)))
