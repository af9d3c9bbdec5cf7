"""Whole models on the command line: ``quantize``, and the safetensors sides of ``convert``.

``quantize`` takes a ``.npy`` array (quantized whatever its size), or a ``.npz`` archive, a
safetensors file or an ONNX model, whose float tensors of at least ``--min-elements`` elements
(or the ``--tensor`` ones) are quantized one at a time (:mod:`hurray_decl.convert.model_quantize`)
into ``.hrry`` (``--scheme``), onnx-light (``--profile``) or MatMulNBits nodes (``--to ort``),
the others kept as they are; a line per tensor reports its error against the source (``--json``).

:func:`convert_safetensors` is what ``convert`` runs for a safetensors source (plain tensors and
GPTQ/AWQ checkpoints, :mod:`hurray_decl.convert.checkpoints`) and for ``--to safetensors``.

Every output is written under a temporary name and renamed when complete (``.hrry`` files are
written tensor by tensor, so memory holds one tensor at a time; an ONNX model is built whole, as
protobuf needs); a failed command leaves nothing behind. Progress shows on a terminal only.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hurray_decl.cli.common import INVALID, OK, CommandError, FileProblem, UsageError
from hurray_decl.cli.kinds import Kind, Target

TARGETS = (Target.HURRAY, Target.ONNX_LIGHT, Target.ORT)
SCALE_TYPES = ("float32", "float16", "bfloat16")
MIN_ELEMENTS = 1024
"""Float tensors smaller than this are kept as they are unless named with ``--tensor``."""


# --- the report --------------------------------------------------------------------------------------

@dataclass
class Row:
    """One tensor of the report: quantized (with its errors), kept unquantized, or skipped (why)."""

    name: str
    element: str
    shape: tuple[int, ...]
    status: str  # "quantized", "converted", "kept" or "skipped"
    method: str = ""
    error: Any = None  # model_quantize.ErrorReport
    byte_size: int = 0
    code: str | None = None
    reason: str = ""

    def text(self) -> str:
        head = f"{self.status:9}  {self.name}  {self.element} {list(self.shape)}"
        if self.status == "skipped":
            return f"{head}  {self.code}: {self.reason}"
        if self.error is None:
            return f"{head}  {self.method}".rstrip()
        e = self.error
        snr = "exact" if e.snr_db is None else f"{e.snr_db:.1f} dB"
        return (f"{head}  {self.method}  max|err| {e.max_abs_error:.4g}  rmse {e.rmse:.4g}  snr {snr}  "
                f"{self.byte_size} B")

    def record(self) -> dict[str, Any]:
        from hurray_decl.cli.outputs import tensor_record

        e = self.error
        errors = (None, None, None) if e is None else (e.max_abs_error, e.rmse, _json_number(e.snr_db))
        return tensor_record(self.name, self.element, self.shape, self.status, method=self.method,
                             byte_size=self.byte_size, errors=errors, code=self.code, reason=self.reason)


def _json_number(value: float | None) -> float | str | None:
    """A float for JSON: the SNR of a zero source with an error is minus infinity, written as text."""
    return value if value is None or math.isfinite(value) else str(value)


def report(rows: Sequence[Row], source: Path, target: str, written: str | None, as_json: bool) -> None:
    counts = {s: sum(r.status == s for r in rows) for s in ("quantized", "converted", "kept", "skipped")}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n or s == "skipped")
    if as_json:
        print(json.dumps({"source": str(source), "to": target, "output": written,
                          "tensors": [r.record() for r in rows]}, indent=2))
        return
    for row in rows:
        print(row.text())
    print(f"{summary}; wrote {written}" if written else f"{summary}; nothing written")


def progress(items: Sequence[Any], label: str) -> Iterable[Any]:
    """Items with a progress bar on a terminal (stderr), silent otherwise."""
    from tqdm import tqdm

    return tqdm(items, desc=label, unit="tensor", file=sys.stderr, leave=False,
                disable=len(items) < 2 or not sys.stderr.isatty())


# --- outputs -----------------------------------------------------------------------------------------

class HurraySink:
    """Hurray tensors to ``-o``: a ``.hrry`` container written tensor by tensor into a temporary
    file (renamed by :meth:`finish`), or ``NAME.bin`` / a folder through ``convert``'s writer."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.count = 0
        self.held: list[Any] = []
        self._writer: Any = None
        self._stream: Any = None
        self._temporary: Path | None = None

    @contextmanager
    def open(self) -> Iterator[HurraySink]:
        from hurray_decl.cli import outputs

        if self.target.suffix != ".hrry":
            yield self
            return
        from hurray_decl.hurray.container.writer import ContainerWriter

        with outputs.atomic(self.target) as temporary, temporary.open("wb") as stream:
            self._stream, self._temporary = stream, temporary
            self._writer = ContainerWriter(stream)
            yield self

    def add(self, name: str, descriptor: Any, buffers: Sequence[Any]) -> None:
        self.count += 1
        if self._writer is not None:
            self._writer.add(name, descriptor, buffers)
        else:
            from hurray_decl.cli.convert import NamedTensor

            self.held.append(NamedTensor(name, descriptor, list(buffers)))

    def finish(self, kv: dict[str, Any]) -> str:
        if self._writer is not None:
            self._writer.finish(kv or None)
            return f"the container {self.target}"
        from hurray_decl.cli.convert import Staging, write_hurray

        stage = Staging()
        try:
            where = write_hurray(self.target, self.held, stage)
            stage.commit()
        finally:
            stage.discard()
        return where


def write_model(target: Path, model: Any, *, check: bool = False) -> str:
    """An ONNX model to ``target``, its onnx-light values checked first when ``check``."""
    from hurray_decl.cli import outputs

    if check:
        from hurray_decl.onnx_light import check_model_values

        check_model_values(model)
    try:
        data = model.SerializeToString()
    except ValueError as err:  # protobuf refuses messages of 2 GiB and more
        raise FileProblem(f"the ONNX model is too large for one protobuf message ({err})") from None
    outputs.write_bytes(target, data)
    return str(target)


class InvalidInput(CommandError):
    """An input that is not what the command reads (exit 1)."""

    status = INVALID


# --- quantize ----------------------------------------------------------------------------------------

def _options(args: argparse.Namespace) -> Any:
    from hurray_decl.convert.model_quantize import QuantizeOptions
    from hurray_decl.errors import HurrayDeclError
    from hurray_decl.hurray.quantization import scheme

    try:
        scheme(args.scheme)
    except HurrayDeclError as err:
        raise UsageError(f"--scheme: {err.detail} ({err.expected})") from None
    if args.profile is not None:
        from hurray_decl.onnx_light import parse_quantization_format

        try:
            fmt = parse_quantization_format(args.profile)
        except HurrayDeclError as err:
            raise UsageError(f"--profile: {err.detail}") from None
        if not fmt.portable:
            raise UsageError(f"--profile: {args.profile} is an ORT layout; use --to ort")
    if args.to == "ort" and args.scheme != "per_block_affine":
        raise UsageError("--to ort quantizes with --scheme per_block_affine (MatMulNBits codes)")
    return QuantizeOptions(args.to, args.scheme, args.profile or "int4", args.axis, args.block_size, args.storage,
                           not args.asymmetric, args.scale_type)


def _source(path: Path, name: str | None) -> Any:
    """A .npy array as a one-tensor model, or any other model through ``read_model``."""
    import numpy as np

    from hurray_decl.convert.model_quantize import ModelSource, ModelTensor, read_model
    from hurray_decl.errors import ARGUMENT, HurrayDeclError
    from hurray_decl.hurray.tables import storage

    with path.open("rb") as handle:
        head = handle.read(8)
    if head.startswith(b"\x93NUMPY"):
        try:
            array = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, EOFError) as err:
            raise InvalidInput(f"invalid input: {path} is not a .npy array ({err})") from None
        if array.dtype.kind not in "fiu" and storage.element_of_dtype(array.dtype) != "bfloat16":
            raise InvalidInput(f"invalid input: {path} holds {array.dtype}, not real numbers")
        element = storage.element_of_dtype(array.dtype) or str(array.dtype)
        return ModelSource("npy", [ModelTensor(name or path.stem, element, tuple(array.shape), lambda: array)])
    try:
        return read_model(path)
    except HurrayDeclError as err:
        if err.code == ARGUMENT:
            raise InvalidInput(f"invalid input: {err.detail}") from None
        raise


def check_quantize(args: argparse.Namespace) -> None:
    """The options of ``quantize`` that the chosen scheme or target does not take, refused (exit 2)
    before any work: ``--axis`` and ``--block-size`` of a scheme without them (its quantizer's
    defaults list what it takes), a ``--storage`` the scheme does not store, and ``--storage`` or
    ``--scheme``-only options for ``--to onnx-light`` (whose profile decides)."""
    from hurray_decl.errors import HurrayDeclError
    from hurray_decl.hurray.quantization import scheme

    if args.to == Target.ONNX_LIGHT:
        if args.storage is not None:
            raise UsageError("argument --storage: does not apply to --to onnx-light (its --profile sets the storage)")
        return
    try:
        row = scheme(args.scheme)
    except HurrayDeclError as err:
        raise UsageError(f"argument --scheme: {err.detail} ({err.expected})") from None
    for dest, flag in (("axis", "--axis"), ("block_size", "--block-size")):
        if getattr(args, dest) is not None and dest not in row.quantize_defaults:
            takes = [f"--{key.replace('_', '-')}" for key in ("axis", "block_size") if key in row.quantize_defaults]
            raise UsageError(f"argument {flag}: does not apply to --scheme {row.name} (it takes "
                             f"{' and '.join(takes) if takes else 'neither --axis nor --block-size'})")
    if args.storage is not None and args.storage not in row.storage_types:
        raise UsageError(f"argument --storage: {row.title} does not store {args.storage!r} (it stores "
                         f"{', '.join(row.storage_types)})")


def cmd_quantize(args: argparse.Namespace) -> int:
    source_path = Path(args.source)
    if not source_path.is_file():
        raise FileProblem(f"no such file: {source_path}")
    options = _options(args)
    from hurray_decl.cli import outputs

    folder = args.to == Target.HURRAY and Path(args.output).suffix not in (".hrry", ".bin")  # checked by its writer
    target = Path(args.output).expanduser().absolute() if folder else outputs.target(args.output)
    source = _source(source_path, args.name)
    try:
        rows, written = _quantize(source, options, target, args)
    finally:
        source.close()
    report(rows, source_path, args.to, written, args.json)
    return OK


def _quantize(source: Any, options: Any, target: Path, args: argparse.Namespace) -> tuple[list[Row], str]:
    from hurray_decl.convert import model_quantize as mq
    from hurray_decl.errors import HurrayDeclError

    tensors = source.tensors
    chosen = {t.name for t in tensors} if source.kind == "npy" else mq.select(tensors, args.tensor,
                                                                              args.min_elements)
    if args.to == "ort" and source.kind == "onnx" and not args.tensor:
        chosen = {n for n in chosen if any(t.name == n and t.matmul_weight for t in tensors)}
    rows: list[Row] = []
    results: list[tuple[str, Any]] = []  # ONNX targets: the values, held for the model
    failures: list[HurrayDeclError] = []
    sink = HurraySink(target)

    def each(add: Callable[[Any, Any], None]) -> None:
        for tensor in progress(tensors, "quantize"):
            quantized = None
            try:
                if tensor.name in chosen:
                    quantized = mq.quantize_tensor(tensor, options)
            except HurrayDeclError as err:
                failures.append(err)
                rows.append(Row(tensor.name, tensor.element, tensor.shape, "skipped", code=err.code,
                                reason=f"kept unquantized: {err.detail}"))
            else:
                rows.append(Row(tensor.name, tensor.element, tensor.shape, "kept") if quantized is None else
                            Row(tensor.name, tensor.element, tensor.shape, "quantized", quantized.method,
                                quantized.error, quantized.byte_size))
            try:
                add(tensor, None if quantized is None else quantized.value)
            except HurrayDeclError as err:  # a kept tensor the target cannot hold
                rows[-1] = Row(tensor.name, tensor.element, tensor.shape, "skipped", code=err.code,
                               reason=f"left out: {err.detail}")

    def stop_if_empty() -> None:
        if not any(r.status == "quantized" for r in rows):
            report(rows, Path(args.source), args.to, None, args.json)
            if failures:
                raise failures[0]
            raise UsageError("no tensor was chosen to quantize (see --min-elements and --tensor)")

    if args.to == Target.HURRAY:
        from hurray_decl.hurray.values import Tensor

        def add_hurray(tensor: Any, value: Any) -> None:
            if value is None:
                plain = Tensor.from_numpy(tensor.load())
                sink.add(tensor.name, plain.descriptor, plain.buffers)
            else:
                sink.add(tensor.name, *value)

        with sink.open():
            each(add_hurray)
            stop_if_empty()
            written = sink.finish(dict(source.metadata))
        return rows, written

    def add_value(tensor: Any, value: Any) -> None:
        if value is not None:
            results.append((tensor.name, value))
        elif args.to == Target.ONNX_LIGHT and source.kind != "onnx":
            plain = mq.plain_initializer(tensor.name, tensor.load())
            if plain is not None:
                results.append((tensor.name, plain))

    each(add_value)
    stop_if_empty()
    if args.to == "ort":
        quantized = {n: v for n, v in results}
        if source.kind == "onnx":
            model = mq.matmul_nbits_graph(source.model, quantized)
        else:
            from hurray_decl.convert.ort import matmul_nbits_model

            model = matmul_nbits_model(results)
    elif source.kind == "onnx":
        model = mq.encoded_graph(source.model, dict(results))
    else:
        from hurray_decl.convert.tensors import onnx_light_model

        model = onnx_light_model(results)
    return rows, write_model(target, model, check=args.to == Target.ONNX_LIGHT)


# --- convert: safetensors ----------------------------------------------------------------------------

def routed_convert(args: argparse.Namespace, convert_command: Callable[[argparse.Namespace], int]) -> int:
    """``convert --to safetensors`` here, every other target to ``convert_command`` (the handler of
    the input's kind)."""
    if args.to == Target.SAFETENSORS:
        return convert_safetensors(args)
    _split_only_to_sharded(args)
    return convert_command(args)


def _split_only_to_sharded(args: argparse.Namespace) -> None:
    if getattr(args, "split_max_size", None) and args.to not in (Target.SAFETENSORS, Target.GGUF):
        raise UsageError("argument --split-max-size: writes sharded safetensors or GGUF splits (--to safetensors, "
                         "--to gguf)")


def convert_safetensors(args: argparse.Namespace) -> int:
    """``convert`` of a safetensors source (to hurray, onnx-light, ort) or of a ``.hrry`` to
    safetensors, the input's kind as :func:`hurray_decl.cli.detection.detect` decided it."""
    from hurray_decl.cli.detection import CONTAINER, GGUF, SAFETENSORS, detect
    from hurray_decl.cli.inputs import regular_file
    from hurray_decl.cli.kinds import title

    found = detect(args)
    if args.dtype and not args.dequantize:
        raise UsageError("--dtype is the type of dequantized values: give --dequantize too")
    _split_only_to_sharded(args)
    if args.to == Target.SAFETENSORS:
        if found.kind == GGUF and args.dequantize:
            return _gguf_to_safetensors(args, Path(args.output).expanduser().absolute())
        if found.kind == GGUF:
            raise UsageError("a GGUF file goes to safetensors dequantized: give --dequantize (and --dtype)")
        if found.kind != CONTAINER:
            kind = (SAFETENSORS if found.kind == SAFETENSORS else "this input" if found.reason == "fallback"
                    else title(found.kind))
            raise UsageError(f"no conversion from {kind} to safetensors; converted: a .hrry container and a GGUF "
                             "file (--dequantize) -> safetensors")
        from hurray_decl.hurray.quantization import register_project_schemes

        register_project_schemes()  # the project reads its own private schemes
        return _to_safetensors(args, Path(args.output).expanduser().absolute())
    if args.to == Target.NPZ or args.dequantize:
        raise UsageError("a safetensors source converts --to hurray, onnx-light or ort, as it is (no --dequantize)")
    path = regular_file(args)
    if path is None:
        raise UsageError(f"argument SOURCE: a safetensors source is read from a file by its name (its quantization "
                         f"config may be a file beside it), not from {args.input}")
    source = Path(path)
    from hurray_decl.convert.checkpoints import read_checkpoint
    from hurray_decl.errors import ARGUMENT, HurrayDeclError

    try:
        checkpoint = read_checkpoint(source)
    except HurrayDeclError as err:
        if err.code == ARGUMENT:  # a file that is not what it claims, a checkpoint without its config
            raise InvalidInput(f"invalid input: {err.detail}") from None
        raise
    try:
        return _from_checkpoint(checkpoint, source, args)
    finally:
        checkpoint.close()


def _from_checkpoint(checkpoint: Any, source: Path, args: argparse.Namespace) -> int:
    from hurray_decl.convert import model_quantize as mq
    from hurray_decl.errors import HurrayDeclError

    rows: list[Row] = []
    results: list[tuple[str, Any]] = []
    failures: list[HurrayDeclError] = []
    target = Path(args.output).expanduser().absolute()
    sink = HurraySink(target)

    def convert(item: Any) -> tuple[str, Any] | None:
        """(method, converted) of one item, None for a plain tensor the target leaves out."""
        import numpy as np

        if item.kind == "nvfp4":
            from hurray_decl.errors import UnsupportedError

            raise UnsupportedError("HQ-MX-11", "NVFP4 block scales are E4M3 values times a float32 tensor scale; "
                                   "MXFP's are powers of two 2^(e - 127), and no other scheme holds E2M1 codes "
                                   "exactly",
                                   path=item.name, actual="nvfp4 (weight_scale, weight_scale_2)",
                                   expected="MXFP4, NF4 or integer block codes")
        if item.kind in ("mxfp4", "bitsandbytes-nf4"):  # Hurray MXFP / NF4, onnx-light mxfp4 / nf4; no MatMulNBits
            tensor = item.mxfp() if item.kind == "mxfp4" else item.nf4()
            if args.to == Target.HURRAY:
                return f"{type(tensor[0].quantization).__name__} K{tensor[0].quantization.block_size}", tensor
            if args.to == Target.ONNX_LIGHT:
                from hurray_decl.convert.codebook import codebook_to_onnx_light

                return item.kind.split("-")[-1], codebook_to_onnx_light(*tensor)
            from hurray_decl.errors import UnsupportedError

            raise UnsupportedError("OL-ORT-07", "MatMulNBits holds block-affine int codes, not MXFP or NF4",
                                   path=item.name, actual=item.kind, expected="a GPTQ/AWQ/compressed-tensors weight")
        if item.quantized:
            parts = item.parts()
            if args.to == Target.HURRAY:
                from hurray_decl.convert.hurray import from_block_parts

                return f"per_block_affine {parts.storage} K{parts.block_size}", from_block_parts(parts)
            if args.to == "ort":
                from hurray_decl.convert.ort import to_matmul_nbits

                return "MatMulNBits", to_matmul_nbits(parts, scale_type=args.scale_type or SCALE_TYPES[0])
            from hurray_decl.convert.portable import PORTABLE_FORMATS, from_block_parts as portable

            formats = {bits: fmt for fmt, bits in PORTABLE_FORMATS.items()}
            bits = 8 if parts.storage.endswith("8") else 4
            return formats[bits].wire_name, portable(parts, formats[bits], dtype=np.float32)
        if args.to == Target.HURRAY:
            from hurray_decl.convert.safetensors import to_hurray

            plain = to_hurray(item.name, item.array())
            return "plain", (plain.descriptor, plain.buffers)
        if args.to == Target.ONNX_LIGHT:
            value = mq.plain_initializer(item.name, item.array())
            return None if value is None else ("plain", value)
        return None

    def each(add: Callable[[str, Any], None]) -> None:
        for item in progress(checkpoint.items, "convert"):
            element = item.kind
            try:
                done = convert(item)
            except HurrayDeclError as err:
                failures.append(err)
                rows.append(Row(item.name, element, item.shape, "skipped", code=err.code, reason=err.detail))
                continue
            if done is None:
                rows.append(Row(item.name, element, item.shape, "skipped", code="OL-ORT-07",
                                reason="a plain tensor: MatMulNBits nodes hold packed weights only"))
                continue
            rows.append(Row(item.name, element, item.shape, "converted", done[0]))
            add(item.name, done[1])

    def stop_if_empty() -> None:
        if not any(r.status == "converted" for r in rows):
            report(rows, source, args.to, None, args.json)
            if failures:
                raise failures[0]
            raise InvalidInput(f"invalid input: nothing in {source} converts to {args.to}")

    if args.to == Target.HURRAY:
        from hurray_decl.convert.safetensors import metadata_to_kv

        with sink.open():
            each(lambda name, value: sink.add(name, *value))
            stop_if_empty()
            written = sink.finish(metadata_to_kv(checkpoint.metadata))
    else:
        each(lambda name, value: results.append((name, value)))
        stop_if_empty()
        if args.to == "ort":
            from hurray_decl.convert.ort import matmul_nbits_model

            model = matmul_nbits_model(results)
        else:
            from hurray_decl.convert.tensors import onnx_light_model

            model = onnx_light_model(results)
        written = write_model(target, model, check=args.to == Target.ONNX_LIGHT)
    report(rows, source, args.to, written, args.json)
    return OK


def _to_safetensors(args: argparse.Namespace, target: Path) -> int:
    from hurray_decl.cli import outputs
    from hurray_decl.cli.inputs import window_data
    from hurray_decl.convert.safetensors import (
        INDEX_SUFFIX,
        from_hurray,
        index_text,
        kv_to_metadata,
        shard_plan,
        write_safetensors,
    )
    from hurray_decl.errors import HurrayDeclError
    from hurray_decl.hurray.container import open_container
    from hurray_decl.hurray.files import File

    source = Path(args.input)
    rows: list[Row] = []
    arrays: list[tuple[str, Any]] = []
    failures: list[HurrayDeclError] = []
    outputs.target(target)
    with File(str(source), open_container(window_data(args))) as opened:
        for name in progress(list(opened), "convert"):
            tensor = opened[name]
            shape = tuple(tensor.descriptor.shape)
            try:
                arrays.append((name, from_hurray(tensor, args.dtype or "float32" if args.dequantize else None)))
            except HurrayDeclError as err:
                failures.append(err)
                rows.append(Row(name, Target.HURRAY, shape, "skipped", code=err.code, reason=err.detail))
                continue
            rows.append(Row(name, str(arrays[-1][1].dtype), shape, "converted", "plain"))
        if not arrays or (failures and not args.partial):
            report(rows, source, Kind.SAFETENSORS, None, args.json)
            if failures:
                raise failures[0]
            raise InvalidInput(f"invalid input: {source} holds no tensor")
        metadata = kv_to_metadata(opened.kv)
        written = str(target)
        plan = {target.name: [name for name, _ in arrays]}
        stem = target.name[: -len(".safetensors")] if target.name.endswith(".safetensors") else target.name
        if getattr(args, "split_max_size", None):
            plan = shard_plan([(name, values.nbytes) for name, values in arrays], args.split_max_size, stem)
        by_name = dict(arrays)
        del arrays
        with outputs.batch() as files:  # every shard and the index appear once all are written
            for shard, names in plan.items():
                write_safetensors(files.file(target.parent / shard), [(n, by_name[n]) for n in names], metadata)
            if len(plan) > 1:
                index = target.parent / f"{stem}{INDEX_SUFFIX}"
                files.file(index).write_text(index_text(plan, sum(v.nbytes for v in by_name.values())))
                written = f"{index} and {len(plan)} shards"
        del by_name
    report(rows, source, Kind.SAFETENSORS, written, args.json)
    return OK


def _gguf_to_safetensors(args: argparse.Namespace, target: Path) -> int:
    """``convert X.gguf --to safetensors --dequantize``: every tensor's values (quantized ones in
    ``--dtype``, plain ones in their own type), tensor by tensor, straight into the file
    (:func:`hurray_decl.convert.safetensors.write_safetensors_stream`), so memory holds one tensor's
    values at a time. A tensor type nothing here dequantizes is listed, and nothing is written
    unless ``--partial``."""
    from hurray_decl.cli import outputs
    from hurray_decl.cli.inputs import regular_file, window_data
    from hurray_decl.convert.gguf import FLOAT_TYPES, read_gguf_model
    from hurray_decl.convert.safetensors import write_safetensors_stream
    from hurray_decl.convert.tensors import dequantizes, gguf_dequantized

    dtype = args.dtype or "float32"
    source = Path(args.input)
    outputs.target(target)
    path = regular_file(args)
    model = read_gguf_model(path if path is not None else bytes(window_data(args)))
    rows: list[Row] = []
    kept = []
    for tensor in model.tensors:  # the infos only: no tensor data is read here (the data are views of the maps)
        reason = dequantizes(tensor.type_name)
        if reason is None:
            kept.append(tensor)
        else:
            rows.append(Row(tensor.name, tensor.type_name, tensor.shape, "skipped", code=reason.code,
                            reason=reason.detail))
    if not kept or (rows and not args.partial):
        report(rows, source, Kind.SAFETENSORS, None, args.json)
        raise InvalidInput(f"invalid input: {len(rows)} tensor{'s' if len(rows) != 1 else ''} of {source} cannot be "
                           "dequantized; nothing written" + ("" if not kept else " (--partial writes the others)"))
    names = {t.name for t in kept}
    planned = [(t.name, FLOAT_TYPES.get(t.type_name, dtype), t.shape) for t in kept]

    def arrays() -> Iterator[Any]:
        for tensor in progress([t for t in model.tensors if t.name in names], "dequantize"):
            values = gguf_dequantized(tensor, dtype)
            plain = tensor.type_name in FLOAT_TYPES
            rows.append(Row(tensor.name, tensor.type_name, tensor.shape, "converted",
                            "plain" if plain else f"dequantized {dtype}"))
            yield values
            del values

    with outputs.atomic(target) as temporary, open(temporary, "wb") as stream:
        write_safetensors_stream(stream, planned, arrays())
    report(rows, source, Kind.SAFETENSORS, str(target), args.json)
    return OK


# --- the command -------------------------------------------------------------------------------------

def register(subparsers: Any) -> None:
    """Add ``quantize``, and route ``convert``'s safetensors sources and targets here (register after ``convert``)."""
    from hurray_decl.cli.common import integer_at_least

    command = subparsers.add_parser(
        "quantize", help="quantize a .npy array, or the float tensors of a .npz, safetensors or ONNX model",
        description="Quantize a .npy array, or every float tensor of at least --min-elements elements (or each "
                    "--tensor) of a .npz archive, a safetensors file or an ONNX model, one tensor at a time; the "
                    "others are kept as they are. --to hurray (--scheme): -o NAME.hrry, FOLDER or NAME.bin (one "
                    "tensor); --to onnx-light (--profile): an ONNX model of encoded initializers; --to ort: "
                    "MatMulNBits nodes (an ONNX model's MatMul nodes on quantized weights become MatMulNBits). "
                    "A line per tensor reports the max abs error, RMSE and SNR of its dequantized values. Exit 0 "
                    "done, 1 invalid input or nothing quantized, 2 usage error, 3 file error.")
    command.add_argument("source", metavar="INPUT", help="a .npy array, .npz archive, safetensors file or ONNX model")
    command.add_argument("-o", "--output", required=True, help="the output: NAME.hrry, FOLDER, NAME.bin or NAME.onnx")
    command.add_argument("--to", choices=TARGETS, default=Target.HURRAY, help="the target format (default: hurray)")
    command.add_argument("--scheme", default="per_block_affine",
                         help="a Hurray scheme for --to hurray (hurray-decl schemes lists them; default "
                              "per_block_affine, the only one for --to ort)")
    command.add_argument("--profile", help="an onnx-light portable profile for --to onnx-light (hurray-decl "
                                           "profiles lists them; default int4)")
    command.add_argument("--tensor", action="append", metavar="NAME",
                         help="quantize this tensor (repeat for each); default: every float tensor of at least "
                              "--min-elements elements")
    command.add_argument("--min-elements", type=integer_at_least(1), default=MIN_ELEMENTS,
                         help=f"the smallest float tensor quantized by default (default {MIN_ELEMENTS})")
    command.add_argument("--axis", type=int, help="the quantized axis (per-channel, per-block; default per scheme)")
    command.add_argument("--block-size", type=int, help="elements per block (block schemes and profiles)")
    command.add_argument("--storage", help="the storage type, e.g. int8, uint4 (default per scheme)")
    command.add_argument("--asymmetric", action="store_true", help="store zero points (affine schemes)")
    command.add_argument("--scale-type", choices=SCALE_TYPES, default="float32", help="per-block scale type")
    command.add_argument("--name", help="a .npy array's name in the output (default: the file's stem)")
    command.add_argument("--json", action="store_true", help="print the report as JSON")
    command.set_defaults(run=cmd_quantize, check=check_quantize)
    if "convert" in subparsers.choices:  # safetensors sources and targets of convert come here
        from hurray_decl.cli.detection import HANDLERS, SAFETENSORS, handles

        routed: dict[Kind, Callable[[argparse.Namespace], int]] = {
            kind: functools.partial(routed_convert, convert_command=handler)
            for kind, handler in HANDLERS.get("convert", {}).items()}
        handles(subparsers, "convert", {**routed, SAFETENSORS: convert_safetensors})
