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
from hurray_decl.cli.inputs import DESCRIPTOR, handles, map_file, window_options


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


def streamed(tensor: Any) -> Any:
    """The checked dequantization of a quantized dense tensor (written through a memory map),
    or None for every other tensor (:meth:`Tensor.numpy` fills the memory map chunk by chunk)."""
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
    from hurray_decl.hurray.tensor import CompositeHead, read_tensor_descriptor
    from hurray_decl.hurray.values import Tensor

    outputs.target(args.output)
    args.quantization = False
    descriptor = read_tensor_descriptor(read(args).data, permissive=args.permissive)
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


def write_values(args: argparse.Namespace, tensor: Any, key: Any, label: str) -> None:
    """Write ``tensor``'s values (or the window ``key``) to ``args.output`` as a ``.npy``: every refusal
    first, then the size checked against the free space, then the values (a quantized dense tensor
    through a memory map, with progress on a terminal). ``label``: what the last line names."""
    import numpy as np

    from hurray_decl.hurray.tensor.common import DYNAMIC

    prepared = streamed(tensor) if key is None else None  # every refusal before the output file exists
    if prepared is None and key is None and DYNAMIC not in tensor.shape:  # in bounded chunks, through a memory map
        tensor.check()
        dtype = np.dtype(np.float32) if tensor.dtype.kind == "V" else tensor.dtype  # as npy_values widens
        with outputs.npy_memmap(args.output, dtype, tuple(tensor.shape)) as out:
            tensor.numpy(dtype, out=out, progress=progress_printer("dequantize"))
        kind, shape = str(dtype), list(tensor.shape)
    elif prepared is None:
        values = npy_values(tensor, key)
        outputs.write_npy(args.output, values)
        kind, shape = str(values.dtype), list(values.shape)
    else:
        shape = list(tensor.shape)
        with outputs.npy_memmap(args.output, np.float32, tuple(shape)) as out:
            prepared.run(out, progress=progress_printer("dequantize"))
        kind = "float32"
    print(f"wrote {kind} {shape}{label} to {args.output}")


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
    handles(sub, "dequantize", {DESCRIPTOR: cmd_dequantize})
