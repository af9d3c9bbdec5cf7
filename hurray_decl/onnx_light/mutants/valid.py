"""Valid onnx-light inputs of every profile, ORT layout and compact form, built from a :class:`Source`
of choices (seeded, or drawn by Hypothesis)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hurray_decl.onnx_light.codec import make_quantization_type, quantize_array
from hurray_decl.onnx_light.inputs import MODEL, TENSOR, VALUE
from hurray_decl.onnx_light.numerics import LOGICAL_DTYPES, DataType
from hurray_decl.onnx_light.ort import FLOATING, IMPLICIT, ORT_FORMATS, PACKED, make_matmul_nbits_plan
from hurray_decl.onnx_light.plan import make_quantization_plan
from hurray_decl.onnx_light.profiles import PROFILES, QuantizationFormat, QuantizationMethod
from hurray_decl.onnx_light.shared import add_quantization_parameters, quantize_tensor_shared
from hurray_decl.onnx_light.tensors import array_to_tensor
from hurray_decl.onnx_light.wire import make_logical_type, pb

PORTABLE = tuple(f for f in QuantizationFormat if f.portable)
ORT = tuple(ORT_FORMATS)


class Source:
    """The choices a builder makes; subclasses draw them from a seed or from Hypothesis."""

    def integer(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self.integer(0, len(options) - 1)]

    def coin(self) -> bool:
        return bool(self.integer(0, 1))

    def floats(self, count: int, lo: float, hi: float) -> np.ndarray:
        """``count`` values on a grid of eighths in [lo, hi] (exact in every source dtype)."""
        steps = int((hi - lo) * 8)
        return np.array([lo + self.integer(0, steps) / 8 for _ in range(count)], dtype=np.float64)


class RandomSource(Source):
    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self.random.randint(lo, hi)


@dataclass(frozen=True)
class Case:
    """One input file: its bytes, kind, the rule it breaks (None when valid) and what changed."""

    data: bytes
    kind: str
    rule: str | None
    field: str = ""          # the path prefix of the changed field, as the dump names it
    description: str = ""


def _shape(count: int, src: Source) -> tuple[int, ...]:
    if count and count % 2 == 0 and src.coin():
        return (2, count // 2)
    return (count,)


def _portable_plan(fmt: QuantizationFormat, count: int, src: Source, block: int | None = None) -> Any:
    defaults = PROFILES[fmt]
    block = src.integer(1, max(1, count)) if block is None else block
    plan = make_quantization_plan(fmt, count, block_size=block)
    for i, run in enumerate(plan.runs):
        if defaults.method == QuantizationMethod.AFFINE and i == 1 and src.coin():
            run.layout.bits = src.integer(2, 8)  # a mixed-precision run (exl2 style)
        blocks = run.blocks
        for b in blocks:
            b.scale = src.choice((0.25, 0.5, 1.0, 2.0))
            if defaults.method == QuantizationMethod.AFFINE and not defaults.signed:
                b.zero_point = float(src.integer(0, (1 << int(run.layout.bits)) - 1))
            if defaults.method == QuantizationMethod.AFFINE and src.coin():
                b.offset = src.choice((0.0, 0.5, -1.25))
            if defaults.learned:
                size = run.layout.books * run.layout.entries * run.layout.vector_size
                b.codebook = list(src.floats(size, -2.0, 2.0))
        run.blocks = blocks
        plan.set_run(i, run)
    if count and src.coin():
        order = list(range(count))
        for k in range(count - 1, 0, -1):
            j = src.integer(0, k)
            order[k], order[j] = order[j], order[k]
        plan.permutation = order
    n = 2 if count % 2 == 0 and count else 1
    if defaults.needs_transform or (count and src.coin()):
        plan.transform_size = n
        if n == 2:
            plan.forward, plan.inverse = [1.0, 1.0, 1.0, -1.0], [0.5, 0.5, 0.5, -0.5]
        else:
            plan.forward, plan.inverse = [2.0], [0.5]
    if count and src.coin():
        picked = sorted({src.integer(0, count - 1) for _ in range(src.integer(1, 3))})
        plan.outliers = picked
    return plan


def valid_value(src: Source, fmt: QuantizationFormat | None = None, *, count: int | None = None,
                block_size: int | None = None, name: str | None = None) -> pb.EncodedValueProto:
    """An encoded value of ``fmt`` (drawn when None), portable or ORT; ``count`` elements in
    blocks of ``block_size`` (both drawn when None)."""
    fmt = src.choice(tuple(QuantizationFormat)) if fmt is None else fmt
    if fmt in ORT_FORMATS:
        value = ort_value(fmt, src)
    else:
        count = src.integer(0, 24) if count is None else count
        dtype = LOGICAL_DTYPES[src.choice((DataType.FLOAT, DataType.FLOAT16, DataType.BFLOAT16, DataType.DOUBLE))]
        data = src.floats(count, -6.0, 6.0).astype(dtype).reshape(_shape(count, src))
        value = quantize_array(data, _portable_plan(fmt, count, src, block_size))
    if name is not None:
        value.name = name
    return value


def ort_value(fmt: QuantizationFormat, src: Source, storage: str | None = None) -> pb.EncodedValueProto:
    """An ORT value; ``storage`` picks implicit, packed or floating zero points (drawn when None)."""
    bits = ORT_FORMATS[fmt]
    k, n = src.integer(1, 40), src.integer(1, 3)
    block = src.choice((16, 32))
    plan = make_matmul_nbits_plan(fmt, k, n, block)
    storage = src.choice((IMPLICIT, PACKED, FLOATING)) if storage is None else storage
    run = plan.run(0)
    blocks = run.blocks
    for b in blocks:
        b.scale = src.choice((0.25, 0.5, 1.0, -0.5))
        if storage == PACKED:
            b.zero_point = float(src.integer(0, (1 << bits) - 1))
        elif storage == FLOATING:
            b.zero_point = src.choice((0.5, 1.25, 2.5))
    if storage == PACKED and all(b.zero_point == 1 << (bits - 1) for b in blocks):
        blocks[0].zero_point = 0.0
    run.blocks = blocks
    plan.set_run(0, run)
    dtype = LOGICAL_DTYPES[src.choice((DataType.FLOAT, DataType.FLOAT16, DataType.BFLOAT16))]
    return quantize_array(src.floats(k * n, -3.0, 3.0).reshape(k, n).astype(dtype), plan)


def model_with(*values: pb.EncodedValueProto) -> pb.ModelProto:
    model = pb.ModelProto(ir_version=10)
    model.graph.name = "onnx_light_values"
    model.opset_import.add(domain="", version=21)
    model.opset_import.add(domain="ai.rt", version=1)
    for value in values:
        model.graph.encoded_initializer.add().CopyFrom(value)
    return model


def compact_model(src: Source, fmt: QuantizationFormat | None = None) -> pb.ModelProto:
    """A model declaring parameter set ``common`` and holding one compact value ``w`` of it."""
    fmt = src.choice((QuantizationFormat.INT4, QuantizationFormat.INT8, QuantizationFormat.NF4,
                      QuantizationFormat.BINARY, QuantizationFormat.TQ2_0, QuantizationFormat.ORT_MATMULNBITS_INT4)) \
        if fmt is None else fmt
    model = model_with()
    shape: tuple[int, ...]
    if fmt in ORT_FORMATS:
        k, n = src.integer(1, 20), src.integer(1, 2)
        template = quantize_array(np.zeros((k, n), np.float32), make_matmul_nbits_plan(fmt, k, n, 16))
        storage, shape, blocks = template.struct_type, (k, n), n * -(-k // 16)
    else:
        count = src.integer(1, 16)
        block = src.integer(1, count)
        plan = make_quantization_plan(fmt, count, block_size=block)
        storage, shape, blocks = make_quantization_type(plan), (count,), sum(len(r) for r in plan.runs)
    scales = np.array([src.choice((0.5, 1.0, 2.0)) for _ in range(blocks)], np.float32)
    add_quantization_parameters(model, "common", storage, make_logical_type(DataType.FLOAT, shape), scales=scales)
    x = src.floats(int(np.prod(shape)), -4.0, 4.0).astype(np.float32).reshape(shape)
    compact = quantize_tensor_shared(x, model, "common").encoded
    compact.name = "w"
    model.graph.encoded_initializer.add().CopyFrom(compact)
    return model


def valid_case(src: Source, kind: str | None = None) -> Case:
    """A valid input of any kind: a value (any profile), a model (values, catalogue, compact) or a tensor."""
    kind = src.choice((VALUE, VALUE, VALUE, MODEL, TENSOR)) if kind is None else kind
    if kind == VALUE:
        value = valid_value(src)
        return Case(value.SerializeToString(), VALUE, None, description=value.struct_type.name)
    if kind == TENSOR:
        count = src.integer(0, 12)
        code = src.choice((DataType.FLOAT, DataType.FLOAT16, DataType.BFLOAT16, DataType.DOUBLE))
        tensor = array_to_tensor(src.floats(count, -4, 4).astype(LOGICAL_DTYPES[code]), code)
        tensor.name = "t"
        return Case(tensor.SerializeToString(), TENSOR, None, description="a floating TensorProto")
    choice = src.integer(0, 2)
    if choice == 0:
        model = compact_model(src)
    elif choice == 1:
        model = catalogue_model(src)
    else:
        model = model_with(valid_value(src, name="a"), valid_value(src, name="b"))
    return Case(model.SerializeToString(), MODEL, None, description="a model with encoded initializers")


def catalogue_model(src: Source, type_id: int = 7) -> pb.ModelProto:
    """A model whose value refers to its descriptor through the model catalogue (type_ref)."""
    value = valid_value(src, src.choice(PORTABLE), name="w")
    model = model_with()
    entry = model.struct_types.add()
    entry.CopyFrom(value.struct_type)
    entry.type_id = type_id
    value.struct_type.Clear()
    value.struct_type.type_ref = type_id
    model.graph.encoded_initializer.add().CopyFrom(value)
    return model
