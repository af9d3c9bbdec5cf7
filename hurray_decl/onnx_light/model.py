"""Model-level checks of encoded initializers (OL-WIRE-42) and parameter sets (OL-SHR).

``check_model_values(model)`` validates every encoded initializer of the root graph and of every
nested graph (node attributes of kind GRAPH), resolving type references through the model's
catalogue. Self-contained portable and ORT values are fully validated; a compact value (with
``parameter_ref``) is checked against its parameter set's logical type, compact type and
payload extent without rebuilding the full payload (OL-SHR-21 .. -23).

``check_model(model)`` adds the parameter-set declarations and the ``parameter_ref``
attributes of ai.rt::Quantize nodes, including function-bound ones resolved from call sites
and function defaults (OL-SHR-31, -32), and reports every failure as an error that is also an
``onnx.checker.ValidationError`` when onnx is installed (OL-SHR-11).
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError

from hurray_decl.errors import HurrayDeclError, OnnxLightError
from hurray_decl.onnx_light.codec import validate_value
from hurray_decl.onnx_light.shared import PARAMETERS_PREFIX, as_pb_model, check_shared_value, parameter_catalogue
from hurray_decl.onnx_light.wire import model_catalogue, pb

__all__ = ["check_model", "check_model_values", "model_to_textproto", "serialize_for_ort", "validation_error_class"]


def _graphs(graph: pb.GraphProto, path: str):
    yield graph, path
    for i, node in enumerate(graph.node):
        for attribute in node.attribute:
            if attribute.HasField("g"):
                yield from _graphs(attribute.g, f"{path} -> node[{i}] -> {attribute.name}")


def check_model_values(model) -> int:
    """Validate the encoded initializers of a model; return how many were checked."""
    model = as_pb_model(model)
    model_catalogue(model)
    sets = None
    checked = 0
    for graph, path in _graphs(model.graph, "model -> graph"):
        for value in graph.encoded_initializer:
            where = f"{path} -> encoded_initializer[{value.name}]"
            try:
                if value.HasField("parameter_ref"):
                    sets = parameter_catalogue(model) if sets is None else sets
                    if value.parameter_ref not in sets:
                        raise OnnxLightError("OL-SHR-29", "the model declares no parameter set of this name",
                                             path="value -> parameter_ref", actual=value.parameter_ref,
                                             expected=sorted(sets))
                    check_shared_value(value, sets[value.parameter_ref], model, "value",
                                       ("OL-SHR-21", "OL-SHR-22", "OL-SHR-23"))
                else:
                    validate_value(value, model)
            except HurrayDeclError as err:
                raise err.rebased(0, where) from None
            checked += 1
    return checked


# --- check_model --------------------------------------------------------------------------------

def validation_error_class() -> type[OnnxLightError]:
    """An error class that is both OnnxLightError and onnx's ValidationError (when installed)."""
    global _VALIDATION_ERROR
    if _VALIDATION_ERROR is None:
        try:
            from onnx.checker import ValidationError
        except ImportError:
            _VALIDATION_ERROR = OnnxLightError
        else:
            class OnnxLightValidationError(OnnxLightError, ValidationError):
                """An onnx-light model error reported as a ValidationError."""

            OnnxLightValidationError.__qualname__ = OnnxLightValidationError.__name__
            _VALIDATION_ERROR = OnnxLightValidationError
    return _VALIDATION_ERROR


_VALIDATION_ERROR: type[OnnxLightError] | None = None
_QUANTIZE = ("ai.rt", "Quantize")
_STRING = 3


def _attribute_value(attribute, scope: dict[str, Any] | None, path: str) -> Any:
    """An attribute's value; a reference is looked up in the enclosing function call's scope."""
    if attribute.ref_attr_name:
        if scope is None or attribute.ref_attr_name not in scope:
            raise OnnxLightError("OL-SHR-31", "an attribute reference is unresolved in this execution scope",
                                 path=f"{path} -> {attribute.name}", actual=attribute.ref_attr_name,
                                 expected="a call-site value or a function default")
        return scope[attribute.ref_attr_name]
    if attribute.type == _STRING:
        return attribute.s.decode("utf-8", "replace")
    return attribute


def _check_nodes(nodes, scope, functions, sets, path: str, depth: int = 0) -> None:
    if depth > 32:
        raise OnnxLightError("OL-SHR-31", "function calls nest too deeply (a call cycle?)", path=path)
    for i, node in enumerate(nodes):
        where = f"{path} -> node[{i}]"
        for attribute in node.attribute:
            if attribute.HasField("g"):
                _check_nodes(attribute.g.node, scope, functions, sets, f"{where} -> {attribute.name}", depth)
            # onnx's AttributeProto has repeated graphs; the package's own (used without onnx) has only g
            graphs = attribute.graphs if "graphs" in attribute.DESCRIPTOR.fields_by_name else ()
            for j, graph in enumerate(graphs):
                _check_nodes(graph.node, scope, functions, sets, f"{where} -> {attribute.name}[{j}]", depth)
        if (node.domain, node.op_type) == _QUANTIZE:
            for attribute in node.attribute:
                if attribute.name != "parameter_ref":
                    continue
                name = _attribute_value(attribute, scope, where)
                if not isinstance(name, str) or not name:
                    raise OnnxLightError("OL-OP-04", "parameter_ref must be a non-empty string",
                                         path=f"{where} -> parameter_ref", actual=repr(name))
                if name not in sets:
                    raise OnnxLightError("OL-SHR-29", "the model declares no parameter set of this name",
                                         path=f"{where} -> parameter_ref", actual=name, expected=sorted(sets))
        function = functions.get((node.domain, node.op_type))
        if function is not None:
            callee: dict[str, Any] = {}
            given = {a.name: a for a in node.attribute}
            for default in getattr(function, "attribute_proto", ()):
                callee[default.name] = _attribute_value(default, None, f"{where} -> default")
            for name, attribute in given.items():
                callee[name] = _attribute_value(attribute, scope, where)
            for name in function.attribute:
                if name not in callee:
                    raise OnnxLightError("OL-SHR-32", "the call omits a required function attribute",
                                         path=f"{where} -> {name}", actual=None, expected=name)
            _check_nodes(function.node, callee, functions, sets,
                         f"{where} -> function {function.domain}.{function.name}", depth + 1)


def check_model(model) -> int:
    """Validate parameter sets, encoded initializers and parameter_ref attributes of a model.

    Returns the number of encoded initializers checked. Errors keep their rule code and are also
    ``onnx.checker.ValidationError`` instances when onnx is installed (OL-SHR-11).
    """
    try:
        bare = as_pb_model(model)
        sets = parameter_catalogue(bare)
        checked = check_model_values(bare)
        rich = model
        if isinstance(model, pb.ModelProto):
            try:
                import onnx

                rich = onnx.ModelProto.FromString(model.SerializeToString())
            except (ImportError, DecodeError):
                # checked with the package's own types, where function defaults (attribute_proto) are
                # unknown fields: without onnx, or when onnx cannot read a field onnx-light leaves
                # unknown (a damaged sparse_initializer, graph field 15)
                pass
        functions = {(f.domain, f.name): f for f in rich.functions}
        _check_nodes(rich.graph.node, None, functions, sets, "model -> graph")
    except HurrayDeclError as err:
        cls = validation_error_class()
        raise cls(err.code, err.detail, path=err.path, offset=err.offset, actual=err.actual,
                  expected=err.expected) from err
    return checked


# --- serializations that cannot carry onnx-light extensions ---------------------------------------

def _extensions(model: pb.ModelProto) -> list[str]:
    """Where a model holds what plain ONNX cannot: catalogue, encoded initializers, parameter sets."""
    found = []
    if len(model.struct_types):
        found.append("model -> struct_types")
    for graph, path in _graphs(model.graph, "model -> graph"):
        if len(graph.encoded_initializer):
            found.append(f"{path} -> encoded_initializer")
        if any(a.tensor_name.startswith(PARAMETERS_PREFIX) for a in graph.quantization_annotation):
            found.append(f"{path} -> quantization_annotation")
    return found


def serialize_for_ort(model) -> bytes:
    """The model's bytes for onnxruntime, which cannot read onnx-light extensions (OL-SHR-35).

    Parameter-set annotations, encoded initializers and the struct-type catalogue are refused
    rather than dropped.
    """
    found = _extensions(as_pb_model(model))
    if found:
        raise OnnxLightError("OL-SHR-35", "native ORT serialization cannot hold quantization parameter sets, "
                             "encoded initializers or struct types", path=found[0], actual=found)
    return model.SerializeToString()


def model_to_textproto(model) -> str:
    """The model as ONNX text format, refusing anything the text would silently drop (OL-SHR-36).

    The text uses ONNX's own schema (``onnx`` when installed), which has no struct types, encoded
    initializers or parameter_ref: a model whose text does not parse back to the same bytes is
    refused.
    """
    from google.protobuf import text_format

    try:
        import onnx
    except ImportError:
        cls = None
    else:
        cls = onnx.ModelProto
    bare = as_pb_model(model)
    found = _extensions(bare)
    if cls is not None:
        try:
            message = cls.FromString(bare.SerializeToString())
        except DecodeError:  # a field onnx-light leaves unknown that ONNX reads as a message, and cannot
            message = None
            found = found or ["model (a field ONNX cannot read)"]
        text = "" if message is None else text_format.MessageToString(message)
        if message is not None and text_format.Parse(text, cls()).SerializeToString(deterministic=True) \
                != message.SerializeToString(deterministic=True):
            found = found or ["model (a field ONNX text format cannot represent)"]
    else:
        text = text_format.MessageToString(bare)
    if found:
        raise OnnxLightError("OL-SHR-36", "text format cannot represent structured or shared values; "
                             "refusing rather than dropping their references", path=found[0], actual=found)
    return text
