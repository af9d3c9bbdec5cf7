"""Every bundled Hurray example to onnx-light and back (issue 24, acceptance 5).

Each valid descriptor of ``hurray_decl/hurray/examples/`` (its buffers made again the way the
corpus made the descriptor) either converts to an onnx-light value whose float32 values are the
Hurray tensor's, bit for bit, and back to a Hurray tensor with those values again, or is refused
with the rule :data:`REFUSED` names for it.
"""

from __future__ import annotations

import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl.convert.tensors import hurray_to_onnx_light, initializer_to_hurray
from hurray_decl.hurray.examples import LAYOUT_EXAMPLES, SCHEME_EXAMPLES, bundled
from hurray_decl.hurray.numerics import quantize
from hurray_decl.hurray.tensor import read_tensor_descriptor, write_tensor_descriptor
from hurray_decl.onnx_light import EncodedValueProto, dequantize_value

REFUSED = {
    # unquantized layouts other than row-major: an ONNX initializer is row-major
    **{name: "HT-LAY-01" for name in LAYOUT_EXAMPLES if name != "row_major"},
    "per_channel_affine_int16": "HQ-PB-14",   # onnx-light int4/int8 hold codes of at most 8 bits
    "mxfp8_e4m3": "HQ-MX-09",                  # no onnx-light profile has MXFP's float8_e4m3 table
    "mxfp4": "OL-NUM-14",                      # it holds -0 codes; onnx-light decodes a codebook -0 as +0
}
"""The bundled examples with no exact onnx-light form here, and the rule that stops each."""


def bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).reshape(-1).view(np.uint32)


def example(name: str):
    """The bundled descriptor and buffers for it (the corpus keeps descriptors only)."""
    data = (bundled() / f"valid_{name}.bin").read_bytes()
    if name in SCHEME_EXAMPLES:
        options = dict(SCHEME_EXAMPLES[name][1])
        rows = options.pop("rows", 4)
        matrix = np.linspace(-4.0, 4.0, 4 * 64, dtype=np.float32).reshape(4, 64)
        descriptor, buffers = quantize(matrix[:rows], **options)
        assert write_tensor_descriptor(descriptor) == data
        return descriptor, buffers
    descriptor = read_tensor_descriptor(data)
    sizes = [b.byte_size for b in descriptor.buffers]
    return descriptor, [np.linspace(-1, 1, n // 4, dtype=np.float32).tobytes() for n in sizes]


@pytest.mark.parametrize("name", [*LAYOUT_EXAMPLES, *SCHEME_EXAMPLES])
def test_bundled_example_to_onnx_light_and_back(name):
    descriptor, buffers = example(name)
    if name in REFUSED:
        with pytest.raises(hd.HurrayDeclError) as refused:
            hurray_to_onnx_light(descriptor, buffers)
        assert refused.value.code == REFUSED[name]
        return
    expected = hd.dequantize(descriptor, buffers) if descriptor.quantization else \
        np.frombuffer(buffers[0], np.float32).reshape(descriptor.shape)
    value = hurray_to_onnx_light(descriptor, buffers)
    if isinstance(value, EncodedValueProto):
        got = dequantize_value(value, None, np.float32)
    else:
        got = np.frombuffer(value.raw_data, np.float32).reshape(tuple(value.dims))
    assert np.array_equal(bits(got), bits(expected))
    back, back_buffers = initializer_to_hurray(value)
    again = hd.dequantize(back, back_buffers) if back.quantization else \
        np.frombuffer(back_buffers[0], np.float32).reshape(back.shape)
    assert np.array_equal(bits(again), bits(expected))
    assert tuple(back.shape) == tuple(descriptor.shape)


def test_every_bundled_valid_example_is_covered():
    files = {p.name[len("valid_"):-len(".bin")] for p in bundled().glob("valid_*.bin")}
    assert files == set(LAYOUT_EXAMPLES) | set(SCHEME_EXAMPLES)


def test_per_channel_and_per_tensor_of_odd_shapes():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 3, 7)).astype(np.float32)
    for scheme, options in (("per_tensor_affine", {"storage": "uint8", "symmetric": False}),
                            ("per_channel_affine", {"axis": 2, "storage": "int8"}),
                            ("per_channel_affine", {"axis": 0, "storage": "uint4", "symmetric": False})):
        descriptor, buffers = quantize(x, scheme, **options)
        value = hurray_to_onnx_light(descriptor, buffers)
        assert np.array_equal(bits(dequantize_value(value, None, np.float32)), bits(hd.dequantize(descriptor, buffers)))


@pytest.mark.parametrize("element", ["float4_e2m1", "float6_e3m2"])
def test_mxfp_without_negative_zeros_both_ways(element):
    rng = np.random.default_rng(11)
    x = rng.uniform(0.5, 4.0, (3, 96)).astype(np.float32) * rng.choice([-1, 1], (3, 96)).astype(np.float32)
    descriptor, buffers = quantize(x, "mxfp", storage=element)
    expected = hd.dequantize(descriptor, buffers)
    assert not (bits(expected) == 0x80000000).any()
    value = hurray_to_onnx_light(descriptor, buffers)
    assert value.struct_type.name.endswith("mxfp4" if element == "float4_e2m1" else "mxfp6")
    assert np.array_equal(bits(dequantize_value(value, None, np.float32)), bits(expected))
    back, back_buffers = initializer_to_hurray(value)
    assert write_tensor_descriptor(back) == write_tensor_descriptor(descriptor)  # the same tensor, byte for byte
    assert [bytes(b) for b in back_buffers] == [bytes(b) for b in buffers]


def test_nf4_both_ways_with_a_zero_block():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((3, 128)).astype(np.float32)
    x[1, :64] = 0
    descriptor, buffers = quantize(x, "nf4")
    value = hurray_to_onnx_light(descriptor, buffers)
    assert np.array_equal(bits(dequantize_value(value, None, np.float32)), bits(hd.dequantize(descriptor, buffers)))
    back, back_buffers = initializer_to_hurray(value)
    assert write_tensor_descriptor(back) == write_tensor_descriptor(descriptor)
    assert [bytes(b) for b in back_buffers] == [bytes(b) for b in buffers]
