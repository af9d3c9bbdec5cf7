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
from hurray_decl.cli.common import OK, UsageError, progress_printer
from hurray_decl.cli.descriptors import read
from hurray_decl.cli.inputs import map_file, window_options


def region(text: str | None) -> Any:
    """``--region`` as an index: comma-separated integers, ``start:stop[:step]`` slices and ``...``
    (``"0:64,...,3"``); None without the option."""
    if text is None:
        return None
    items: list[Any] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if part == "...":
                items.append(Ellipsis)
            elif ":" in part:
                bounds = [int(b) if b.strip() else None for b in part.split(":")]
                if len(bounds) > 3:
                    raise ValueError(part)
                items.append(slice(*bounds))
            else:
                items.append(int(part))
        except ValueError:
            raise UsageError(f"argument --region: {part!r} is not an integer, a start:stop[:step] slice or ...") \
                from None
    return tuple(items)


def values_of(tensor: Any, key: Any) -> Any:
    """The values to write: the window ``key`` when given (read and dequantized alone), else
    None when the whole tensor is streamed (:func:`streamed`), else the whole tensor's values."""
    if key is not None:
        return npy_values(tensor, key)
    return None if streamed(tensor) is not None else npy_values(tensor)


def streamed(tensor: Any) -> Any:
    """The checked dequantization of a quantized dense tensor (written through a memory map),
    or None for every other tensor (its values are computed whole, :func:`npy_values`)."""
    from hurray_decl.hurray.numerics import prepare_dequantize
    from hurray_decl.hurray.tensor import BlockPaged, CompositeHead
    from hurray_decl.hurray.values import SPARSE

    if tensor.descriptor.quantization is None or isinstance(tensor.layout, (*SPARSE, BlockPaged, CompositeHead)):
        return None
    return prepare_dequantize(tensor.descriptor, tensor.buffers)


def npy_values(tensor: Any, key: Any = None) -> Any:
    """A tensor's values (or those of the window ``key``) as a .npy file holds them: types NumPy
    lacks (bfloat16, float8/6/4) widened exactly to float32."""
    import numpy as np

    values = tensor.numpy() if key is None else np.asarray(tensor[key])
    if values.dtype.kind == "V":  # the ml_dtypes types: .npy has no name for them
        values = values.astype(np.float32)
    return values


def cmd_dequantize(args: argparse.Namespace) -> int:
    """Refusals are HurrayDeclErrors: main() prints their rule (exit 1), no file having been created."""
    import numpy as np

    from hurray_decl.hurray.tensor import read_tensor_descriptor
    from hurray_decl.hurray.values import Tensor

    if not args.buffers:
        raise UsageError("a Hurray tensor descriptor needs one buffer file per buffer-table entry")
    outputs.target(args.output)
    buffers = [map_file(path, what="BUFFER") for path in args.buffers]
    args.quantization = False
    descriptor = read_tensor_descriptor(read(args).data, permissive=args.permissive)
    tensor = Tensor(descriptor, buffers)
    key = region(args.region)
    values = values_of(tensor, key)  # every refusal before the output file exists
    prepared: Any = streamed(tensor) if values is None else None
    with outputs.atomic(args.output) as temporary:
        if values is not None:
            with open(temporary, "wb") as stream:
                np.save(stream, values, allow_pickle=False)
            kind = str(values.dtype)
        else:
            out = np.lib.format.open_memmap(temporary, mode="w+", dtype=np.float32, shape=tuple(descriptor.shape))
            prepared.run(out, progress=progress_printer("dequantize"))
            out.flush()
            del out
            kind = "float32"
    print(f"wrote {kind} {list(descriptor.shape if values is None else values.shape)} to {args.output}")
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
    command.set_defaults(run=cmd_dequantize)
