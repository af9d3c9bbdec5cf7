"""``bench``: dequantization (or quantization) time as ratios to baselines measured in the same run."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hurray_decl.cli.common import OK, UsageError, integer_at_least

BLOCK = 32
"""The benchmark's block size: --size must be a multiple of it."""
SIZE = 4096
"""The default matrix size of the dequantize and window benches."""
QUANTIZE_SIZE = 2048
"""The default matrix size of ``--quantize``."""
CONVERT_SIZE = 256
"""The default size of ``--convert``'s generated GGUF model, in MiB."""


def cmd_bench(args: argparse.Namespace) -> int:
    repeat = args.repeat if args.repeat is not None else 1 if args.convert else 5
    if args.convert:
        if args.threads is not None:
            raise UsageError("argument --threads: --convert runs each command in a process of its own")
        from hurray_decl.convert import bench as convert_bench

        size = args.size if args.size is not None else CONVERT_SIZE
        convert_bench.run(size=size << 20, repeat=repeat, out=sys.stdout)
        return OK
    if args.parse:
        from hurray_decl.hurray import parse_bench

        parse_bench.run(repeat=repeat, out=sys.stdout)
        return OK
    if args.startup:
        from hurray_decl.hurray import startup_bench

        startup_bench.run(pairs=4 * repeat + 1, out=sys.stdout)
        return OK
    if args.open:
        from hurray_decl.hurray import open_bench

        open_bench.run(counts=args.counts or open_bench.COUNTS, repeat=repeat, out=sys.stdout)
        return OK
    if args.kv:
        from hurray_decl.convert import kv_bench

        kv_bench.run(repeat=repeat, out=sys.stdout)
        return OK
    if args.save:
        from hurray_decl.hurray import save_bench

        save_bench.run(repeat=repeat, out=sys.stdout)
        return OK
    if args.onnx_light:
        from hurray_decl.onnx_light import bench as onnx_light_bench

        onnx_light_bench.run(repeat=repeat, out=sys.stdout)
        return OK
    size = args.size if args.size is not None else QUANTIZE_SIZE if args.quantize else SIZE
    if size % BLOCK:
        raise UsageError(f"argument --size: {size} is not a multiple of the block size {BLOCK}")
    from hurray_decl.hurray import bench

    if args.quantize:
        bench.quantize_run(size=size, repeat=repeat, threads=args.threads or 1, out=sys.stdout)
        return OK
    if args.window:
        bench.window_run(size=size, repeat=repeat, out=sys.stdout)
        return OK

    bench.run(size=size, repeat=repeat, threads=args.threads, out=sys.stdout)
    return OK


def register(sub: Any) -> None:
    command = sub.add_parser("bench",
                             help="time dequantization, quantization, parsing or onnx-light as ratios to baselines",
                             description="Time dequantization of a square matrix for every scheme and layout "
                                         "(row-major, column-major, tiled) as ratios to np.copyto into a "
                                         "preallocated array, to gguf's nearest type and to row-major, "
                                         "single-threaded and with --threads; "
                                         "--parse times the descriptor reader, writer and quantization decoder against "
                                         "the Kaitai-generated readers; --onnx-light times onnx-light plan, quantize, "
                                         "dequantize and ORT export on 16M elements; --quantize times quantize "
                                         "of a 2048x2048 matrix per scheme against gguf.quants.quantize of the "
                                         "nearest type and np.copyto; --startup times hurray-decl validate against "
                                         "python -c 'import numpy'; --open times opening a .hrry file against "
                                         "safetensors; --save times hd.save against pyhurray and safetensors; "
                                         "--kv times metadata-heavy GGUF and safetensors files; --convert times "
                                         "every convert direction of a generated GGUF model (peak memory too) "
                                         "against cp and gguf-py's read + dequantize. All ratios come from one run.")
    command.add_argument("--size", type=integer_at_least(BLOCK), default=None,
                         help=f"the square matrix size, a multiple of {BLOCK} (default: {SIZE}; "
                              f"{QUANTIZE_SIZE} with --quantize); with --convert the model's size in MiB "
                              f"(default: {CONVERT_SIZE})")
    command.add_argument("--repeat", type=integer_at_least(1), default=None,
                         help="runs per measurement, best kept (default: 5; 1 with --convert)")
    command.add_argument("--threads", type=integer_at_least(1), default=None,
                         help="dequantization threads (default: the cores; 1 with --quantize)")
    which = command.add_mutually_exclusive_group()
    which.add_argument("--parse", action="store_true", help="parse speed against the Kaitai readers")
    which.add_argument("--onnx-light", action="store_true", help="onnx-light speed (16M elements, int4, block 32)")
    which.add_argument("--quantize", action="store_true", help="quantize speed against gguf.quants.quantize "
                       "(Q4_0, Q8_0, Q4_1, MXFP4) and np.copyto, single-threaded")
    which.add_argument("--startup", action="store_true", help="validate's start-up against python -c 'import "
                       "numpy', 4 x --repeat + 1 paired runs")
    which.add_argument("--open", action="store_true", help="open + first tensor and load_kv of a .hrry file of "
                       "10 to 100,000 small tensors against safetensors' safe_open + get_tensor and metadata()")
    which.add_argument("--save", action="store_true", help="save of 64 MiB in 8 float32 tensors against pyhurray's "
                       "save and safetensors' save_file")
    which.add_argument("--kv", action="store_true", help="ls, convert and load_kv of GGUF files of 262,144 "
                       "tokens, 1M strings and 200k KV entries against gguf-py's GGUFReader, and convert of "
                       "300k empty safetensors tensors against load_file, each in a fresh process")
    which.add_argument("--convert", action="store_true", help="every convert direction of a generated GGUF "
                       "model (Q4_0, Q8_0, Q4_K, Q6_K, F16, F32) against cp and gguf-py's read + dequantize, with "
                       "each command's peak memory")
    which.add_argument("--window", action="store_true", help="a 1/64 window of a per-block int4 tensor in a file "
                       "against the whole tensor")
    command.add_argument("--counts", type=integer_at_least(1), nargs="+", default=None, metavar="N",
                         help="with --open: the tensor counts (default: 10 1000 10000 100000)")
    command.set_defaults(run=cmd_bench)
