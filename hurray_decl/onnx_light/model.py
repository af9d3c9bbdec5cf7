"""Model-level checks of encoded initializers (OL-WIRE-42).

``check_model_values(model)`` validates every portable encoded initializer of the root graph and
of every nested graph (node attributes of kind GRAPH), resolving type references through the
model's catalogue. Compact values (with ``parameter_ref``) belong to the shared-parameter issue
and are skipped here.
"""

from __future__ import annotations

from ..errors import HurrayDeclError
from .codec import _read
from .wire import model_catalogue, pb

__all__ = ["check_model_values"]


def _graphs(graph: pb.GraphProto, path: str):
    yield graph, path
    for i, node in enumerate(graph.node):
        for attribute in node.attribute:
            if attribute.HasField("g"):
                yield from _graphs(attribute.g, f"{path} -> node[{i}] -> {attribute.name}")


def check_model_values(model) -> int:
    """Validate the encoded initializers of a model; return how many were checked."""
    if not isinstance(model, pb.ModelProto):
        model = pb.ModelProto.FromString(model.SerializeToString())
    model_catalogue(model)
    checked = 0
    for graph, path in _graphs(model.graph, "model -> graph"):
        for value in graph.encoded_initializer:
            if value.HasField("parameter_ref"):
                continue
            try:
                _read(value, model)
            except HurrayDeclError as err:
                raise err.rebased(0, f"{path} -> encoded_initializer[{value.name}]")
            checked += 1
    return checked
