"""The vectors of the private scheme ggml_codebook (0xF1), checked without gguf-py: GGUF blocks
of every type it holds, gguf-py's float32 values of them (written by
``tests/convert/vectors/make_ggml_codebook.py``), and their encoded ``.hrry`` form."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl.convert.gguf_codebook import FORMATS
from hurray_decl.convert.hurray import codebook_gguf, from_gguf_codebook
from hurray_decl.hurray.quantization import register_project_schemes
from hurray_decl.hurray.tensor import read_tensor_descriptor, write_tensor_descriptor

VECTORS = json.loads((Path(__file__).parent / "vectors" / "ggml_codebook.json").read_text())


def test_every_type_has_a_vector():
    assert set(VECTORS) == set(FORMATS)


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_the_vectors(name):
    vector = VECTORS[name]
    raw = np.frombuffer(bytes.fromhex(vector["blocks"]), np.uint8)
    shape = tuple(vector["shape"])
    descriptor, buffers = from_gguf_codebook(raw, name, shape)
    assert write_tensor_descriptor(descriptor).hex() == vector["descriptor"]
    assert [bytes(b).hex() for b in buffers] == vector["buffers"]
    register_project_schemes()
    stored = read_tensor_descriptor(bytes.fromhex(vector["descriptor"]))
    values = hd.dequantize(stored, [bytes.fromhex(b) for b in vector["buffers"]])
    assert values.shape == shape
    assert np.ascontiguousarray(values, np.float32).view("<u4").tobytes().hex() == vector["values"]
    assert codebook_gguf(stored, [bytes.fromhex(b) for b in vector["buffers"]])[1].tobytes() == raw.tobytes()
