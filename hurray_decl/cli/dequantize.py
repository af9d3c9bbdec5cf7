"""``dequantize``: a quantized tensor's float32 values into a ``.npy`` file.

Everything is checked before the output exists: the output path, the descriptor, and every rule
``dequantize`` checks (the scheme, the layout, the shape, the buffer contents). The values are
then written through a memory map into a temporary file beside the target, renamed over it once
complete; a failure leaves nothing behind.
"""

from __future__ import annotations

import argparse
from typing import Any

from hurray_decl.cli import outputs
from hurray_decl.cli.common import OK, UsageError, progress_printer
from hurray_decl.cli.descriptors import read
from hurray_decl.cli.inputs import map_file, window_options


def cmd_dequantize(args: argparse.Namespace) -> int:
    """Refusals are HurrayDeclErrors: main() prints their rule (exit 1), no file having been created."""
    import numpy as np

    from hurray_decl.hurray.numerics import prepare_dequantize
    from hurray_decl.hurray.tensor import read_tensor_descriptor

    if not args.buffers:
        raise UsageError("a Hurray tensor descriptor needs one buffer file per buffer-table entry")
    outputs.target(args.output)
    buffers = [map_file(path, what="BUFFER") for path in args.buffers]
    args.quantization = False
    descriptor = read_tensor_descriptor(read(args).data, permissive=args.permissive)
    prepared = prepare_dequantize(descriptor, buffers)  # every refusal before the output file exists
    with outputs.atomic(args.output) as temporary:
        out = np.lib.format.open_memmap(temporary, mode="w+", dtype=np.float32, shape=tuple(descriptor.shape))
        prepared.run(out, progress=progress_printer("dequantize"))
        out.flush()
        del out
    print(f"wrote float32 {list(descriptor.shape)} to {args.output}")
    return OK


def register(sub: Any) -> None:
    command = sub.add_parser("dequantize", help="dequantize a quantized tensor into a float32 .npy file",
                             description="Dequantize a quantized tensor into a float32 .npy file, written through a "
                                         "memory map, with progress on a terminal. Everything is checked before the "
                                         "file is created. Exit 0 done, 1 invalid (the rule code is printed), "
                                         "3 a file problem.")
    command.add_argument("input", metavar="DESCRIPTOR",
                         help="the tensor descriptor: a file, - for standard input, or hex bytes")
    command.add_argument("buffers", nargs="*", metavar="BUFFER", help="one file per buffer-table entry, in order "
                         "(none for a .hrry container or an onnx-light input)")
    command.add_argument("-o", "--output", required=True, help="the .npy file to write")
    command.add_argument("--permissive", action="store_true", help="read the descriptor in permissive mode")
    window_options(command)
    command.set_defaults(run=cmd_dequantize)
