"""The safetensors sides of ``convert``: a safetensors source (plain tensors and GPTQ/AWQ
checkpoints, :mod:`hurray_decl.convert.checkpoints`) to Hurray, onnx-light or MatMulNBits nodes, and
``--to safetensors`` of a ``.hrry`` container or, dequantized, of a GGUF file (one file, or shards
with ``--split-max-size``). Each tensor is a :class:`~hurray_decl.cli.report.Row` of the report;
the outputs are :mod:`hurray_decl.cli.writers`'.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hurray_decl.cli.common import OK, SCALE_TYPES, InvalidInput, UsageError, progress
from hurray_decl.cli.kinds import Kind, Target
from hurray_decl.cli.report import Row, report
from hurray_decl.cli.writers import HurraySink, write_model, write_safetensors_streamed, write_shards


def split_only_to_sharded(args: argparse.Namespace) -> None:
    """``--split-max-size`` applies to the targets that shard only."""
    if getattr(args, "split_max_size", None) and args.to not in (Target.SAFETENSORS, Target.GGUF):
        raise UsageError("argument --split-max-size: writes sharded safetensors or GGUF splits (--to safetensors, "
                         "--to gguf)")


def convert_safetensors(args: argparse.Namespace) -> int:
    """``convert`` of a safetensors source (to hurray, onnx-light, ort) or of a ``.hrry`` to
    safetensors, the input's kind as :func:`hurray_decl.cli.detection.dispatch` detected it."""
    from hurray_decl.cli.detection import CONTAINER, GGUF, SAFETENSORS
    from hurray_decl.cli.inputs import regular_file
    from hurray_decl.cli.kinds import title

    found = args.detected
    if args.dtype and not args.dequantize:
        raise UsageError("--dtype is the type of dequantized values: give --dequantize too")
    split_only_to_sharded(args)
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
    refused: list[Row] = []  # the rows of the tensors refused (failures), in order
    target = Path(args.output).expanduser().absolute()
    sink = HurraySink(target)

    def convert(item: Any) -> tuple[str, Any] | None:
        """(method, converted) of one item, None for a plain tensor the target leaves out."""
        import numpy as np

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
                refused.append(Row(item.name, element, item.shape, "skipped", code=err.code, reason=err.detail))
                rows.append(refused[-1])
                continue
            if done is None:
                rows.append(Row(item.name, element, item.shape, "skipped", code="OL-ORT-07",
                                reason="a plain tensor: MatMulNBits nodes hold packed weights only"))
                continue
            rows.append(Row(item.name, element, item.shape, "converted", done[0]))
            add(item.name, done[1])

    def stop_unless_whole() -> None:
        """Nothing is written when nothing converts, nor (without ``--partial``) when a tensor is
        refused: the staged output is dropped and the rows say which tensors and why."""
        if failures and not args.partial and any(r.status == "converted" for r in rows):
            report(rows, source, args.to, None, args.json)
            raise InvalidInput(f"invalid input: {len(failures)} tensor(s) of {source} did not convert "
                               f"({', '.join(r.name for r in refused[:8])}); nothing written "
                               "(--partial writes the others)")
        if not any(r.status == "converted" for r in rows):
            report(rows, source, args.to, None, args.json)
            if failures:
                raise failures[0]
            raise InvalidInput(f"invalid input: nothing in {source} converts to {args.to}")

    if args.to == Target.HURRAY:
        from hurray_decl.convert.metadata import missing_kv
        from hurray_decl.convert.safetensors import metadata_to_kv

        with sink.open():
            each(lambda name, value: sink.add(name, *value))
            stop_unless_whole()
            missing = [(r.code or "", r.source, r.name) for r in refused]
            written = sink.finish(metadata_to_kv(checkpoint.metadata) | (missing_kv(missing) if missing else {}))
    else:
        each(lambda name, value: results.append((name, value)))
        stop_unless_whole()
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
    from hurray_decl.convert.safetensors import from_hurray, kv_to_metadata
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
        written = write_shards(target, arrays, kv_to_metadata(opened.kv), getattr(args, "split_max_size", None))
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

    written = write_safetensors_streamed(target, planned, arrays())
    report(rows, source, Kind.SAFETENSORS, written, args.json)
    return OK
