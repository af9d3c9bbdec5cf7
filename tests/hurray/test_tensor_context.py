"""Each scheme checked against its tensor at read time: storage type, axis, shape and block
geometry (the HQ-* rules whose `needs` is `tensor`)."""

from __future__ import annotations

import pytest

from hurray_decl import MXFP, NF4, PerBlockAffine, PerChannelAffine, PerTensorAffine
from hurray_decl.hurray.tables.element_types import BY_NAME
from hurray_decl.hurray.tensor import COO, TensorDescriptor, read_tensor_descriptor, write_tensor_descriptor
from hurray_decl.hurray.tensor.common import DYNAMIC
from hurray_decl.hurray.tensor.context import TensorContext
from tests.helpers import covers, raises_rule
from tests.hurray.tensor_support import at, handle, patch_field, roundtrip, vector


def tensor(type_name, shape, sizes, q, **kw):
    return TensorDescriptor(type_tag=BY_NAME[type_name].tag, shape=shape, buffers=tuple(handle(s) for s in sizes),
                            quantization=q, **kw)


# ---------------------------------------------------------------- storage types


STORAGE = {
    "per_tensor_affine": ("HQ-PT-07", lambda: PerTensorAffine(scale=1.0),
                          {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int4", "uint4", "int2", "uint2"}),
    "per_channel_affine": ("HQ-PC-11", lambda: PerChannelAffine(axis=0, scale_buffer_index=1, symmetric=True),
                           {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int4", "uint4", "int2", "uint2"}),
    "per_block_affine": ("HQ-PB-14", lambda: PerBlockAffine(axis=0, block_size=2, scale_buffer_index=1,
                                                            symmetric=True),
                         {"int8", "uint8", "int4", "uint4", "int2", "uint2"}),
    "nf4": ("HQ-NF4-10", lambda: NF4(axis=0, block_size=8, scale_buffer_index=1), {"uint4"}),
    "mxfp": ("HQ-MX-09", lambda: MXFP(axis=0, block_size=16, scale_buffer_index=1),
             {"float8_e4m3", "float8_e5m2", "float4_e2m1", "float6_e2m3", "float6_e3m2", "int8", "int4"}),
}
"""Each scheme's storage list as DIGEST § 2.3 prints it, written out independently of the code."""


def _storage_case(scheme, type_name):
    code, make, allowed = STORAGE[scheme]
    q = make()
    shape = (32, 2)
    element = BY_NAME[type_name]
    data = -(-64 * element.bits // 8) if element.bits != 6 else 48
    params = {"per_tensor_affine": (), "per_channel_affine": (128,), "per_block_affine": (128,), "nf4": (32,),
              "mxfp": (4,)}[scheme]
    return code, allowed, tensor(type_name, shape, (data,) + params, q)


@pytest.mark.parametrize("scheme", sorted(STORAGE))
@pytest.mark.parametrize("type_name", sorted(BY_NAME))
def test_storage_type_lists(scheme, type_name):
    code, allowed, d = _storage_case(scheme, type_name)
    if type_name in allowed:
        roundtrip(d)
    else:
        with raises_rule(code):
            write_tensor_descriptor(d)


def test_private_storage_types_are_in_no_list():
    from hurray_decl.hurray.tensor import ExtensionType
    d = TensorDescriptor(type_tag=0xF1, shape=(4,), buffers=(handle(4),), quantization=PerTensorAffine(scale=1.0),
                         extension_type=ExtensionType(bit_width=8))
    with raises_rule("HQ-PT-07"):
        write_tensor_descriptor(d)


def test_per_tensor_zero_point_range():
    roundtrip(tensor("uint8", (4,), (4,), PerTensorAffine(scale=1.0, zero_point=255)))
    with raises_rule("HQ-PT-04"):
        write_tensor_descriptor(tensor("uint8", (4,), (4,), PerTensorAffine(scale=1.0, zero_point=256)))
    with raises_rule("HQ-PT-04"):
        write_tensor_descriptor(tensor("int4", (4,), (2,), PerTensorAffine(scale=1.0, zero_point=-9)))
    with raises_rule("HQ-PT-04"):
        write_tensor_descriptor(tensor("uint32", (4,), (16,), PerTensorAffine(scale=1.0, zero_point=-1)))
    roundtrip(tensor("int2", (4,), (1,), PerTensorAffine(scale=1.0, zero_point=-2)))


# ---------------------------------------------------------------- axis and DYNAMIC


AXIS_CASES = [
    ("HQ-PC-02", "HQ-PC-03", "int8", lambda axis: PerChannelAffine(axis=axis, scale_buffer_index=1, symmetric=True)),
    ("HQ-PB-02", "HQ-PB-07", "int8", lambda axis: PerBlockAffine(axis=axis, block_size=2, scale_buffer_index=1,
                                                                 symmetric=True)),
    ("HQ-NF4-02", "HQ-NF4-07", "uint4", lambda axis: NF4(axis=axis, block_size=8, scale_buffer_index=1)),
    ("HQ-MX-02", "HQ-MX-06", "int8", lambda axis: MXFP(axis=axis, block_size=16, scale_buffer_index=1)),
]


@pytest.mark.parametrize("axis_code, dynamic_code, storage, make", AXIS_CASES, ids=[c[0] for c in AXIS_CASES])
def test_axis_below_rank_and_static(axis_code, dynamic_code, storage, make):
    with raises_rule(axis_code):
        write_tensor_descriptor(tensor(storage, (16, 16), (256, 64), make(2)))
    with raises_rule(axis_code):  # every axis fails for a scalar
        write_tensor_descriptor(tensor(storage, (), (1, 4), make(0)))
    with raises_rule(dynamic_code):
        write_tensor_descriptor(tensor(storage, (DYNAMIC, 16), (0, 0), make(0)))


def test_axis_is_checked_on_read_at_its_byte():
    data = vector("quant_per_block_int4_128x128.bin")
    with raises_rule("HQ-PB-02", offset=at(data, "quantization.axis")):
        read_tensor_descriptor(patch_field(data, "quantization.axis", 2))


# ---------------------------------------------------------------- block geometry


def pb(axis=1, block_size=4, **kw):
    values = dict(axis=axis, block_size=block_size, scale_buffer_index=1, symmetric=True)
    values.update(kw)
    return PerBlockAffine(**values)


def test_per_block_block_size_against_the_axis():
    with raises_rule("HQ-PB-05"):
        write_tensor_descriptor(tensor("int8", (3, 4), (12, 12), pb(block_size=8)))
    roundtrip(tensor("int8", (3, 4), (12, 12), pb(block_size=4)))


@covers("HQ-PB-06", "HQ-NF4-06")
def test_empty_axis_waives_the_upper_bound():
    roundtrip(tensor("int8", (3, 0), (0, 0), pb(block_size=1 << 31)))
    roundtrip(tensor("uint4", (3, 0), (0, 0), NF4(axis=1, block_size=1 << 20, scale_buffer_index=1)))


@covers("HQ-PB-15")
def test_block_geometry():
    """num_blocks = ceil(S / K) x the product of the other dimensions."""
    d = tensor("int8", (3, 5, 2), (48, 4 * 9), pb(axis=1, block_size=2, scale_type_tag=3))
    t = TensorContext(d)
    assert t.blocks(1, 2) == 3 * 3 * 2 and t.blocks(0, 4) == 1 * 10 and t.blocks(2, 2) == 15
    roundtrip(d.replace(buffers=(handle(3 * 6 * 2), handle(4 * 18))))


@covers("HQ-PB-16", "HQ-PB-20")
def test_partial_and_whole_axis_blocks():
    roundtrip(tensor("int8", (3, 5), (18, 9 * 4), pb(axis=1, block_size=2, scale_type_tag=3)))
    roundtrip(tensor("uint4", (2, 20), (24, 3 * 2 * 4), NF4(axis=1, block_size=8, scale_buffer_index=1)))
    roundtrip(tensor("int8", (3, 4), (12, 3 * 4), pb(axis=1, block_size=4, scale_type_tag=3)))  # K = S


def test_partial_blocks_pad_dense_data():
    """HQ-PB-17: row-major int8 [3, 5] with K = 2 stores 3 x 6 elements."""
    with raises_rule("HQ-PB-17"):
        write_tensor_descriptor(tensor("int8", (3, 5), (15, 9 * 4), pb(axis=1, block_size=2, scale_type_tag=3)))
    # sparse values hold exactly nnz elements: no padding (HD-30)
    coo = TensorDescriptor(type_tag=0x10, shape=(3, 5), layout=COO(nnz=2),
                           buffers=(handle(2), handle(32), handle(36)), quantization=pb(axis=1, block_size=2,
                                                                                        scale_buffer_index=2,
                                                                                        scale_type_tag=3))
    roundtrip(coo)


def test_nf4_block_size_against_the_axis():
    with raises_rule("HQ-NF4-05"):
        write_tensor_descriptor(tensor("uint4", (2, 4), (4, 4), NF4(axis=1, block_size=8, scale_buffer_index=1)))


def test_mxfp_exact_multiple():
    mx = MXFP(axis=1, block_size=16, scale_buffer_index=1)
    roundtrip(tensor("int8", (2, 32), (64, 4), mx))
    with raises_rule("HQ-MX-07"):
        write_tensor_descriptor(tensor("int8", (2, 0), (0, 0), mx))
    with raises_rule("HQ-MX-08"):
        write_tensor_descriptor(tensor("int8", (2, 24), (48, 4), mx))
    with raises_rule("HQ-MX-08"):  # K > S is a partial block too
        write_tensor_descriptor(tensor("int8", (2, 8), (16, 2), mx))


def test_the_context_never_asks_which_layout_it_holds():
    """Layouts own their checks: the context module tests no value against a layout model class."""
    import ast
    import inspect

    from hurray_decl.hurray.tensor import context, layouts

    models = {name for name, value in vars(layouts).items()
              if isinstance(value, type) and issubclass(value, layouts.Layout)}
    asked = [ast.unparse(node) for node in ast.walk(ast.parse(inspect.getsource(context)))
             if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance"
             and {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)} & models]
    assert len(models) > 10 and asked == []
