"""``dequantize``: a tensor's values into a ``.npy`` file: a quantized tensor's float32
dequantization, any other tensor's values (plain, sparse as dense, block-paged, composite).

Everything is checked before the output exists: the output path, the descriptor, and every rule
``dequantize`` checks (the scheme, the layout, the shape, the buffer contents). The values are
then written through a memory map into a temporary file beside the target, renamed over it once
complete; a failure leaves nothing behind.
"""

from __future__ import annotations

import argparse
from typing import Any

from hurray_decl.cli import outputs
from hurray_decl.cli.common import OK, UsageError, region
from hurray_decl.cli.detection import DESCRIPTOR, handles
from hurray_decl.cli.inputs import forced_kind_option, index_option, map_file, name_option, read_noted, window_options
from hurray_decl.cli.outputs import write_values


def cmd_dequantize(args: argparse.Namespace) -> int:
    """Refusals are HurrayDeclErrors: main() prints their rule (exit 1), no file having been created."""
    from hurray_decl.hurray.tensor import CompositeHead, read_tensor_descriptor
    from hurray_decl.hurray.values import Tensor

    outputs.target(args.output)
    descriptor = read_tensor_descriptor(read_noted(args, quantization=False).data, permissive=args.permissive)
    if isinstance(descriptor.layout, CompositeHead):
        raise UsageError("a composite head's values are its members': dequantize it from the .hrry container or "
                         "the stream that holds them")
    if len(args.buffers) != len(descriptor.buffers):
        raise UsageError(f"the descriptor has {len(descriptor.buffers)} buffer-table entries: give one BUFFER file "
                         f"for each (got {len(args.buffers)})")
    buffers = [map_file(path, what="BUFFER") for path in args.buffers]
    tensor = Tensor(descriptor, buffers)
    write_values(args, tensor, region(args.region), "")
    return OK


def register(sub: Any) -> None:
    command = sub.add_parser("dequantize", help="write a tensor's values into a .npy file (quantized: float32)",
                             description="Write a tensor's values into a .npy file: a quantized tensor dequantized to "
                                         "float32 through a memory map, with progress on a terminal; any other "
                                         "tensor's values in its own type (bfloat16 and float8/6/4 widened exactly to "
                                         "float32; sparse tensors dense). Everything is checked before the file is "
                                         "created. Exit 0 done, 1 invalid (the rule code is printed), 2 a usage "
                                         "error, 3 a file problem.")
    command.add_argument("input", metavar="DESCRIPTOR",
                         help="the tensor descriptor: a file, - for standard input, or hex bytes")
    command.add_argument("buffers", nargs="*", metavar="BUFFER", help="one file per buffer-table entry, in order "
                         "(none for a .hrry container or an onnx-light input)")
    command.add_argument("-o", "--output", required=True, help="the .npy file to write")
    command.add_argument("--permissive", action="store_true", help="read the descriptor in permissive mode")
    command.add_argument("--region", metavar="INDEX", default=None,
                         help="write only this window, e.g. 0:64,... or 3,:,5:9 (integers, start:stop[:step] "
                              "slices, ...): only the blocks it touches are read and dequantized")
    window_options(command)
    forced_kind_option(command)
    name_option(command)
    index_option(command)
    command.set_defaults(run=cmd_dequantize)
    handles(sub, "dequantize", {DESCRIPTOR: cmd_dequantize})
