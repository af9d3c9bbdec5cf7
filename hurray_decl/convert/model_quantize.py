"""Whole-model quantization: every large float tensor of a ``.npz``, safetensors or ONNX model,
one tensor at a time, with its error against the source.

:func:`read_model` opens a source as :class:`ModelTensor` values, each read when asked for
(``np.load`` of a ``.npz`` reads one member at a time; safetensors files are memory-mapped; an
ONNX model's initializers are views of its ``raw_data``). :func:`select` picks the tensors to
quantize: the named ones, or every float tensor (float16/32/64, bfloat16) of at least
``min_elements`` elements. :func:`quantize_tensor` quantizes one into the target:

* ``hurray``: a Hurray tensor of any scheme with a quantizer (``hurray.numerics.quantize``);
* ``onnx-light``: an encoded value of a portable profile, calibrated by onnx-light
  (``quantize_with_type``);
* ``ort``: a MatMulNBits value from per-block affine codes (the Hurray quantizer, blocks of at
  least 16 along K, then :func:`~hurray_decl.convert.ort.to_matmul_nbits`, codes copied). An ONNX
  MatMul's ``B`` initializer is ``[K, N]`` (blocked along axis 0); a ``.npz`` or safetensors
  weight is a PyTorch-style ``(N, K)`` linear weight (blocked along axis 1, transposed on export).

Each result comes with :class:`ErrorReport`: the maximum absolute error, the RMSE and the SNR in
dB (``10 log10(sum x^2 / sum (x - y)^2)``, None when the error is zero) of the dequantized
values ``y`` (the target's own decoder) against the source ``x``, accumulated in float64 in
chunks. :func:`matmul_nbits_graph` rewrites an ONNX model's MatMul nodes onto quantized ``B``
initializers as ``com.microsoft::MatMulNBits`` nodes that onnxruntime runs.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from hurray_decl.convert.hurray import block_parts
from hurray_decl.convert.ort import to_matmul_nbits
from hurray_decl.convert.safetensors import SafetensorsFile, is_index, is_safetensors, open_safetensors
from hurray_decl.errors import ArgumentError, RuleViolation, UnsupportedError
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tensor import TensorDescriptor
from hurray_decl.onnx_light import (
    EncodedValueProto,
    ModelProto,
    TensorProto,
    dequantize_value,
    export_matmul_nbits_inputs,
    make_quantization_plan,
    make_quantization_type,
    parse_quantization_format,
    quantize_with_type,
)

__all__ = [
    "FLOAT_ELEMENTS",
    "INTEGER_ELEMENTS",
    "ONNX_ELEMENTS",
    "TARGETS",
    "ErrorReport",
    "ModelSource",
    "ModelTensor",
    "QuantizeOptions",
    "Quantized",
    "error_report",
    "matmul_nbits_graph",
    "quantize_tensor",
    "read_model",
    "select",
]

TARGETS = ("hurray", "onnx-light", "ort")
FLOAT_ELEMENTS = ("float16", "bfloat16", "float32", "float64")
"""The element types of the tensors quantized by default."""
INTEGER_ELEMENTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
"""Element types quantized when named (as float64 values)."""
ONNX_ELEMENTS = {TensorProto.FLOAT: "float32", TensorProto.UINT8: "uint8", TensorProto.INT8: "int8",
                 TensorProto.UINT16: "uint16", TensorProto.INT16: "int16", TensorProto.INT32: "int32",
                 TensorProto.INT64: "int64", TensorProto.BOOL: "bool", TensorProto.FLOAT16: "float16",
                 TensorProto.DOUBLE: "float64", TensorProto.UINT32: "uint32", TensorProto.UINT64: "uint64",
                 TensorProto.BFLOAT16: "bfloat16"}
"""The Hurray element type of each ONNX data type read from ``raw_data`` here."""
ORT_MIN_BLOCK = 16
"""MatMulNBits blocks hold at least 16 codes (OL-ORT-03)."""
_CHUNK = 1 << 20
"""Elements per step of the error accumulation (bounded float64 temporaries)."""


@dataclass(frozen=True)
class ModelTensor:
    """One tensor of a model: its name, element type, shape, a reader of its values, and for
    an ONNX initializer whether it is the ``B`` input of a MatMul."""

    name: str
    element: str
    shape: tuple[int, ...]
    load: Callable[[], np.ndarray] = field(repr=False)
    matmul_weight: bool = False

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass
class ModelSource:
    """A model opened by :func:`read_model`: its kind (``npz``, ``safetensors``, ``onnx``), its
    tensors in source order, its metadata (safetensors ``__metadata__``) and, for ONNX, the model."""

    kind: str
    tensors: list[ModelTensor]
    metadata: dict[str, str] = field(default_factory=dict)
    model: ModelProto | None = None
    closer: Callable[[], None] | None = field(default=None, repr=False)

    def close(self) -> None:
        if self.closer is not None:
            self.closer()


def _member(archive: Any, name: str) -> np.ndarray:
    try:
        return np.asarray(archive[name])
    except ValueError as err:  # object arrays (allow_pickle=False), a damaged member
        raise ArgumentError("source", f"member {name} cannot be read: {err}", actual=name) from None


def _npz(path: Path) -> ModelSource:
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile) as err:
        raise ArgumentError("source", f"{path} is not a .npz archive: {err}") from None
    tensors = []
    for name in archive.files:
        try:
            member = archive.zip.open(f"{name}.npy")
            version = np.lib.format.read_magic(member)
            reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = reader(member)
        except (ValueError, KeyError) as err:
            raise ArgumentError("source", f"{path}: member {name} is not a .npy array: {err}") from None
        element = None if dtype.hasobject else storage.element_of_dtype(dtype)
        tensors.append(ModelTensor(name, element or str(dtype), tuple(shape),
                                   partial(_member, archive, name)))
    return ModelSource("npz", tensors, closer=archive.close)


def _safetensors(path: Path) -> ModelSource:
    opened: SafetensorsFile = open_safetensors(path)
    tensors = []
    for name, entry in opened.entries.items():
        try:
            element = opened.element(name)
        except UnsupportedError:
            element = entry.code
        tensors.append(ModelTensor(name, element, entry.shape, partial(opened.array, name)))
    return ModelSource("safetensors", tensors, dict(opened.metadata), closer=opened.close)


def _initializer_values(tensor: Any, element: str) -> np.ndarray:
    if element not in ONNX_ELEMENTS.values():
        raise ArgumentError("initializer", f"{tensor.name}: {element} has no Hurray element type here",
                            actual=tensor.data_type, expected=", ".join(ONNX_ELEMENTS.values()))
    shape = tuple(int(n) for n in tensor.dims)
    if tensor.data_location == TensorProto.EXTERNAL:
        raise ArgumentError("initializer", f"{tensor.name} is stored in an external file, which is not read here",
                            actual="external data", expected="raw_data")
    dtype = storage.value_dtype(element)
    count = int(np.prod(shape, dtype=np.int64))
    if tensor.HasField("raw_data"):
        if len(tensor.raw_data) != count * dtype.itemsize:
            raise RuleViolation("HE-21", f"{tensor.name}: raw_data holds {len(tensor.raw_data)} bytes, not "
                                f"{count * dtype.itemsize}", path=f"initializer {tensor.name}",
                                actual=len(tensor.raw_data), expected=count * dtype.itemsize)
        return np.frombuffer(tensor.raw_data, dtype=dtype).reshape(shape)
    if element == "float32" and len(tensor.float_data) == count:
        return np.asarray(tensor.float_data, dtype=np.float32).reshape(shape)
    raise ArgumentError("initializer", f"{tensor.name}: only raw_data (and float_data for float32) initializers are "
                        "read here", actual=element, expected="raw_data")


def _onnx(path: Path) -> ModelSource:
    from google.protobuf.message import DecodeError

    try:
        model = ModelProto.FromString(path.read_bytes())
    except DecodeError:
        raise ArgumentError("source", f"{path} is not a .npy array, a .npz archive, a safetensors file or an "
                            "ONNX model") from None
    weights = {node.input[1] for node in model.graph.node if _is_matmul(node)}
    tensors = []
    for tensor in model.graph.initializer:
        element = ONNX_ELEMENTS.get(tensor.data_type, f"ONNX data type {tensor.data_type}")
        tensors.append(ModelTensor(tensor.name, element, tuple(int(n) for n in tensor.dims),
                                   partial(_initializer_values, tensor, element), tensor.name in weights))
    return ModelSource("onnx", tensors, model=model)


def read_model(path: str | Path) -> ModelSource:
    """A ``.npz`` archive, a safetensors file (or a sharded model's index) or an ONNX model, told
    apart by their first bytes (an index by its name)."""
    path = Path(path)
    with path.open("rb") as handle:
        head = handle.read(16)
    if head.startswith(b"PK"):
        return _npz(path)
    if is_safetensors(head) or is_index(path):  # a sharded model by its index, too
        return _safetensors(path)
    return _onnx(path)


def select(tensors: Sequence[ModelTensor], names: Sequence[str] | None, min_elements: int) -> set[str]:
    """The names to quantize: ``names`` (each must exist), or every float tensor of at least
    ``min_elements`` elements."""
    if names:
        known = {t.name for t in tensors}
        missing = [n for n in names if n not in known]
        if missing:
            shown = ", ".join(t.name for t in tensors[:20])
            raise ArgumentError("--tensor", f"the model has no tensor {missing[0]!r}; it holds: {shown or 'none'}",
                                actual=missing[0])
        return set(names)
    return {t.name for t in tensors if t.element in FLOAT_ELEMENTS and t.size >= min_elements}


@dataclass(frozen=True)
class QuantizeOptions:
    """How each selected tensor is quantized (see :func:`quantize_tensor`)."""

    target: str = "hurray"
    scheme: str = "per_block_affine"
    profile: str = "int4"
    axis: int | None = None
    block_size: int | None = None
    storage: str | None = None
    symmetric: bool = True
    scale_type: str = "float32"


@dataclass(frozen=True)
class ErrorReport:
    """The dequantized values against the source, over every element."""

    max_abs_error: float
    rmse: float
    snr_db: float | None


def error_report(source: np.ndarray, decoded: np.ndarray) -> ErrorReport:
    """:class:`ErrorReport` of ``decoded`` against ``source`` (same shape), in float64 chunks."""
    x, y = source.reshape(-1), decoded.reshape(-1)
    if x.shape != y.shape:
        raise ArgumentError("decoded", "the decoded values do not have the source's shape", actual=y.size,
                            expected=x.size)
    worst, error_power, signal_power = 0.0, 0.0, 0.0
    for start in range(0, x.size, _CHUNK):
        a = x[start:start + _CHUNK].astype(np.float64)
        e = y[start:start + _CHUNK].astype(np.float64) - a
        worst = max(worst, float(np.abs(e).max(initial=0.0)))
        error_power += float(np.dot(e, e))
        signal_power += float(np.dot(a, a))
    rmse = float(np.sqrt(error_power / x.size)) if x.size else 0.0
    snr = None if error_power == 0 else (float(10 * np.log10(signal_power / error_power)) if signal_power else
                                         float("-inf"))
    return ErrorReport(worst, rmse, snr)


@dataclass(frozen=True)
class Quantized:
    """One quantized tensor: a Hurray ``(descriptor, buffers)`` pair (``hurray``) or an
    onnx-light / ORT ``EncodedValueProto``, its method, and its error against the source."""

    value: tuple[TensorDescriptor, list[bytes]] | EncodedValueProto
    method: str
    error: ErrorReport
    byte_size: int


def _float_source(tensor: ModelTensor) -> np.ndarray:
    values = tensor.load()
    if tensor.element == "bfloat16":  # widened exactly: the quantizers take NumPy's own float types
        return values.astype(np.float32)
    if tensor.element in INTEGER_ELEMENTS:
        return values.astype(np.float64)
    return values


def _hurray(x: np.ndarray, options: QuantizeOptions, axis: int | None) -> tuple[Any, ...]:
    from hurray_decl.hurray.numerics import dequantize, quantize

    descriptor, buffers = quantize(x, options.scheme, axis=axis, block_size=options.block_size,
                                   storage=options.storage, symmetric=options.symmetric,
                                   scale_type=options.scale_type)
    return (descriptor, buffers), dequantize(descriptor, buffers), sum(len(b) for b in buffers)


def quantize_tensor(tensor: ModelTensor, options: QuantizeOptions) -> Quantized:
    """Quantize one tensor into ``options.target`` and measure it (see the module's documentation)."""
    if tensor.element not in FLOAT_ELEMENTS + INTEGER_ELEMENTS:
        raise ArgumentError("--tensor", f"{tensor.name} holds {tensor.element}, not real numbers",
                            actual=tensor.element, expected=", ".join(FLOAT_ELEMENTS + INTEGER_ELEMENTS))
    x = _float_source(tensor)
    if options.target == "hurray":
        value, decoded, size = _hurray(x, options, options.axis)
        return Quantized(value, options.scheme, error_report(x, decoded), size)
    if options.target == "onnx-light":
        fmt = parse_quantization_format(options.profile)
        plan = make_quantization_plan(fmt, max(x.size, 1), block_size=options.block_size or 32)
        encoded = quantize_with_type(x, make_quantization_type(plan))
        return Quantized(encoded, fmt.wire_name, error_report(x, dequantize_value(encoded)), len(encoded.raw_data))
    if options.target != "ort":
        raise ArgumentError("--to", "an unknown target", actual=options.target, expected=", ".join(TARGETS))
    if x.ndim != 2:
        raise UnsupportedError("OL-ORT-07", f"{tensor.name} is not a matrix; MatMulNBits weights are",
                               path=tensor.name, actual=list(x.shape), expected="rank 2")
    if options.scheme != "per_block_affine":
        raise UnsupportedError("OL-ORT-07", "MatMulNBits holds per-block affine codes", path="--scheme",
                               actual=options.scheme, expected="per_block_affine")
    axis = 0 if tensor.matmul_weight else 1  # ONNX B is [K, N]; a linear weight (N, K)
    if options.axis is not None and options.axis % 2 != axis:
        raise UnsupportedError("OL-ORT-07", f"{tensor.name}: MatMulNBits blocks run along K, axis {axis} here",
                               path="--axis", actual=options.axis, expected=axis)
    ort_options = QuantizeOptions("hurray", "per_block_affine", options.profile, axis,
                                  max(options.block_size or 32, ORT_MIN_BLOCK),
                                  options.storage or ("int4" if options.symmetric else "uint4"),
                                  options.symmetric, options.scale_type)
    (descriptor, buffers), _, _ = _hurray(x, ort_options, axis)
    matrix_type = "float16" if tensor.element == "float16" else "float32"
    encoded = to_matmul_nbits(block_parts(descriptor, buffers), scale_type=matrix_type)
    decoded = dequantize_value(encoded)  # [K, N]
    return Quantized(encoded, f"MatMulNBits {ort_options.storage} K{ort_options.block_size}",
                     error_report(x if axis == 0 else x.T, decoded), len(encoded.raw_data))


def _is_matmul(node: Any) -> bool:
    """A standard ONNX ``MatMul(A, B)`` node."""
    return bool(node.op_type == "MatMul" and node.domain in ("", "ai.onnx") and len(node.input) == 2)


def _attribute(node: Any, name: str, value: int) -> None:
    attribute = node.attribute.add()
    attribute.name, attribute.type, attribute.i = name, 2, int(value)  # AttributeProto.INT


def matmul_nbits_graph(model: ModelProto, weights: Mapping[str, EncodedValueProto]) -> ModelProto:
    """A copy of ``model`` whose MatMul nodes with a quantized ``B`` run as MatMulNBits.

    Each weight ``W`` becomes the initializers ``W.B``, ``W.scales`` (and ``W.zero_points``),
    its float initializer is dropped, and each ``MatMul(A, W)`` becomes ``MatMulNBits(A, W.B,
    W.scales[, W.zero_points])`` with ``K``, ``N``, ``bits`` and ``block_size``; the
    ``com.microsoft`` opset (version 1) is added when missing.
    """
    out = ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    elsewhere = {o.name for o in graph.output}  # a weight read by anything but a MatMul's B keeps its float form
    for node in graph.node:
        rewritten = _is_matmul(node) and node.input[1] in weights
        elsewhere.update(node.input[:1] if rewritten else node.input)
    kept = [t for t in graph.initializer if t.name not in weights or t.name in elsewhere]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    inputs = {}
    for name, value in weights.items():
        exported = export_matmul_nbits_inputs(value)
        names = []
        for role, tensor in (("B", exported.weights), ("scales", exported.scales),
                             ("zero_points", exported.zero_points)):
            if tensor is None:
                continue
            initializer = graph.initializer.add()
            initializer.ParseFromString(tensor.SerializeToString())
            initializer.name = f"{name}.{role}"
            names.append(initializer.name)
        inputs[name] = (names, exported)
    for node in graph.node:
        if not _is_matmul(node) or node.input[1] not in inputs:
            continue
        names, exported = inputs[node.input[1]]
        activation = node.input[0]
        node.op_type, node.domain = "MatMulNBits", "com.microsoft"
        del node.input[:]
        node.input.extend([activation, *names])
        for attribute, number in (("K", exported.k), ("N", exported.n), ("bits", exported.bits),
                                  ("block_size", exported.block_size)):
            _attribute(node, attribute, number)
    if not any(o.domain == "com.microsoft" for o in out.opset_import):
        opset = out.opset_import.add()
        opset.domain, opset.version = "com.microsoft", 1
    return out


def encoded_graph(model: ModelProto, values: Mapping[str, EncodedValueProto]) -> ModelProto:
    """A copy of ``model`` whose quantized initializers are onnx-light encoded initializers of the same names."""
    out = ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    kept = [t for t in graph.initializer if t.name not in values]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    for name, value in values.items():
        slot = graph.encoded_initializer.add()
        slot.CopyFrom(value)
        slot.name = name
    return out


def plain_initializer(name: str, values: np.ndarray) -> TensorProto | None:
    """An unquantized tensor as an ONNX initializer (``raw_data``), or None for a type ONNX lacks here."""
    element = storage.element_of_dtype(values.dtype)
    codes = {e: code for code, e in ONNX_ELEMENTS.items()}
    if element not in codes:
        return None
    tensor = TensorProto()
    tensor.name, tensor.data_type = name, codes[element]
    tensor.dims.extend(int(n) for n in values.shape)
    tensor.raw_data = np.ascontiguousarray(values).astype(values.dtype.newbyteorder("<"), copy=False).tobytes()
    return tensor

