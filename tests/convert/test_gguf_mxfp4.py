"""GGUF MXFP4 as Hurray MXFP (0x05) of float4_e2m1 elements: values bit-identical to
``gguf.quants.dequantize``, blocks back to GGUF byte for byte, and the blocks MXFP has no form
for refused by their rule (issue 33)."""

from __future__ import annotations

import gguf
import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl.convert.gguf import MXFP4_RECORD
from hurray_decl.convert.hurray import from_gguf
from hurray_decl.convert.tensors import hurray_to_gguf
from hurray_decl.hurray.schemes.mxfp import MXFP
from hurray_decl.hurray.tables.element_types import BY_TAG
from hurray_decl.onnx_light import ModelProto, dequantize_value
from tests.convert.test_cli_convert import cli
from tests.convert.test_gguf_file import write
from tests.helpers import raises_rule

Q = gguf.GGMLQuantizationType


def u32(a) -> np.ndarray:
    return np.ascontiguousarray(a, np.float32).reshape(-1).view(np.uint32)


def mxfp4(shape, seed=0) -> np.ndarray:
    """gguf's own MXFP4 blocks of normal values, with blocks of very small, very large and mixed-sign values."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    blocks = x.reshape(-1, 32)
    if len(blocks) >= 4:
        blocks[1] *= 2.0 ** -124   # exponent bytes near 1 (subnormal scales) and near 254
        blocks[2] *= 2.0 ** 124
        blocks[3] = np.abs(blocks[3])
    return gguf.quants.quantize(x, Q.MXFP4)


@pytest.mark.parametrize("shape", [(5, 20_032), (1, 32), (2, 3, 64)])  # 100,160 elements; one block; rank 3
def test_mxfp4_is_mxfp_bit_for_bit_and_comes_back(shape):
    raw = mxfp4(shape)
    descriptor, buffers = from_gguf(raw.reshape(-1), "MXFP4", shape)
    assert isinstance(descriptor.quantization, MXFP) and BY_TAG[descriptor.type_tag].name == "float4_e2m1"
    assert descriptor.quantization.block_size == 32 and descriptor.quantization.axis == len(shape) - 1
    want = gguf.quants.dequantize(raw, Q.MXFP4)
    assert np.array_equal(u32(hd.dequantize(descriptor, buffers)), u32(want))
    back = hurray_to_gguf("w", descriptor, buffers)
    assert back.type_name == "MXFP4" and back.data.tobytes() == raw.tobytes()


def test_blocks_mxfp_has_no_form_for_are_refused():
    raw = mxfp4((2, 64)).reshape(-1).copy()
    blocks = raw.view(MXFP4_RECORD)
    for byte in (0x00, 0xFF):
        bad = blocks.copy()
        bad["e"][3] = byte
        with raises_rule("HQ-MX-10", path="raw -> blocks[3] -> e"):
            from_gguf(bad.view(np.uint8), "MXFP4", (2, 64))
    bad = blocks.copy()
    bad["qs"][2, 5] = 0x81  # element 5: code 1; element 21: code 8 (-0 in E2M1, +0 in gguf)
    with raises_rule("HQ-MX-11", path="raw -> blocks[2] -> qs"):
        from_gguf(bad.view(np.uint8), "MXFP4", (2, 64))
    # an MXFP tensor with a -0 element has no MXFP4 form
    t = hd.quantize(np.array([[-0.0] + [1.0] * 31], np.float32), "mxfp", axis=1, block_size=32,
                    storage="float4_e2m1")
    assert np.signbit(t.numpy()[0, 0])
    with raises_rule("ARGUMENT", path="elements[0]"):
        hurray_to_gguf("w", t.descriptor, t.buffers)


def test_mxfp4_through_the_commands(tmp_path):
    raw = mxfp4((3, 352), seed=1)
    write(tmp_path / "m.gguf", [("experts", raw, Q.MXFP4), ("norm", np.arange(5, dtype=np.float32), None)])
    want = gguf.quants.dequantize(raw, Q.MXFP4)
    done = cli("convert", "m.gguf", "-o", "m.hrry", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    loaded = hd.load(str(tmp_path / "m.hrry"))
    assert isinstance(loaded["experts"].descriptor.quantization, MXFP)
    assert np.array_equal(u32(loaded["experts"].numpy()), u32(want))
    done = cli("convert", "m.hrry", "--to", "gguf", "-o", "back.gguf", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "back.gguf").read_bytes() == (tmp_path / "m.gguf").read_bytes()
    done = cli("convert", "m.gguf", "--to", "onnx-light", "-o", "m.onnx", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    value = ModelProto.FromString((tmp_path / "m.onnx").read_bytes()).graph.encoded_initializer[0]
    assert value.struct_type.name.rsplit("/", 1)[-1] == "mxfp4"
    assert np.array_equal(u32(dequantize_value(value)), u32(want))
    done = cli("convert", "m.onnx", "--to", "gguf", "-o", "again.gguf", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "again.gguf").read_bytes() == (tmp_path / "m.gguf").read_bytes()
