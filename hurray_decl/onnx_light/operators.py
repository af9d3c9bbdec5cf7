"""``ai.rt::Quantize`` and ``ai.rt::Dequantize`` (opset 1) for ``onnx.reference.ReferenceEvaluator``.

DIGEST.md § 12, RULES.md OL-OP. The operators are onnx-light extensions, not ONNX
QuantizeLinear/DequantizeLinear. Encoded edges are Python objects in the evaluator's value map:

* :class:`QuantizedValue` wraps a self-contained EncodedValueProto (portable or ORT) together with
  the model whose struct-type catalogue its ``type_ref`` may point into;
* :class:`~hurray_decl.onnx_light.shared.SharedQuantizedValue` is a compact value with its
  retained parameter set.

Both have ``copy()`` (Identity passes the same value and owner on) and ``todense()`` (the
dequantized tensor), which is what the evaluator requires of a non-tensor value.

A session binds the operators to its model with :func:`quantization_operators` (or builds the
evaluator with :func:`make_reference_evaluator`): the bound classes hold a snapshot of the
model's struct-type catalogue and parameter sets, taken once, so later edits to the model do not
change the session (OL-SHR-33). :func:`infer_shapes_model` records the types these operators
produce (OL-OP-10, -11); ``onnx.shape_inference.infer_shapes`` does not know them.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun

from hurray_decl.errors import HurrayDeclError, OnnxLightError
from hurray_decl.onnx_light.calibrate import quantize_with_type
from hurray_decl.onnx_light.codec import dequantize_value
from hurray_decl.onnx_light.model import check_model
from hurray_decl.onnx_light.numerics import LOGICAL_CODES, LOGICAL_DTYPE_NAMES, LOGICAL_DTYPES, LOGICAL_NAMES
from hurray_decl.onnx_light.shared import (
    EncodedValue,
    SharedQuantizedValue,
    as_pb_model,
    compact_value,
    parameter_catalogue,
)
from hurray_decl.onnx_light.wire import logical_shape, pb, resolve_struct_type, same_message

__all__ = [
    "DOMAIN",
    "QUANTIZE_INPUTS",
    "Dequantize",
    "QuantizationEvaluator",
    "Quantize",
    "QuantizedValue",
    "infer_shapes_model",
    "make_reference_evaluator",
    "quantization_operators",
    "struct_type_proto",
]

DOMAIN = "ai.rt"
QUANTIZE_INPUTS = ("X", "scales", "zero_points", "offsets", "codebooks", "permutation", "forward", "inverse",
                   "outliers")
"""Quantize's inputs in order (OL-OP-01); permutation and outliers are INT64, the rest floating."""

_INDEX_INPUTS = ("permutation", "outliers")
_FLOATING = tuple(LOGICAL_DTYPES.values())


def _fail(code: str, message: str, path: str, actual: Any = None, expected: Any = None) -> OnnxLightError:
    return OnnxLightError(code, message, path=path, actual=actual, expected=expected)


def struct_type_proto(struct_type):
    """An ``onnx.TypeProto`` holding ``struct_type`` (onnx-light's TypeProto field 1000).

    onnx's own schema has no struct_type, so ``onnx.TypeProto(struct_type=...)`` cannot be
    written; the field is carried as bytes onnx keeps when it parses and serializes. Use the
    result as Quantize's ``type`` attribute or a graph output's type.
    """
    from onnx import TypeProto as OnnxTypeProto

    holder = pb.TypeProto()
    holder.struct_type.CopyFrom(struct_type if isinstance(struct_type, pb.StructTypeProto)
                                else pb.StructTypeProto.FromString(struct_type.SerializeToString()))
    return OnnxTypeProto.FromString(holder.SerializeToString())


class QuantizedValue(EncodedValue):
    """A self-contained encoded value on a graph edge, with the model its type_ref resolves in."""

    __slots__ = ("_model",)

    def __init__(self, encoded, model: pb.ModelProto | None = None) -> None:
        super().__init__(encoded)
        self._model = model

    @property
    def model(self) -> pb.ModelProto | None:
        return self._model

    def has_parameter_ref(self) -> bool:
        return False

    def copy(self) -> QuantizedValue:
        return QuantizedValue(self._encoded, self._model)

    def todense(self) -> np.ndarray:
        return dequantize_value(self._encoded, self._model)

    def __repr__(self) -> str:
        return f"QuantizedValue(name={self.name!r}, {self._encoded.struct_type.name or 'type_ref'}, " \
               f"{len(self.raw_data)} bytes)"


class _Bound:
    """The catalogue snapshot an operator class is bound to (None: no model)."""

    model: pb.ModelProto | None = None
    _sets: dict | None = None

    @classmethod
    def parameter_sets(cls) -> dict:
        if cls._sets is None:
            cls._sets = parameter_catalogue(cls.model) if cls.model is not None else {}
        return cls._sets


def _struct_type(attribute, path: str) -> pb.StructTypeProto:
    """The struct_type a TYPE_PROTO attribute holds, inline or as a type_ref (OL-OP-03)."""
    proto = getattr(attribute, "type_proto", attribute)
    if attribute is None or not hasattr(proto, "SerializeToString"):
        raise _fail("OL-OP-03", "Quantize requires its type attribute (a TYPE_PROTO with a struct_type)", path,
                    None, "type")
    type_proto = pb.TypeProto.FromString(proto.SerializeToString())
    if type_proto.WhichOneof("value") != "struct_type":
        raise _fail("OL-OP-03", "the type attribute holds no struct_type", path, type_proto.WhichOneof("value"),
                    "struct_type")
    return type_proto.struct_type


def _input_array(value, name: str) -> np.ndarray | None:
    if value is None:
        return None
    array = np.asarray(value)
    if name in _INDEX_INPUTS:
        if array.dtype != np.int64:
            raise _fail("OL-OP-02", f"{name} must be INT64", name, str(array.dtype), "int64")
    elif array.dtype not in _FLOATING:
        raise _fail("OL-OP-02", f"{name} must be {LOGICAL_NAMES}", name, str(array.dtype), LOGICAL_DTYPE_NAMES)
    return array


class Quantize(OpRun, _Bound):
    """``Y = Quantize(X, scales?, zero_points?, offsets?, codebooks?, permutation?, forward?, inverse?,
    outliers?)`` with attributes ``type`` (required) and ``parameter_ref`` (OL-OP-01 .. -06)."""

    op_domain = DOMAIN

    def _run(self, *inputs, type=None, parameter_ref=None):  # "type" is the attribute's ONNX name
        node = self.onnx_node
        if not 1 <= len(inputs) <= len(QUANTIZE_INPUTS) or len(node.output) != 1:
            raise _fail("OL-OP-01", "Quantize takes 1 to 9 inputs and has one output", "node",
                        (len(inputs), len(node.output)), "1..9 inputs, 1 output")
        output = node.output[0]
        if not output:
            raise _fail("OL-OP-05", "Quantize's output must be named", "node -> output[0]", "", "a name")
        arrays = {name: _input_array(value, name) for name, value in zip(QUANTIZE_INPUTS, inputs)}
        x = arrays["X"]
        if x is None:
            raise _fail("OL-OP-01", "Quantize needs its X input", "X", None, "a tensor")
        requested = _struct_type(type, "type")
        # an omitted input and an empty tensor both mean "not supplied"
        optional = {k: (v if v is not None and v.size else None) for k, v in arrays.items() if k != "X"}
        if parameter_ref is not None:
            if not isinstance(parameter_ref, str) or not parameter_ref:
                raise _fail("OL-OP-04", "parameter_ref must be a non-empty string", "parameter_ref",
                            repr(parameter_ref), "a set name")
            given = [k for k, v in optional.items() if v is not None]
            if given:
                raise _fail("OL-SHR-13", "a Quantize with parameter_ref takes no optional input; the set is "
                            "never overridden", given[0], given, "no optional inputs")
            sets = self.parameter_sets()
            if parameter_ref not in sets:
                raise _fail("OL-SHR-29", "the model declares no parameter set of this name", "parameter_ref",
                            parameter_ref, sorted(sets))
            chosen = sets[parameter_ref]
            resolved = resolve_struct_type(requested, self.model, "type")
            if not same_message(resolved, chosen.storage):
                raise _fail("OL-SHR-15", "the requested type differs from the parameter set's storage type",
                            "type", resolved.name, chosen.storage.name)
            return (compact_value(chosen, x, output),)
        encoded = quantize_with_type(x, requested, model=self.model, **optional)
        encoded.name = output
        return (QuantizedValue(encoded, self.model),)


class Dequantize(OpRun, _Bound):
    """``Y = Dequantize(X)`` with the required attribute ``dtype`` in {1, 11, 10, 16} (OL-OP-07 .. -09)."""

    op_domain = DOMAIN

    def _run(self, x, dtype=None):
        if isinstance(dtype, bool) or not isinstance(dtype, (int, np.integer)) or int(dtype) not in LOGICAL_DTYPES:
            raise _fail("OL-OP-07", f"Dequantize's dtype must be {LOGICAL_NAMES}", "dtype", dtype, LOGICAL_CODES)
        target = LOGICAL_DTYPES[int(dtype)]
        if isinstance(x, SharedQuantizedValue):
            value, model = x.materialize(), None
        elif isinstance(x, QuantizedValue):
            value, model = x._encoded, x.model
        elif hasattr(x, "SerializeToString"):
            value, model = x, self.model
        else:
            raise _fail("OL-OP-09", "Dequantize takes an encoded value", "X", type(x).__name__, "an encoded value")
        try:
            return (dequantize_value(value, model, dtype=target),)
        except OnnxLightError as err:
            if err.code != "OL-NUM-25":
                raise
            raise _fail("OL-OP-08", f"the result does not fit {target.name}: {err.detail}", err.path,
                        err.actual, err.expected) from err


def quantization_operators(model: Any = None) -> list[type[Quantize] | type[Dequantize]]:
    """Quantize and Dequantize classes bound to ``model``'s catalogue and parameter sets.

    The snapshot is taken here: a later change to the model does not reach these classes.
    """
    bound = None
    if model is not None:
        bound = pb.ModelProto.FromString(as_pb_model(model).SerializeToString())
    sets = parameter_catalogue(bound) if bound is not None else {}
    attributes = {"model": bound, "_sets": sets, "__module__": __name__}
    # type() makes a subclass of the one base it is given; typeshed types what it makes as plain ``type``
    return [cast("type[Quantize]", type("Quantize", (Quantize,), dict(attributes))),
            cast("type[Dequantize]", type("Dequantize", (Dequantize,), dict(attributes)))]


class QuantizationEvaluator(ReferenceEvaluator):
    """A ReferenceEvaluator with the ai.rt operators bound to its model's catalogue.

    Building it checks the model (:func:`~hurray_decl.onnx_light.model.check_model`: parameter
    sets, encoded initializers, parameter_ref attributes) and loads the encoded initializers,
    compact ones without materializing them. Model-local functions and subgraphs are evaluated
    with the same bound operators, so they see the same parameter sets (OL-SHR-30).
    """

    operators_: list | None = None

    def __init__(self, proto, **kwargs) -> None:
        self.encoded_initializers_: dict[str, Any] = {}
        new_ops = list(kwargs.pop("new_ops", ()) or ())
        if hasattr(proto, "graph"):      # a model: bind the operators and check it
            from onnx import ModelProto as OnnxModelProto

            operators = quantization_operators(proto)
            bound = operators[0].model
            check_model(bound)
            self.__class__ = type(type(self).__name__, (type(self),), {"operators_": operators})
            sets = operators[0].parameter_sets()
            for value in bound.graph.encoded_initializer if bound is not None else ():  # bound: proto is a model
                self.encoded_initializers_[value.name] = (
                    SharedQuantizedValue(value, sets[value.parameter_ref]) if value.HasField("parameter_ref")
                    else QuantizedValue(value, bound))
            if isinstance(proto, pb.ModelProto):   # the evaluator reads onnx's own message class
                proto = OnnxModelProto.FromString(proto.SerializeToString())
        super().__init__(proto, new_ops=new_ops + list(type(self).operators_ or ()), **kwargs)

    def run(self, output_names, feed_inputs, *args, **kwargs):
        feeds = dict(self.encoded_initializers_)
        feeds.update(feed_inputs)
        return super().run(output_names, feeds, *args, **kwargs)


def make_reference_evaluator(model, **kwargs) -> QuantizationEvaluator:
    """A reference evaluator for ``model`` with Quantize and Dequantize bound to its catalogue."""
    return QuantizationEvaluator(model, **kwargs)


# --- type and shape inference ---------------------------------------------------------------------

def _type_with_struct(struct: pb.StructTypeProto) -> pb.TypeProto:
    out = pb.TypeProto()
    out.struct_type.CopyFrom(struct)
    return out


def _node_type_attribute(node: pb.NodeProto):
    for attribute in node.attribute:
        if attribute.name == "type" and attribute.HasField("tp"):
            return attribute.tp
    return None


def _string_attribute(node: pb.NodeProto, name: str) -> str | None:
    for attribute in node.attribute:
        if attribute.name == name and not attribute.ref_attr_name:
            return attribute.s.decode("utf-8", "replace")
    return None


def _int_attribute(node: pb.NodeProto, name: str) -> int | None:
    for attribute in node.attribute:
        if attribute.name == name:
            return int(attribute.i)
    return None


def infer_shapes_model(model):
    """A copy of ``model`` with value_info for ai.rt::Quantize, Identity-of-encoded and
    ai.rt::Dequantize outputs (OL-OP-10, -11).

    Quantize's output gets its physical struct type: the ``type`` attribute's struct_type, or the
    compact type of its ``parameter_ref`` set. Dequantize's output gets the requested dtype, and
    the logical shape when its input is a concrete encoded initializer. The result has the class
    of ``model`` (an ``onnx.ModelProto`` stays one).
    """
    bare = pb.ModelProto.FromString(as_pb_model(model).SerializeToString())
    graph = bare.graph
    sets = parameter_catalogue(bare)
    known: dict[str, pb.TypeProto] = {}
    encoded = {value.name: value for value in graph.encoded_initializer}
    declared = {info.name for info in graph.value_info} | {info.name for info in graph.output}
    for node in graph.node:
        if not node.output:
            continue
        inferred = None
        if (node.domain, node.op_type) == (DOMAIN, "Quantize"):
            reference = _string_attribute(node, "parameter_ref")
            if reference and reference in sets:
                inferred = _type_with_struct(sets[reference].compact_type)
            else:
                tp = _node_type_attribute(node)
                if tp is not None and tp.WhichOneof("value") == "struct_type":
                    inferred = _type_with_struct(tp.struct_type)
        elif node.domain in ("", "ai.onnx") and node.op_type == "Identity" and node.input \
                and node.input[0] in known:
            inferred = known[node.input[0]]
        elif (node.domain, node.op_type) == (DOMAIN, "Dequantize"):
            dtype = _int_attribute(node, "dtype")
            if dtype in LOGICAL_DTYPES:
                inferred = pb.TypeProto()
                inferred.tensor_type.elem_type = dtype
                source = encoded.get(node.input[0]) if node.input else None
                if source is not None:
                    try:
                        _, shape = logical_shape(source.logical_type, "encoded_initializer -> logical_type")
                    except HurrayDeclError:
                        shape = None
                    if shape is not None:
                        inferred.tensor_type.shape.SetInParent()
                        for d in shape:
                            inferred.tensor_type.shape.dim.add().dim_value = d
        if inferred is None:
            continue
        known[node.output[0]] = inferred
        if node.output[0] not in declared:
            info = graph.value_info.add()
            info.name = node.output[0]
            info.type.CopyFrom(inferred)
    return type(model).FromString(bare.SerializeToString()) if not isinstance(model, pb.ModelProto) else bare
