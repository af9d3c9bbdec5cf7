"""hurray_decl: a declarative reference codec for Hurray quantization descriptors and
onnx-light portable quantized values.

The public names are imported on first use, so that ``import hurray_decl`` and the command line
load only what they use. They are declared as data (``_LAZY``: module -> names), which
:func:`__getattr__` reads to import a name's module when the name is first asked for; the
``if TYPE_CHECKING:`` block at the end imports the same names for type checkers (a test checks
that the two agree). To export a name, add it to both.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hurray_decl.lazy_modules import lazy_names

_LAZY = lazy_names({
    "hurray_decl.convert.hurray": ("from_awq", "from_gguf", "from_gguf_file", "from_gptq"),
    "hurray_decl.convert.sources": ("load", "load_kv", "open"),  # .hrry, GGUF, safetensors models
    "hurray_decl.errors": ("HurrayDeclError",),
    "hurray_decl.hurray": ("dask_arrays as dask", "kernels"),
    "hurray_decl.hurray.container.edit": ("append", "edit"),
    "hurray_decl.hurray.files": ("File", "save"),
    "hurray_decl.hurray.numerics": ("dequantize",),
    "hurray_decl.hurray.quantization": (
        "SCHEMES", "decode_quantization", "encode_quantization", "kernel_for", "load_quantization",
        "register_private_scheme", "scheme", "unregister_private_scheme",
    ),
    "hurray_decl.hurray.schemes.mxfp": ("MXFP",),
    "hurray_decl.hurray.schemes.nf4": ("NF4",),
    "hurray_decl.hurray.schemes.per_block_affine": ("PerBlockAffine",),
    "hurray_decl.hurray.schemes.per_channel_affine": ("PerChannelAffine",),
    "hurray_decl.hurray.schemes.per_tensor_affine": ("PerTensorAffine",),
    "hurray_decl.hurray.schemes.quantization": ("OpaqueQuantization", "QuantizationDescriptor", "SchemeDescriptor"),
    "hurray_decl.hurray.tensor": (
        "BufferHandle", "TensorDescriptor", "read_tensor_descriptor", "validate_buffers", "write_tensor_descriptor",
    ),
    "hurray_decl.hurray.values": ("SparseValues", "Tensor", "element_type", "quantize"),
})
"""public name -> (module, attribute or submodule); the TYPE_CHECKING block imports the same names."""
__all__ = sorted([*_LAZY, "__version__"])


def _version() -> str:
    from importlib.metadata import PackageNotFoundError as PackageNotFoundError, version as version

    try:
        return version("hurray_decl")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _version()
    elif name in _LAZY:
        module, attribute = _LAZY[name]
        parent = importlib.import_module(module, __name__)
        try:
            value = getattr(parent, attribute)
        except AttributeError:  # "from hurray_decl.hurray import kernels": a submodule not imported yet
            value = importlib.import_module(f"{parent.__name__}.{attribute}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # the public names: imported lazily at run time (see the module's documentation)
    __version__: str
    from hurray_decl.convert.hurray import (
        from_awq as from_awq,
        from_gguf as from_gguf,
        from_gguf_file as from_gguf_file,
        from_gptq as from_gptq,
    )
    from hurray_decl.convert.sources import load as load, load_kv as load_kv, open as open
    from hurray_decl.errors import HurrayDeclError as HurrayDeclError
    from hurray_decl.hurray import (
        dask_arrays as dask,  # noqa: F401 (a module: exported under its public name)
        kernels as kernels,
    )
    from hurray_decl.hurray.container.edit import append as append, edit as edit
    from hurray_decl.hurray.files import File as File, save as save
    from hurray_decl.hurray.numerics import dequantize as dequantize
    from hurray_decl.hurray.quantization import (
        SCHEMES as SCHEMES,
        decode_quantization as decode_quantization,
        encode_quantization as encode_quantization,
        kernel_for as kernel_for,
        load_quantization as load_quantization,
        register_private_scheme as register_private_scheme,
        scheme as scheme,
        unregister_private_scheme as unregister_private_scheme,
    )
    from hurray_decl.hurray.schemes.mxfp import MXFP as MXFP
    from hurray_decl.hurray.schemes.nf4 import NF4 as NF4
    from hurray_decl.hurray.schemes.per_block_affine import PerBlockAffine as PerBlockAffine
    from hurray_decl.hurray.schemes.per_channel_affine import PerChannelAffine as PerChannelAffine
    from hurray_decl.hurray.schemes.per_tensor_affine import PerTensorAffine as PerTensorAffine
    from hurray_decl.hurray.schemes.quantization import (
        OpaqueQuantization as OpaqueQuantization,
        QuantizationDescriptor as QuantizationDescriptor,
        SchemeDescriptor as SchemeDescriptor,
    )
    from hurray_decl.hurray.tensor import (
        BufferHandle as BufferHandle,
        TensorDescriptor as TensorDescriptor,
        read_tensor_descriptor as read_tensor_descriptor,
        validate_buffers as validate_buffers,
        write_tensor_descriptor as write_tensor_descriptor,
    )
    from hurray_decl.hurray.values import (
        SparseValues as SparseValues,
        Tensor as Tensor,
        element_type as element_type,
        quantize as quantize,
    )
