"""hurray_decl: a declarative reference codec for Hurray quantization descriptors and
onnx-light portable quantized values.

The public names are imported on first use, so that ``import hurray_decl`` and the command line
load only what they use. They are declared once, as the imports of the ``if TYPE_CHECKING:``
block at the end of this file (which type checkers read as usual); :func:`__getattr__` imports
a name's module when the name is first asked for. To export a name, add its import there.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any


def _lazy_names() -> dict[str, tuple[str, str]]:
    """public name -> (module, attribute or submodule), read from the TYPE_CHECKING imports below."""
    import ast
    import io

    with io.open(__file__, encoding="utf-8") as source:  # io.open: "open" is also a public name below
        tree = ast.parse(source.read())
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    names: dict[str, tuple[str, str]] = {}
    for statement in block.body:
        if isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                names[alias.asname or alias.name] = ("." * statement.level + (statement.module or ""), alias.name)
    return names


_LAZY = _lazy_names()
__all__ = sorted([*_LAZY, "__version__"])


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

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
    from hurray_decl.hurray import kernels
    from hurray_decl.hurray import dask_arrays as dask
    from hurray_decl.hurray.numerics import dequantize
    # "name as name": an explicit re-export, which mypy's strict mode (no implicit re-export) sees
    from hurray_decl.hurray.values import SparseValues as SparseValues, Tensor as Tensor
    from hurray_decl.hurray.values import element_type as element_type, quantize as quantize
    from hurray_decl.hurray.files import File as File, load as load, load_kv as load_kv, save as save
    from hurray_decl.hurray.files import open as open
    from hurray_decl.convert.hurray import from_awq, from_gguf, from_gguf_file, from_gptq
    from hurray_decl.hurray.quantization import SCHEMES, decode_quantization, encode_quantization, kernel_for, load_quantization
    from hurray_decl.hurray.quantization import register_private_scheme, scheme, unregister_private_scheme
    from hurray_decl.errors import HurrayDeclError
    from hurray_decl.hurray.schemes.mxfp import MXFP
    from hurray_decl.hurray.schemes.nf4 import NF4
    from hurray_decl.hurray.schemes.per_block_affine import PerBlockAffine
    from hurray_decl.hurray.schemes.per_channel_affine import PerChannelAffine
    from hurray_decl.hurray.schemes.per_tensor_affine import PerTensorAffine
    from hurray_decl.hurray.schemes.quantization import Descriptor as QuantizationDescriptor
    from hurray_decl.hurray.schemes.quantization import OpaqueQuantization, SchemeDescriptor
    from hurray_decl.hurray.tensor import BufferHandle, TensorDescriptor, read_tensor_descriptor, validate_buffers
    from hurray_decl.hurray.tensor import write_tensor_descriptor
