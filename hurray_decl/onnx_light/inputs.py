"""onnx-light inputs as files hold them: which message the bytes are, and the values inside.

Three kinds of file carry onnx-light data: a serialized ``EncodedValueProto`` (:data:`VALUE`),
a ``TensorProto`` (:data:`TENSOR`, a floating tensor such as a quantization source or a
dequantized result) and an ONNX ``ModelProto`` (:data:`MODEL`, whose root and nested graphs
carry encoded initializers). :func:`detect_kind` tells them apart from the bytes alone: each
kind's descriptor walks the bytes (:mod:`.protowire`), and the kind under which the bytes read
with no unknown field and the most named fields wins. Hurray inputs are recognised by their
magic and left to the Hurray side: ``HRRY`` (a tensor descriptor) and ``HRRYFILE`` (a
container, HF-HDR-19).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from google.protobuf.message import DecodeError, Message

from hurray_decl.errors import ArgumentError, HurrayDeclError, OnnxLightError
from hurray_decl.onnx_light.codec import dequantize_value
from hurray_decl.onnx_light.model import check_model
from hurray_decl.onnx_light.protowire import walk
from hurray_decl.onnx_light.tensors import tensor_to_array
from hurray_decl.onnx_light.wire import pb

__all__ = [
    "CONTAINER",
    "HURRAY",
    "KINDS",
    "MESSAGES",
    "MODEL",
    "TENSOR",
    "VALUE",
    "Item",
    "array_of",
    "check",
    "check_item",
    "detect_kind",
    "items",
    "parse",
]

VALUE, TENSOR, MODEL = "value", "tensor", "model"
KINDS = (VALUE, TENSOR, MODEL)
"""The onnx-light input kinds, in the order ties are broken."""
MESSAGES: dict[str, type[Message]] = {VALUE: pb.EncodedValueProto, TENSOR: pb.TensorProto, MODEL: pb.ModelProto}
PARSE_RULES = {VALUE: "OL-WIRE-03", TENSOR: "OL-NUM-01", MODEL: "OL-WIRE-01"}
"""The rule reported when bytes do not parse as the kind's message."""
HURRAY, CONTAINER = "hurray", "container"
MAGICS = ((b"HRRYFILE", CONTAINER), (b"HRRY", HURRAY))
"""Magic prefixes of the Hurray inputs, longest first."""


def detect_kind(data: bytes) -> str:
    """:data:`VALUE`, :data:`TENSOR` or :data:`MODEL`; :data:`HURRAY` / :data:`CONTAINER` for the
    Hurray magics, and :data:`HURRAY` for bytes that are no serialized message of any kind."""
    for magic, kind in MAGICS:
        if data.startswith(magic):
            return kind
    best, score = HURRAY, None
    for kind in KINDS:
        result = walk(data, MESSAGES[kind].DESCRIPTOR, rows=False)
        if result.error is not None:
            continue
        fit = (result.unknown == 0, result.known)
        if score is None or fit > score:
            best, score = kind, fit
    return best


def parse(data: bytes, kind: str):
    """The message of ``kind`` the bytes hold; bytes that are not one raise the kind's rule.

    The wire is judged by one reader, :func:`~hurray_decl.onnx_light.protowire.walk` (the one the
    dump names every byte with), so that ``validate``, ``decode`` and ``inspect`` agree on every
    input; the protobuf runtime then builds the message from bytes the walk accepted."""
    data = bytes(data)
    where = walk(data, MESSAGES[kind].DESCRIPTOR, rows=False).error
    if where is None:
        try:
            return MESSAGES[kind].FromString(data)
        except DecodeError as exc:  # the runtime refuses what the walk accepts: still the kind's rule
            raise OnnxLightError(PARSE_RULES[kind], f"the bytes are not a serialized {MESSAGES[kind].__name__}",
                                 path=kind) from exc
    raise OnnxLightError(PARSE_RULES[kind], f"the bytes are not a serialized {MESSAGES[kind].__name__}: "
                         f"{where.reason}", path=kind, offset=where.offset)


@dataclass(frozen=True)
class Item:
    """One encoded value, with the model that gives its type references and parameter sets."""

    name: str
    path: str                       # where it sits: "value" or "graph.encoded_initializer[0]"
    value: pb.EncodedValueProto
    model: pb.ModelProto | None


def _graphs(graph: pb.GraphProto, path: str):
    yield graph, path
    for i, node in enumerate(graph.node):
        for j, attribute in enumerate(node.attribute):
            if attribute.HasField("g"):
                yield from _graphs(attribute.g, f"{path}.node[{i}].attribute[{j}].g")


def items(message, kind: str, name: str | None = None) -> list[Item]:
    """The encoded values of a parsed input: the value itself, or every encoded initializer of a
    model's graphs (nested ones included); ``name`` picks one by its ``name``."""
    if kind == VALUE:
        found = [Item(message.name, "value", message, None)]
    elif kind == MODEL:
        found = [Item(v.name, f"{path}.encoded_initializer[{i}]", v, message)
                 for graph, path in _graphs(message.graph, "graph") for i, v in enumerate(graph.encoded_initializer)]
    else:
        found = []
    if name is not None:
        picked = [item for item in found if item.name == name]
        if not picked:
            raise ArgumentError("--name", "no encoded value has this name", actual=name,
                                expected=sorted({item.name for item in found}) or "a model with encoded values")
        return picked
    return found


def check_item(item: Item) -> None:
    """Every decoder check on one value, the code-level ones included (padding bits and trits,
    codebook indices): the value is decoded. A compact value is materialized through its model."""
    dequantize_value(item.value, item.model)


def check(message, kind: str) -> None:
    """The verdict on a whole input: raises the HurrayDeclError of the first rule it breaks."""
    if kind == VALUE:
        check_item(Item(message.name, "value", message, None))
    elif kind == MODEL:
        check_model(message)
        for item in items(message, MODEL):  # model checking does not decode codes
            try:
                check_item(item)
            except HurrayDeclError as err:
                raise err.rebased(0, " -> ".join(["model", *item.path.split(".")])) from None
    else:
        values = tensor_to_array(message)
        if values.size and not np.isfinite(values.astype(np.float64)).all():
            j = int(np.flatnonzero(~np.isfinite(values.astype(np.float64).ravel()))[0])
            raise OnnxLightError("OL-NUM-03", "the tensor holds a non-finite value", path=f"source[{j}]",
                                 actual=repr(float(values.ravel()[j])), expected="finite")


def array_of(item: Item) -> np.ndarray:
    """The decoded values of one item, as :func:`~hurray_decl.onnx_light.dequantize_value` gives them."""
    return dequantize_value(item.value, item.model)

