"""The conversion command ``convert``: one handler for every kind of source, which picks the
reader of the source's kind and the writer of ``--to`` from the table of
:mod:`hurray_decl.cli.conversions` and runs them (the pairs that table derives from what each
writer accepts; the safetensors sides are :mod:`hurray_decl.cli.safetensors_sides`').

Exit status: 0 done, 1 invalid input (the rule code is printed) or a tensor that does not
convert, 2 usage error, 3 file or environment error, 130 interrupted
(:mod:`hurray_decl.cli.common`). Failures print one line on stderr, never a traceback
(:func:`hurray_decl.cli.common.guarded`), and leave no file behind: every output is written
under a temporary name in its target folder and renamed into place once everything has been
converted and checked (:mod:`hurray_decl.cli.writers`).
"""

from __future__ import annotations

import argparse
from typing import Any

from hurray_decl.cli.common import SCALE_TYPES, InvalidInput, UsageError, byte_count, guarded
from hurray_decl.cli.conversions import PAIRS, READERS, SAFETENSORS, WRITERS, convert
from hurray_decl.cli.detection import handles
from hurray_decl.cli.kinds import Kind, Target
from hurray_decl.cli.safetensors_sides import split_only_to_sharded

TARGETS = tuple(Target)
READS = ("a GGUF file, a .hrry container, a Hurray stream or descriptor, an ONNX model of onnx-light values or a "
         "safetensors file")


def cmd_convert(args: argparse.Namespace) -> int:
    """``convert`` of a source whose kind :func:`hurray_decl.cli.detection.dispatch` detected: a
    writer of its own (``--to safetensors``), or a (reader, writer) pair of the table."""
    writer = WRITERS[args.to]
    if writer.run is not None:
        return writer.run(args)
    split_only_to_sharded(args)
    with guarded() as outcome:
        outcome.status = convert_pair(args)
    return outcome.status


def convert_pair(args: argparse.Namespace) -> int:
    """The source's reader and the target's writer, the options checked against both, then down
    to :func:`hurray_decl.cli.conversions.convert`."""
    found = args.detected
    if found.reason == "fallback":
        raise InvalidInput(f"invalid input: {args.input} is none of the kinds convert reads ({READS}) by its first "
                           "bytes")
    kind = found.kind
    pairs = PAIRS if kind == Kind.STREAM else {pair for pair in PAIRS if pair[0] != Kind.STREAM}
    if (kind, args.to) not in pairs:
        raise UsageError(f"no conversion from {kind} to {args.to}; converted: "
                         + ", ".join(f"{a} -> {b}" for a, b in sorted(pairs)))
    reader, writer = READERS[kind], WRITERS[args.to]
    if args.dequantize and not reader.dequantizes:
        raise UsageError("--dequantize reads GGUF files and Hurray containers, streams and descriptors")
    if args.dequantize and not writer.dequantized:
        raise UsageError(f"--dequantize writes --to hurray, safetensors or npz, not --to {args.to}")
    if args.to == Target.NPZ and args.dtype == "bfloat16":
        raise UsageError("a .npz has no bfloat16 (numpy.load cannot read it): --dtype float32 or float16")
    if args.dtype and not args.dequantize:
        raise UsageError("--dtype is the type of dequantized values: give --dequantize too")
    return convert(reader, writer, args)


def register(subparsers: Any) -> None:
    """Add ``convert`` to the ``hurray-decl`` sub-command parser (``quantize`` is in :mod:`.models`)."""
    command = subparsers.add_parser(
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
    command.add_argument("input", metavar="SOURCE", help="a .gguf file, a .hrry container, a Hurray stream or "
                         "descriptor, an ONNX model or a safetensors file (or - for standard input)")
    command.add_argument("-o", "--output", required=True, help="the output file or folder")
    command.add_argument("--to", choices=TARGETS, default=Target.HURRAY, help="the target format (default: hurray)")
    command.add_argument("--buffer", action="append", metavar="FILE",
                         help="a buffer of a Hurray descriptor SOURCE, in order; repeat for each")
    command.add_argument("--name", help="the tensor's name when SOURCE is one Hurray descriptor")
    command.add_argument("--scale-type", choices=SCALE_TYPES, default=None,
                         help="the MatMulNBits matrix and scale type for --to ort (default: float32, exact for "
                              "float16 scales)")
    command.add_argument("--partial", action="store_true",
                         help="write the tensors that convert even when others do not (the output's KV, the "
                              "summary and the --json report name the missing ones); without it a tensor that "
                              "does not convert means nothing is written, exit 1")
    command.add_argument("--private-schemes", action="store_true",
                         help="--to hurray: write GGUF's K-quants (Q2_K .. Q6_K) in the project's private scheme "
                              "ggml_super_block (0xF0), exactly; other readers do not know it (HQ-EXT-04)")
    command.add_argument("--dequantize", action="store_true",
                         help="write every quantized tensor's values, unquantized (--to hurray or --to safetensors; "
                              "from GGUF: the values gguf computes, bit for bit); plain tensors keep their type")
    command.add_argument("--dtype", choices=SCALE_TYPES,
                         help="the type of dequantized values (default float32; float16 and bfloat16 round to "
                              "nearest, ties to even)")
    command.add_argument("--split-max-size", type=byte_count, metavar="SIZE",
                         help="--to safetensors or gguf: shards of at most SIZE bytes of tensor data (N, NK, NM, NG: "
                              "powers of 1000), named NAME-00001-of-0000N.safetensors with "
                              "NAME.safetensors.index.json, or NAME-00001-of-0000N.gguf (GGUFWriter's splits)")
    command.add_argument("--json", action="store_true", help="print the report as JSON")
    command.set_defaults(check=check_options)
    handles(subparsers, "convert", {**dict.fromkeys(READERS, cmd_convert), Kind.SAFETENSORS: SAFETENSORS})


def check_options(args: argparse.Namespace) -> None:
    """The options of ``convert`` that apply to one target only, refused for the others."""
    if args.scale_type is not None and args.to != Target.ORT:
        raise UsageError(f"argument --scale-type: applies to --to ort only (the MatMulNBits matrix and scale "
                         f"type), not --to {args.to}")
