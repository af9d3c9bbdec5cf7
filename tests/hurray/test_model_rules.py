"""Models run the bytes-level rules of their declaration when built, with the reader's codes, and
no model however built (constructor, ``model_copy(update=...)``, ``model_construct``, JSON) makes
the writer, ``validate_buffers`` or ``dequantize`` raise anything but a HurrayDeclError."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from hurray_decl import MXFP, NF4, PerBlockAffine, PerChannelAffine, PerTensorAffine
from hurray_decl.declare.model import FrozenModel
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray.numerics import dequantize
from hurray_decl.hurray.strategies import buffers_for, tensor_descriptors
from hurray_decl.hurray.tensor import (
    CSF,
    BlockPaged,
    BufferHandle,
    CompositeHead,
    CompositeMember,
    ExtensionType,
    Hilbert,
    Morton,
    Shard,
    Statistics,
    TensorDescriptor,
    Tiled,
    read_tensor_descriptor,
    validate_buffers,
    write_tensor_descriptor,
)
from tests.helpers import raises_rule

# (model class, fields that break one bytes-level rule of its declaration, the reader's code, field)
BYTES_RULES = [
    (PerBlockAffine, dict(axis=0, block_size=0, scale_buffer_index=1, flags=1), "HQ-PB-04", "block_size"),
    (PerBlockAffine, dict(axis=0, block_size=6, scale_buffer_index=1, flags=1), "HQ-PB-03", "block_size"),
    (PerBlockAffine, dict(axis=0, block_size=4, scale_buffer_index=1, flags=1, scale_type_tag=9), "HQ-PB-08",
     "scale_type_tag"),
    (NF4, dict(axis=0, block_size=0, scale_buffer_index=1), "HQ-NF4-04", "block_size"),
    (NF4, dict(axis=0, block_size=24, scale_buffer_index=1), "HQ-NF4-03", "block_size"),
    (MXFP, dict(axis=0, block_size=0, scale_buffer_index=1), "HQ-MX-04", "block_size"),
    (MXFP, dict(axis=0, block_size=4096, scale_buffer_index=1), "HQ-MX-05", "block_size"),
    (MXFP, dict(axis=0, block_size=32, scale_buffer_index=0xFFFFFFFF), "HQ-BUF-01", "scale_buffer_index"),
    (PerTensorAffine, dict(scale=math.nan), "HQ-PT-03", "scale"),
    (PerTensorAffine, dict(scale=math.inf), "HQ-PT-03", "scale"),
    (PerTensorAffine, dict(scale=0.0), "HQ-PT-02", "scale"),
    (PerTensorAffine, dict(scale=-0.0), "HQ-PT-02", "scale"),
    (PerTensorAffine, dict(scale=1.0, scheme_version=2), "HQ-HDR-11", "scheme_version"),
    (PerChannelAffine, dict(axis=0, scale_buffer_index=1, flags=1, scale_type_tag=1), "HQ-PC-06", "scale_type_tag"),
    (PerChannelAffine, dict(axis=0, scale_buffer_index=1, flags=3), "HQ-HDR-13", "flags"),
    (Tiled, dict(tile_shape=(2, 0)), "HT-LAY-08", "tile_shape"),
    (Tiled, dict(tile_shape=(2, 2), outer_layout=5), "HT-LAY-09", "outer_layout"),
    (Tiled, dict(tile_shape=(2, 2), inner_layout=0), "HT-LAY-10", "inner_layout"),
    (Morton, dict(morton_bits=(1, 0)), "HT-LAY-17", "morton_bits"),
    (BlockPaged, dict(page_size=0, num_pages=1), "HT-LAY-55", "page_size"),
    (BlockPaged, dict(page_size=1, num_pages=1, kv_role=3), "HT-LAY-53", "kv_role"),
    (Hilbert, dict(hilbert_order=0, hilbert_rank=2), "HT-LAY-78", "hilbert_order"),
    (Hilbert, dict(hilbert_order=1, hilbert_rank=1), "HT-LAY-80", "hilbert_rank"),
    (CompositeHead, dict(composition_rule=0x02, combine_op=0, member_count=1), "HT-LAY-72", "combine_op"),
    (CompositeHead, dict(composition_rule=0x01, member_count=0xFFFFFFFF), "HT-LAY-74", "member_count"),
    (CompositeHead, dict(composition_rule=0x04, member_count=1), "HT-LAY-69", "composition_rule"),
    (BufferHandle, dict(byte_size=8, alignment=48), "HT-BUFT-12", "alignment"),
    (BufferHandle, dict(byte_size=8, alignment=32), "HT-BUFT-13", "alignment"),
    (BufferHandle, dict(device_tag=0xFF), "HT-BUFT-14", "device_tag"),
    (BufferHandle, dict(device_tag=0x20), "HT-BUFT-15", "device_tag"),
    (BufferHandle, dict(sync_mode=3), "HT-BUFT-17", "sync_mode"),
    (BufferHandle, dict(sync_mode=1), "HT-BUFT-18", "sync_mode"),
    (Statistics, dict(computed_mask=0x40), "HT-SEC-09", "computed_mask"),
    (Statistics, dict(computed_mask=0x08, value_stddev=-1.0), "HT-SEC-14", "value_stddev"),
    (Statistics, dict(computed_mask=0x08, value_stddev=math.nan), "HT-SEC-14", "value_stddev"),
    (Statistics, dict(computed_mask=0x10, nm_n=4, nm_m=2), "HT-SEC-15", "nm_m"),
    (Statistics, dict(computed_mask=0x20, has_nan=2), "HT-SEC-08", "has_nan"),
    (ExtensionType, dict(bit_width=0), "HT-SEC-22", "bit_width"),
    (ExtensionType, dict(bit_width=3), "HT-SEC-24", "bit_width"),
    (ExtensionType, dict(bit_width=12), "HT-SEC-34", "bit_width"),
    (ExtensionType, dict(bit_width=4, packing_factor=1), "HT-SEC-25", "packing_factor"),
    (ExtensionType, dict(bit_width=8, is_float=1, is_signed=1), "HT-SEC-26", "is_signed"),
    (CompositeMember, dict(member_role=2), "HT-SEC-36", "member_role"),
    (TensorDescriptor, dict(type_tag=0x00), "HE-02", "type_tag"),
    (TensorDescriptor, dict(type_tag=0x47), "HE-06", "type_tag"),
    (TensorDescriptor, dict(type_tag=0x90), "HE-05", "type_tag"),
    (TensorDescriptor, dict(type_tag=0x03, version_major=2), "HT-HDR-05", "version_major"),
    (TensorDescriptor, dict(type_tag=0x03, version_major=0), "HT-HDR-06", "version_major"),
    (TensorDescriptor, dict(type_tag=0x03, flags=1 << 9), "HT-HDR-12", "flags"),
    (TensorDescriptor, dict(type_tag=0x03, shape=(1,) * 65), "HT-HDR-13", "rank"),
    (TensorDescriptor, dict(type_tag=0x03, layout_tag=0xFF), "HT-HDR-15", "layout_tag"),
    (TensorDescriptor, dict(type_tag=0x03, descriptor_length=12), "HT-HDR-07", "descriptor_length"),
]


@pytest.mark.parametrize("cls, fields, code, field", BYTES_RULES,
                         ids=[f"{c.__name__}-{code}-{i}" for i, (c, _, code, _f) in enumerate(BYTES_RULES)])
def test_building_a_model_runs_its_bytes_rules(cls, fields, code, field):
    with raises_rule(code, path=field) as info:
        cls(**fields)
    assert info.value.offset is None  # a model in memory has no byte positions
    with raises_rule(code, path=field):  # from JSON alike
        cls.load(fields)


def test_paths_name_the_part_of_the_descriptor():
    with raises_rule("HT-LAY-08", path="descriptor -> layout -> tile_shape"):
        Tiled(tile_shape=(0,))
    with raises_rule("HT-BUFT-14", path="descriptor -> buffers -> device_tag"):
        BufferHandle(device_tag=0xFF)


def test_a_bypassed_model_is_refused_by_writer_validation_and_dequantize():
    """model_copy(update=...) and model_construct skip validation: the entry points do not."""
    good = TensorDescriptor(type_tag=0x10, shape=(4, 8), quantization=PerBlockAffine(
        axis=1, block_size=4, scale_buffer_index=1, symmetric=True, scale_type_tag=3),
        buffers=(BufferHandle(byte_size=32), BufferHandle(byte_size=32)))
    contents = [bytes(16) + bytes(16), b"\x00\x00\x80\x3f" * 8]
    bad = good.model_copy(update={"quantization": good.quantization.model_copy(update={"block_size": 0})})
    for call in (lambda: write_tensor_descriptor(bad), lambda: validate_buffers(bad, contents),
                 lambda: dequantize(bad, contents)):
        with raises_rule("HQ-PB-04", path="block_size"):
            call()
    tiled = TensorDescriptor(type_tag=0x03, shape=(4, 4), layout=Tiled(tile_shape=(2, 2)),
                             buffers=(BufferHandle(byte_size=64),))
    zero_tile = tiled.model_copy(update={"layout": Tiled.model_construct(tile_shape=(2, 0))})
    for call in (lambda: write_tensor_descriptor(zero_tile), lambda: validate_buffers(zero_tile, [bytes(64)])):
        with raises_rule("HT-LAY-08"):
            call()
    nan = TensorDescriptor.model_construct(type_tag=0x10, shape=(4,), quantization=PerTensorAffine.model_construct(
        scale=math.nan, zero_point=0, scheme_tag=1), buffers=(BufferHandle(byte_size=4),))
    with raises_rule("HQ-PT-03"):
        dequantize(nan, [bytes(4)])


def test_only_a_model_validated_in_full_skips_validation_again():
    """checked() returns a model its constructor or a reader validated as it is (frozen, so still
    valid), and rebuilds anything else: a model_copy of a validated model, and a copy given a
    model_construct child."""
    axis_ok = PerBlockAffine(axis=1, block_size=4, scale_buffer_index=1, symmetric=True, scale_type_tag=3)
    good = TensorDescriptor(type_tag=0x10, shape=(4, 8), quantization=axis_ok,
                            buffers=(BufferHandle(byte_size=32), BufferHandle(byte_size=32)))
    assert good.checked() is good and axis_ok.checked() is axis_ok
    read = read_tensor_descriptor(write_tensor_descriptor(good))
    assert read.checked() is read
    child = PerBlockAffine.model_construct(**{**dict(axis_ok), "block_size": 0})
    with raises_rule("HQ-PB-04", path="block_size"):  # the constructor checks what it is given
        TensorDescriptor(type_tag=0x10, shape=(4, 8), quantization=child, buffers=good.buffers)
    holding = good.model_copy(update={"quantization": child})
    with raises_rule("HQ-PB-04", path="block_size"):
        holding.checked()
    copied = good.model_copy()
    assert copied.checked() is not copied and copied.checked() == good


# ---------------------------------------------------------------- any model, however built

ODD_VALUES = st.one_of(
    st.integers(-(1 << 70), 1 << 70),
    st.sampled_from([0, 1, -1, 2, 3, 0x47, 0xFF, 0x100, 0xFFFF_FFFF, 1 << 32, (1 << 64) - 1, 1 << 64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(), st.booleans(), st.text(max_size=3), st.binary(max_size=6),
    st.lists(st.integers(-2, (1 << 64) + 1), max_size=6).map(tuple),
    st.lists(st.integers(0, 3), min_size=65, max_size=70).map(tuple),
)


def _parts(d: TensorDescriptor) -> list[str]:
    names = ["", "layout", "quantization", "shard", "statistics", "extension_type", "composite_member"]
    buffers = getattr(d, "buffers", ())
    return [n for n in names if n == "" or isinstance(getattr(d, n, None), FrozenModel)] + [
        f"buffers[{i}]" for i, b in enumerate(buffers if isinstance(buffers, tuple) else ())
        if isinstance(b, FrozenModel)]


def _mutate(d: TensorDescriptor, part: str, field: str | None, value: Any, constructed: bool) -> TensorDescriptor:
    if part.startswith("buffers["):
        i = int(part[8:-1])
        target = d.buffers[i]
    else:
        target = getattr(d, part) if part else d
    if not isinstance(target, FrozenModel):
        return d
    names = list(type(target).model_fields)
    if not names:
        return d
    name = field if field in names else names[hash(field) % len(names)]
    values = {n: target.__dict__[n] for n in names if n in target.__dict__}
    values[name] = value
    new = type(target).model_construct(**values) if constructed else target.model_copy(update={name: value})
    if part.startswith("buffers["):
        buffers = list(d.buffers)
        buffers[i] = new
        return d.model_copy(update={"buffers": tuple(buffers)})
    return d.model_copy(update={part: new}) if part else new


@st.composite
def odd_models(draw: st.DrawFn) -> tuple[TensorDescriptor, tuple[bytes, ...]]:
    d = draw(tensor_descriptors())
    contents = draw(buffers_for(d))
    for _ in range(draw(st.integers(1, 3))):
        part = draw(st.sampled_from(_parts(d)))
        d = _mutate(d, part, draw(st.text(min_size=1, max_size=1)), draw(ODD_VALUES), draw(st.booleans()))
    return d, contents


def _only_rule_errors(call) -> None:
    try:
        call()
    except HurrayDeclError as err:
        assert err.code, err


@settings(max_examples=300, suppress_health_check=list(HealthCheck), deadline=None)
@given(odd_models())
@example((TensorDescriptor.model_construct(type_tag=0x03), ()))
@example((TensorDescriptor.model_construct(type_tag="x", shape="abc", buffers=5), ()))
def test_no_model_makes_an_entry_point_raise_a_foreign_exception(case):
    d, contents = case
    for kw in ({}, {"permissive": True}, {"writer_rules": True}):
        _only_rule_errors(partial(write_tensor_descriptor, d, **kw))
    for permissive in (False, True):
        _only_rule_errors(partial(validate_buffers, d, contents, permissive=permissive))
    _only_rule_errors(lambda: dequantize(d, contents))


@settings(max_examples=200, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.sampled_from([PerTensorAffine, PerChannelAffine, PerBlockAffine, NF4, MXFP, Tiled, Morton, CSF,
                        BlockPaged, CompositeHead, Hilbert, BufferHandle, Shard, Statistics, ExtensionType,
                        CompositeMember, TensorDescriptor]),
       st.dictionaries(st.sampled_from(["axis", "block_size", "scale", "zero_point", "scale_buffer_index",
                                        "zero_point_buffer_index", "scale_type_tag", "flags", "tile_shape",
                                        "outer_layout", "inner_layout", "morton_bits", "nnz", "mode_order",
                                        "page_size", "num_pages", "composition_rule", "member_count",
                                        "byte_size", "alignment", "device_tag", "bit_width", "type_tag",
                                        "shape", "parent_shape", "shard_offset", "computed_mask"]),
                       ODD_VALUES, max_size=5))
def test_constructors_raise_only_rule_errors(cls, fields):
    _only_rule_errors(lambda: cls(**fields))
    _only_rule_errors(lambda: cls.load(fields))
