"""``bench``: dequantization time as ratios to baselines measured in the same run."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import OK, UsageError, integer_at_least

BLOCK = 32
"""The benchmark's block size: --size must be a multiple of it."""


def cmd_bench(args: argparse.Namespace) -> int:
    if args.size % BLOCK:
        raise UsageError(f"argument --size: {args.size} is not a multiple of the block size {BLOCK}")
    from .. import bench

    bench.run(size=args.size, repeat=args.repeat, threads=args.threads, out=sys.stdout)
    return OK


def register(sub: Any) -> None:
    command = sub.add_parser("bench", help="time dequantization against a NumPy copy and gguf's Q4_0 dequantize",
                             description="Time dequantization of a square per-block int4 matrix against a NumPy copy "
                                         "and (when the gguf package is installed) gguf's Q4_0 dequantize, as ratios "
                                         "measured in the same run.")
    command.add_argument("--size", type=integer_at_least(BLOCK), default=4096,
                         help=f"the square matrix size, a multiple of {BLOCK} (default: 4096)")
    command.add_argument("--repeat", type=integer_at_least(1), default=5,
                         help="runs per measurement, best kept (default: 5)")
    command.add_argument("--threads", type=integer_at_least(1), default=None,
                         help="dequantization threads (default: the cores)")
    command.set_defaults(run=cmd_bench)
