"""Whole models on the command line: ``quantize``.

``quantize`` takes a ``.npy`` array (quantized whatever its size), or a ``.npz`` archive, a
safetensors file or an ONNX model, whose float tensors of at least ``--min-elements`` elements
(or the ``--tensor`` ones) are quantized one at a time (:mod:`hurray_decl.convert.model_quantize`)
into ``.hrry`` (``--scheme``), onnx-light (``--profile``) or MatMulNBits nodes (``--to ort``),
the others kept as they are; a line per tensor reports its error against the source (``--json``).

Every output is written under a temporary name and renamed when complete (``.hrry`` files are
written tensor by tensor, so memory holds one tensor at a time; an ONNX model is built whole, as
protobuf needs); a failed command leaves nothing behind. Progress shows on a terminal only.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hurray_decl.cli.common import OK, SCALE_TYPES, FileProblem, InvalidInput, UsageError, progress
from hurray_decl.cli.kinds import Target
from hurray_decl.cli.report import Row, report
from hurray_decl.cli.writers import HurraySink, write_model

TARGETS = (Target.HURRAY, Target.ONNX_LIGHT, Target.ORT)
MIN_ELEMENTS = 1024
"""Float tensors smaller than this are kept as they are unless named with ``--tensor``."""


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


# --- the command -------------------------------------------------------------------------------------

def register(subparsers: Any) -> None:
    """Add ``quantize``."""
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
