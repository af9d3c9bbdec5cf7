"""Acceptance 1: every golden descriptor decodes to its manifest entry and re-encodes byte-exactly."""

from __future__ import annotations

import pytest

from hurray_decl.hurray.tables.element_types import BY_TAG
from hurray_decl.hurray.tensor import read_tensor_descriptor, write_tensor_descriptor
from tests.hurray.tensor_support import manifest
from tests.paths import CONFORMANCE, DESCRIPTORS

ENTRIES = manifest()


def test_the_corpus_is_there():
    assert CONFORMANCE.is_dir()
    assert len(ENTRIES) == 11


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"].split("/")[-1] for e in ENTRIES])
def test_vector(entry):
    data = (CONFORMANCE / entry["file"]).read_bytes()
    d = read_tensor_descriptor(data)
    expect = entry["expect"]
    assert d.version_major == expect["version_major"]
    assert d.version_minor == expect["version_minor"]
    assert d.type_tag == expect["element_type_tag"]
    assert BY_TAG[d.type_tag].name == expect["element_type"]
    assert list(d.shape) == expect["shape"]
    assert d.byte_offset == expect["byte_offset"]
    assert d.layout_tag == expect["layout_tag"]
    assert [b.byte_size for b in d.buffers] == expect["buffer_byte_sizes"]
    assert (d.quantization is not None) == expect["has_quantization"]
    assert (d.shard is not None) == expect["has_shard"]
    assert d.descriptor_length == len(data)
    assert write_tensor_descriptor(d) == data


def test_worked_decoding_of_the_per_block_vector():
    """DIGEST § 8 field by field."""
    d = read_tensor_descriptor((DESCRIPTORS / "quant_per_block_int4_128x128.bin").read_bytes())
    q = d.quantization
    assert (q.scheme_tag, q.axis, q.block_size, q.scale_buffer_index) == (3, 1, 128, 1)
    assert q.symmetric and q.zero_point_buffer_index is None and q.scale_type_tag == 1
    assert [(b.alignment, b.device_tag, b.sync_mode, b.memory_class) for b in d.buffers] == [(64, 0, 0, 0)] * 2
    assert d.rank == 2 and d.flags == 1
