"""The conversion commands: ``quantize`` and ``convert``.

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
TARGETS = ("hurray", "onnx-light", "ort")
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
            _say(f"invalid {err.code}: {err}")
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
    """Output files written under temporary names beside their targets, renamed into place by :meth:`commit`."""

    pending: list[tuple[Path, Path]] = field(default_factory=list)

    def path(self, target: Path, folder: bool = False) -> Path:
        parent = target.parent
        if not parent.is_dir():
            raise CommandError(FILE_ERROR, f"cannot write {target}: the folder {parent} does not exist")
        if target.is_dir() and (not folder or any(target.iterdir())):
            raise CommandError(FILE_ERROR, f"cannot write {target}: it is {'a non-empty' if folder else 'a'} folder")
        if folder and target.exists() and not target.is_dir():
            raise CommandError(FILE_ERROR, f"cannot write the folder {target}: a file of that name exists")
        if folder:
            temp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=parent))
        else:
            handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
            os.close(handle)
            temp = Path(name)
        self.pending.append((temp, target))
        return temp

    def write(self, target: Path, data: bytes) -> None:
        self.path(target).write_bytes(data)

    def commit(self) -> None:
        mask = os.umask(0)
        os.umask(mask)
        for temp, target in self.pending:  # temporary files are private; outputs get the usual permissions
            os.chmod(temp, (0o777 if temp.is_dir() else 0o666) & ~mask)
            os.replace(temp, target)
        self.pending.clear()

    def discard(self) -> None:
        for temp, _ in self.pending:
            if temp.is_dir():
                shutil.rmtree(temp, ignore_errors=True)
            else:
                temp.unlink(missing_ok=True)
        self.pending.clear()


def _commit(write: Callable[[Staging], None]) -> None:
    """Stage every output with ``write``, then rename all of them; on any failure remove them all."""
    stage = Staging()
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


def write_container(path: Path, tensors: Iterable[NamedTensor]) -> None:
    """Write ``tensors`` as a ``.hrry`` container at ``path`` (a temporary file, renamed afterwards),
    with the one-pass writer of ``hurray_decl.hurray.container``: each tensor is written as it comes,
    so an iterator of tensors is never held whole."""
    _container_package()
    from hurray_decl.hurray.container.writer import ContainerWriter

    with path.open("wb") as stream:
        writer = ContainerWriter(stream, tensor_count_hint=len(tensors) if isinstance(tensors, Sequence) else None)
        for tensor in tensors:
            writer.add(tensor.name, tensor.descriptor, tensor.buffers)
        writer.finish()


def read_container_tensors(path: Path) -> list[NamedTensor]:
    """Every tensor of a ``.hrry`` container, read with ``hurray_decl.hurray.container`` (checked, memory-mapped)."""
    _container_package()
    from hurray_decl.hurray.container import read_container

    return [NamedTensor(t.name, t.descriptor, list(t.buffers)) for t in read_container(path).validate().tensors()]


def write_hurray(target: Path, tensors: Iterable[NamedTensor], stage: Staging) -> str:
    """Stage Hurray tensors at ``target``: a ``.hrry`` container, one ``NAME.bin`` tensor, or a folder
    (the container and the folder take the tensors one by one, as an iterator gives them)."""
    if target.suffix == ".hrry":
        write_container(stage.path(target), tensors)
        return f"the container {target}"
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
                   convert: Callable[[Any], Any], args: argparse.Namespace) -> int:
    """Convert and write tensor by tensor (a ``.hrry`` container or a folder): each converted
    tensor is written and dropped before the next is read, so memory holds one tensor at a time."""
    rows: list[Row] = []
    written = []

    def write(stage: Staging) -> None:
        tensors = (NamedTensor(name, *tensor) for name, tensor in _converted(items, describe, convert, rows))
        written.append(write_hurray(target, tensors, stage))
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
        print(json.dumps({"source": str(args.source), "to": args.to, "output": written, "tensors": [
            {"name": r.name, "type": r.source, "shape": list(r.shape), "converted": r.converted, "code": r.code,
             "reason": r.reason or None} for r in rows]}, indent=2))
        return
    for row in rows:
        print(row.text())
    print(f"{summary}; wrote {written}" if written else f"{summary}; nothing written")


# --- sources --------------------------------------------------------------------------------------

def _is_container(head: bytes) -> bool:
    if find_spec(f"{__package__}.container") is None:  # until the container package is merged: its FILE_MAGIC
        return head.startswith(b"HRRYFILE")
    from hurray_decl.hurray.container import is_container

    return is_container(head)


def _source_kind(path: Path) -> str:
    """``gguf``, ``container``, ``hurray`` (a tensor descriptor) or ``onnx``, from the first bytes."""
    from hurray_decl.convert.gguf import GGUF_MAGIC
    from hurray_decl.hurray.tensor.header import MAGIC

    try:
        with path.open("rb") as handle:
            head = handle.read(16)
    except IsADirectoryError:
        raise CommandError(FILE_ERROR, f"{path} is a folder, not a file") from None
    if head.startswith(GGUF_MAGIC):
        return "gguf"
    if _is_container(head):
        return "container"
    if head.startswith(MAGIC):
        return "hurray"
    return "onnx"


def _read_model(path: Path) -> Any:
    from google.protobuf.message import DecodeError

    from hurray_decl.onnx_light import ModelProto

    try:
        return ModelProto.FromString(path.read_bytes())
    except DecodeError:
        raise CommandError(INVALID, f"invalid input: {path} is neither a GGUF file, a Hurray descriptor nor an ONNX "
                           "model") from None


def _read_hurray(args: argparse.Namespace) -> list[NamedTensor]:
    from hurray_decl.hurray.tensor import read_tensor_descriptor

    if not args.buffer:
        raise CommandError(USAGE, "a Hurray descriptor needs its buffers: --buffer FILE, once per buffer")
    descriptor = read_tensor_descriptor(Path(args.source).read_bytes())
    buffers = [Path(b).read_bytes() for b in args.buffer]
    return [NamedTensor(args.name or Path(args.source).stem, descriptor, buffers)]


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


def cmd_convert(args: argparse.Namespace) -> int:
    source = Path(args.source)
    if not source.exists():
        raise CommandError(FILE_ERROR, f"no such file: {source}")
    kind = _source_kind(source)
    target = _output(args.output)
    pairs = {("gguf", "hurray"), ("gguf", "onnx-light"), ("gguf", "ort"), ("hurray", "ort"), ("hurray", "onnx-light"),
             ("container", "ort"), ("container", "onnx-light"), ("onnx", "hurray")}
    if (kind, args.to) not in pairs:
        raise CommandError(USAGE, f"no conversion from {kind} to {args.to}; converted: "
                           + ", ".join(f"{a} -> {b}" for a, b in sorted(pairs)))
    from hurray_decl.convert import tensors as convert

    scale_type = args.scale_type
    items: Sequence[Any]  # GGUF tensors, named Hurray tensors or ONNX initializers
    if kind == "gguf":
        from hurray_decl.convert.gguf import GgufTensors

        items = GgufTensors(source)  # checked whole here (RULES.md codes); each tensor's data read when converted
        describe = lambda t: (t.name, t.type_name, t.shape)  # noqa: E731
        step = {"hurray": convert.gguf_to_hurray, "onnx-light": convert.gguf_to_onnx_light_tensor,
                "ort": lambda t: convert.gguf_to_ort(t, scale_type=scale_type)}[args.to]
    elif kind in ("hurray", "container"):
        items = _read_hurray(args) if kind == "hurray" else read_container_tensors(source)
        describe = lambda t: (t.name, "hurray", tuple(t.descriptor.shape))  # noqa: E731
        step = {"onnx-light": lambda t: convert.hurray_to_onnx_light(t.descriptor, t.buffers),
                "ort": lambda t: convert.hurray_to_ort(t.descriptor, t.buffers, scale_type=scale_type)}[args.to]
    else:
        model = _read_model(source)
        items = list(model.graph.encoded_initializer) + list(model.graph.initializer)
        describe = _describe_initializer
        step = lambda v: convert.initializer_to_hurray(v, model)  # noqa: E731
    if kind == "gguf" and args.to == "hurray" and target.suffix != ".bin":
        return _stream_hurray(target, items, describe, step, args)
    rows, results = _convert_each(items, describe, step)
    if not results:
        _report(rows, None, args)
        return INVALID
    written = []

    def write(stage: Staging) -> None:
        if args.to == "hurray":
            written.append(write_hurray(target, [NamedTensor(n, *t) for n, t in results], stage))
            return
        if args.to == "ort":
            from hurray_decl.convert.ort import matmul_nbits_model

            stage.write(target, _model_bytes(matmul_nbits_model(results), check=False))
        else:
            stage.write(target, _model_bytes(convert.onnx_light_model(results), check=True))
        written.append(str(target))

    _commit(write)
    _report(rows, written[0], args)
    return OK


def _describe_initializer(value: Any) -> tuple[str, str, tuple[int, ...]]:
    from hurray_decl.onnx_light import EncodedValueProto

    if isinstance(value, EncodedValueProto):
        dims = value.logical_type.tensor_type.shape.dim
        return value.name, value.struct_type.name.rsplit("/", 1)[-1] or "encoded", tuple(d.dim_value for d in dims)
    return value.name, f"TensorProto:{value.data_type}", tuple(value.dims)


def cmd_quantize(args: argparse.Namespace) -> int:
    import numpy as np

    source = Path(args.source)
    if not source.is_file():
        raise CommandError(FILE_ERROR, f"no such file: {source}")
    from hurray_decl.errors import HurrayDeclError
    from hurray_decl.hurray.quantization import scheme

    try:
        scheme(args.scheme)
    except HurrayDeclError as err:
        raise CommandError(USAGE, f"--scheme: {err.detail} ({err.expected})") from None
    target = _output(args.output)
    try:
        array = np.load(source, mmap_mode="r", allow_pickle=False)
    except (ValueError, EOFError) as err:
        raise CommandError(INVALID, f"invalid input: {source} is not a .npy array ({err})") from None
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "fiu":
        raise CommandError(INVALID, f"invalid input: {source} holds {getattr(array, 'dtype', 'no array')}, not real "
                           "numbers")
    from hurray_decl.hurray.numerics import quantize

    descriptor, buffers = quantize(array, args.scheme, axis=args.axis, block_size=args.block_size,
                                   storage=args.storage, symmetric=not args.asymmetric, scale_type=args.scale_type)
    written = []
    _commit(lambda stage: written.append(
        write_hurray(target, [NamedTensor(args.name or source.stem, descriptor, buffers)], stage)))
    print(f"quantized {list(array.shape)} {array.dtype} with {args.scheme}; wrote {written[0]}")
    return OK


def register(subparsers: Any) -> None:
    """Add ``quantize`` and ``convert`` to the ``hurray-decl`` sub-command parser."""
    quantize = subparsers.add_parser(
        "quantize", help="quantize a .npy array into a Hurray tensor",
        description="Quantize a float .npy array with a Hurray scheme. -o NAME.bin writes the descriptor and "
                    "NAME.buf0.bin, NAME.buf1.bin ...; -o FOLDER a folder with manifest.json; -o NAME.hrry a "
                    "container. Exit 0 done, 1 invalid input, 2 usage error, 3 file error.")
    quantize.add_argument("source", metavar="INPUT.npy", help="the array to quantize")
    quantize.add_argument("--scheme", required=True,
                          help="a registered scheme, e.g. per_block_affine (hurray-decl schemes lists them)")
    quantize.add_argument("-o", "--output", required=True, help="NAME.bin, FOLDER or NAME.hrry")
    quantize.add_argument("--axis", type=int, help="the quantized axis (per-channel, per-block; default per scheme)")
    quantize.add_argument("--block-size", type=int, help="elements per block (block schemes)")
    quantize.add_argument("--storage", help="the storage type, e.g. int8, uint4 (default per scheme)")
    quantize.add_argument("--asymmetric", action="store_true", help="store zero points (affine schemes)")
    quantize.add_argument("--scale-type", choices=SCALE_TYPES, default="float32", help="per-block scale type")
    quantize.add_argument("--name", help="the tensor's name in a folder or container (default: the file's stem)")
    quantize.set_defaults(run=_guarded(cmd_quantize))

    convert = subparsers.add_parser(
        "convert", help="convert GGUF, Hurray and onnx-light tensors between the formats, exactly",
        description="Convert every tensor of SOURCE that has an exact form in the target and list the others with "
                    "the reason. SOURCE is a .gguf file, a Hurray descriptor (with --buffer for each buffer) or an "
                    "ONNX model holding onnx-light values. --to hurray writes NAME.bin, a FOLDER or NAME.hrry; "
                    "--to onnx-light an ONNX model of onnx-light encoded initializers; --to ort an ONNX model of "
                    "com.microsoft MatMulNBits nodes (input NAME.A, output NAME.Y = NAME.A @ W^T). Exit 0 written, "
                    "1 invalid input or nothing convertible, 2 usage error, 3 file error.")
    convert.add_argument("source", metavar="SOURCE", help="a .gguf file, a Hurray descriptor or an ONNX model")
    convert.add_argument("-o", "--output", required=True, help="the output file or folder")
    convert.add_argument("--to", choices=TARGETS, default="hurray", help="the target format (default: hurray)")
    convert.add_argument("--buffer", action="append", metavar="FILE",
                         help="a buffer of a Hurray descriptor SOURCE, in order; repeat for each")
    convert.add_argument("--name", help="the tensor's name when SOURCE is one Hurray descriptor")
    convert.add_argument("--scale-type", choices=SCALE_TYPES, default="float32",
                         help="the MatMulNBits matrix and scale type for --to ort (default: float32, exact for "
                              "float16 scales)")
    convert.add_argument("--json", action="store_true", help="print the report as JSON")
    convert.set_defaults(run=_guarded(cmd_convert))
