"""Every declaration of the tensor descriptor side against literal bytes: construct's habit.

``common(codec, hex_bytes, obj, size)`` parses the literal bytes into ``obj`` and builds ``obj``
back into those very bytes, and checks their size, so that a round trip is never the codec
compared with itself. The bytes are written by hand from the field tables of the Hurray digest
(``spec/hurray/DIGEST.md`` § 3 for the quantization payloads, § 5 for the descriptor, its
buffer handles, layouts and sections: little-endian, each field at its stated width), or taken
from the shared conformance corpus (``tests/conformance/hurray``), never from the builder. The
container structures (``hurray.container.declarations``) are covered the same way. A stream frame
is a tensor descriptor followed by its buffers (no declaration of its own); onnx-light's wire
form is protobuf, read by its own generated code, not by this machinery.

The declarations are found in the code: every declared model class with its own declaration
(:func:`declared_models`), every message structure of the container's declarations
(:func:`container_structures`); a test fails for one without a case here.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import construct as cs
import pytest

import hurray_decl.hurray.schemes as schemes_package
import hurray_decl.hurray.tensor as tensor_package
from hurray_decl.declare.model import DeclaredModel
from hurray_decl.hurray.container import declarations as cd
from hurray_decl.hurray.quantization import decode_quantization, encode_quantization
from hurray_decl.hurray.schemes.ggml_codebook import GgmlCodebook
from hurray_decl.hurray.schemes.ggml_super_block import GgmlSuperBlock
from hurray_decl.hurray.schemes.mxfp import MXFP
from hurray_decl.hurray.schemes.nf4 import NF4
from hurray_decl.hurray.schemes.per_block_affine import PerBlockAffine
from hurray_decl.hurray.schemes.per_channel_affine import PerChannelAffine
from hurray_decl.hurray.schemes.per_tensor_affine import PerTensorAffine
from hurray_decl.hurray.schemes.quantization import PAYLOAD_HEADER, Descriptor
from hurray_decl.hurray.tensor import (
    COO,
    CSC,
    CSF,
    CSR,
    BlockPaged,
    BufferHandle,
    CompositeHead,
    CompositeMember,
    ExtensionType,
    Hilbert,
    Morton,
    PrivateLayout,
    RowMajor,
    Shard,
    Statistics,
    Strided,
    TensorDescriptor,
    Tiled,
    read_tensor_descriptor,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.layouts import PRIVATE_LAYOUTS
from tests.paths import CONFORMANCE, DESCRIPTORS


@dataclass(frozen=True)
class Codec:
    """How one declaration turns bytes into its object and back."""

    parse: Callable[[bytes], Any]
    build: Callable[[Any], bytes]


def common(codec: Codec, hex_bytes: str, obj: Any, size: int) -> None:
    """``hex_bytes`` parse into ``obj``, ``obj`` builds into ``hex_bytes``, which are ``size`` bytes."""
    data = bytes.fromhex(hex_bytes)
    assert len(data) == size, (len(data), size)
    assert codec.parse(data) == obj
    assert codec.build(obj) == data


def section(example: Any) -> Codec:
    """A descriptor part (buffer handle, layout fields, section): its wire declaration, at the
    rank its fields imply."""
    declaration = example.wire_declaration()
    model = type(example)
    return Codec(lambda data: model.from_wire(declaration.parse(data)),
                 lambda obj: declaration.build(obj.to_wire()))


SCHEME = Codec(decode_quantization, encode_quantization)
"""A quantization payload: the scheme's declaration, chosen by its tag."""


def fields(declaration: Any, **params: Any) -> Codec:
    """A declaration read as its fields (a part no model stands for alone, a scheme the default
    registry does not hold, a container structure), with the parse parameters it reads."""
    return Codec(lambda data: {k: v for k, v in declaration.parse(data, **params).items() if not k.startswith("_")},
                 lambda obj: declaration.build(obj, **params))


HEADER_FIELDS = fields(PAYLOAD_HEADER)
"""The payload header every scheme's declaration starts with."""
DESCRIPTOR = Codec(read_tensor_descriptor, write_tensor_descriptor)


def _private_layout() -> PrivateLayout:
    return PrivateLayout(extension_layout_id=7, extension_data=bytes.fromhex("abcd"))


CASES: list[tuple[type, Callable[[], tuple[Codec, str, Any, int]]]] = [
    # ---------------------------------------------------------------- quantization payloads (§ 3)
    (Descriptor, lambda: (HEADER_FIELDS, "01 01 0000", {"scheme_tag": 1, "scheme_version": 1, "flags": 0}, 4)),
    (PerTensorAffine, lambda: (SCHEME, "01 01 0000 0000003f 03000000 00000000",
                               PerTensorAffine(scale=0.5, zero_point=3), 16)),
    (PerChannelAffine, lambda: (SCHEME, "02 01 0100 01000000 01000000 ffffffff 03 000000",
                                PerChannelAffine(axis=1, scale_buffer_index=1, symmetric=True,
                                                 zero_point_buffer_index=None, scale_type_tag=3), 20)),
    (PerBlockAffine, lambda: (SCHEME, "03 01 0000 00000000 20000000 01000000 02000000 01 000000",
                              PerBlockAffine(axis=0, block_size=32, scale_buffer_index=1, symmetric=False,
                                             zero_point_buffer_index=2, scale_type_tag=1), 24)),
    (NF4, lambda: (SCHEME, "04 01 0000 01000000 40000000 01000000", NF4(axis=1, block_size=64, scale_buffer_index=1),
                   16)),
    (GgmlSuperBlock, lambda: (fields(GgmlSuperBlock.declaration),  # private: 0xF0 once the converters register it
                              "f0 01 0000 00000000 00010000 10000000 01000000 02000000 03000000 04000000",
                              {"scheme_tag": 0xF0, "scheme_version": 1, "flags": 0, "axis": 0, "super_block": 256,
                               "sub_block": 16, "d_buffer_index": 1, "scale_buffer_index": 2, "dmin_buffer_index": 3,
                               "min_buffer_index": 4}, 32)),
    (GgmlCodebook, lambda: (fields(GgmlCodebook.declaration),  # private: 0xF1, GGUF's IQ2_XXS here
                            "f1 01 0000 00000000 10000000 00010000 20000000 fdffffff 01000000 02000000",
                            {"scheme_tag": 0xF1, "scheme_version": 1, "flags": 0, "axis": 0, "ggml_type": 16,
                             "super_block": 256, "sub_block": 32, "exponent": -3, "d_buffer_index": 1,
                             "scale_buffer_index": 2}, 32)),
    (MXFP, lambda: (SCHEME, "05 01 0000 00000000 20000000 01000000", MXFP(axis=0, block_size=32, scale_buffer_index=1),
                    16)),
    # ---------------------------------------------------------------- the descriptor and its parts (§ 5)
    (BufferHandle, lambda: (section(BufferHandle(byte_size=5)), "0500000000000000 40000000 00 00 00 00",
                            BufferHandle(byte_size=5, alignment=64), 16)),
    (Shard, lambda: (section(Shard(parent_shape=(8, 4), shard_offset=(4, 0))),
                     "0800000000000000 0400000000000000 0400000000000000 0000000000000000",
                     Shard(parent_shape=(8, 4), shard_offset=(4, 0)), 32)),
    (Statistics, lambda: (section(Statistics(computed_mask=1, nnz=7)),
                          "01000000 00000000 0700000000000000" + "0000000000000000" * 6 + "00 00 00 00 00000000",
                          Statistics(computed_mask=1, nnz=7), 72)),
    (ExtensionType, lambda: (section(_fp4()), "04000000 02 01 00 01 02 01 0000 01000000 00 00 0000", _fp4(), 20)),
    (CompositeMember, lambda: (section(CompositeMember(member_role=1)), "01" + "00" * 15,
                               CompositeMember(member_role=1), 16)),
    (Strided, lambda: (section(Strided(strides=(1, -3))), "0100000000000000 fdffffffffffffff",
                       Strided(strides=(1, -3)), 16)),
    (Tiled, lambda: (section(Tiled(tile_shape=(2, 4))), "0200000000000000 0400000000000000 01 01 0000",
                     Tiled(tile_shape=(2, 4), outer_layout=1, inner_layout=1), 20)),
    (Morton, lambda: (section(Morton(morton_bits=(2, 3))), "02000000 03000000", Morton(morton_bits=(2, 3)), 8)),
    (COO, lambda: (section(COO(nnz=3)), "0300000000000000 01 00000000000000", COO(nnz=3, is_sorted=1), 16)),
    (CSR, lambda: (section(CSR(nnz=3)), "0300000000000000 0000000000000000", CSR(nnz=3), 16)),
    (CSC, lambda: (section(CSC(nnz=9)), "0900000000000000 0000000000000000", CSC(nnz=9), 16)),
    (CSF, lambda: (section(CSF(nnz=4, mode_order=(2, 0, 1))),
                   "0400000000000000 02000000 00000000 01000000 0000000000000000",
                   CSF(nnz=4, mode_order=(2, 0, 1)), 28)),
    (BlockPaged, lambda: (section(_paged()), "10000000 0400000000000000 00000000 02000000 02 ffffffff 00 000000000000",
                          _paged(), 32)),
    (CompositeHead, lambda: (section(_head()), "01 00 0000 02000000", _head(), 8)),
    (Hilbert, lambda: (section(Hilbert(hilbert_order=3, hilbert_rank=2)), "03000000 02000000",
                       Hilbert(hilbert_order=3, hilbert_rank=2), 8)),
    (PrivateLayout, lambda: (section(_private_layout()), "0700000000000000 02000000 abcd", _private_layout(), 14)),
    # the conformance corpus's row_major_int8_5.bin: int8 [5], row-major, one 5-byte buffer
    (TensorDescriptor, lambda: (DESCRIPTOR,
                                "48525259 01 00 3500 00000000 0000 10 01 01000000 0500000000000000"
                                " 0000000000000000 01 0500000000000000 40000000 00 00 00 00",
                                TensorDescriptor(type_tag=0x10, shape=(5,), layout=RowMajor(), descriptor_length=53,
                                                 buffers=(BufferHandle(byte_size=5),)), 53)),
]
"""One case per declaration: the model it belongs to, then (codec, hex, object, size)."""

NO_TENSORS = "v04-no-tensors.hrry"
"""The corpus's smallest container (112 bytes): header, an empty index, the trailer (CRC-32C on)."""
NO_TENSORS_HEADER = ("48525259 46494c45 01 00 0000 04000000 00100000 4000000000000000 ffffffffffffffff"
                     + "00" * 28)
NO_TENSORS_TRAILER = "4000000000000000 0800000000000000 0000000000000000 00000000 8ab2288c 00000000 48525259"

CONTAINER_CASES: list[tuple[str, Callable[[], tuple[Codec, str, Any, int]]]] = [
    # ---------------------------------------------------------------- container structures (the container spec)
    ("FILE_HEADER", lambda: (fields(cd.FILE_HEADER), NO_TENSORS_HEADER, {
        "magic": b"HRRYFILE", "container_version_major": 1, "container_version_minor": 0, "reserved": bytes(2),
        "file_flags": 4, "data_buffer_alignment": 4096, "first_descriptor_offset": 64,
        "tensor_count_hint": 0xFFFF_FFFF_FFFF_FFFF, "reserved_header": bytes(28)}, 64)),
    ("FILE_PREAMBLE", lambda: (fields(cd.FILE_PREAMBLE), "48525259 46494c45 01",
                               {"magic": b"HRRYFILE", "container_version_major": 1}, 9)),
    ("INDEX_COUNT", lambda: (fields(cd.INDEX_COUNT), "0000000000000000", {"index_entry_count": 0}, 8)),
    ("INDEX_ENTRY", lambda: (fields(cd.INDEX_ENTRY),
                             "0100 77 4000000000000000 35000000 8000000000000000 0500000000000000 00000000",
                             {"name_length": 1, "name": b"w", "descriptor_offset": 64, "descriptor_length": 53,
                              "data_offset": 128, "data_length": 5, "flags": 0}, 35)),
    ("KV_COUNT", lambda: (fields(cd.KV_COUNT), "00000000", {"kv_count": 0}, 4)),
    ("KV_ENTRY", lambda: (fields(cd.KV_ENTRY), "0300 6b6579 02 f9ffffffffffffff",
                          {"key_length": 3, "key": b"key", "value_tag": 2, "value": -7}, 14)),
    ("ARRAY_PAYLOAD", lambda: (fields(cd.ARRAY_PAYLOAD), "05 02000000 01 00",
                               {"element_tag": 5, "count": 2, "items": [1, 0]}, 7)),
    ("TRAILER", lambda: (fields(cd.TRAILER, file_size=112, file_flags=4, index_crc=lambda offset, length: 0x8C28B28A),
                         NO_TENSORS_TRAILER, {"index_offset": 64, "index_length": 8, "kv_offset": 0, "kv_length": 0,
                                              "index_crc32c": 0x8C28B28A, "reserved": bytes(4),
                                              "trailer_magic": b"HRRY"}, 40)),
    ("TRAILER_MAGIC_STRUCT", lambda: (fields(cd.TRAILER_MAGIC_STRUCT), "48525259", {"trailer_magic": b"HRRY"}, 4)),
]
"""One case per container structure (by its name in ``container.declarations``)."""


def container_structures() -> set[str]:
    """Every message structure ``hurray.container.declarations`` declares (its ``cs.Struct`` values)."""
    return {name for name, value in vars(cd).items() if name.isupper() and isinstance(value, cs.Struct)}


def test_every_container_structure_has_a_common_case():
    assert container_structures() == {name for name, _ in CONTAINER_CASES}


@pytest.mark.parametrize("case", CONTAINER_CASES, ids=lambda case: case[0])
def test_container_common(case: tuple[str, Callable[[], tuple[Codec, str, Any, int]]]) -> None:
    common(*case[1]())


def test_the_container_literals_are_the_corpus_file():
    data = (CONFORMANCE / "files" / NO_TENSORS).read_bytes()
    assert data == bytes.fromhex(NO_TENSORS_HEADER + "0000000000000000" + NO_TENSORS_TRAILER)


def _fp4() -> ExtensionType:
    return ExtensionType(bit_width=4, packing_factor=2, is_float=1, is_signed=0, sign_bits=1, exponent_bits=2,
                         mantissa_bits=1, exponent_bias=1, has_nan=0, has_inf=0)


def _paged() -> BlockPaged:
    return BlockPaged(page_size=16, num_pages=4, num_seqs=2, kv_role=2, block_table_index_type=0)


def _head() -> CompositeHead:
    return CompositeHead(composition_rule=1, member_count=2)


def declared_models() -> set[type]:
    """Every declared model class with its own declaration, in the modules of the quantization
    schemes and the tensor descriptor."""
    for package in (schemes_package, tensor_package):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            importlib.import_module(info.name)
    found: set[type] = set()
    todo: list[type] = [DeclaredModel]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith(("hurray_decl.hurray.schemes", "hurray_decl.hurray.tensor")) \
                    and sub.fields_declaration() is not None:
                found.add(sub)
    return found


def test_every_declaration_has_a_common_case():
    covered = {model for model, _ in CASES}
    missing = sorted(m.__qualname__ for m in declared_models() - covered)
    assert not missing, f"declarations without a common() case: {missing}"


def test_the_scan_finds_the_declarations():
    """The scan is not empty-handed: it finds the schemes, the layouts and the sections."""
    found = declared_models()
    assert {PerBlockAffine, CSR, CSC, Statistics, TensorDescriptor, BufferHandle} <= found


@pytest.mark.parametrize("case", CASES, ids=lambda case: case[0].__name__)
def test_common(case: tuple[type, Callable[[], tuple[Codec, str, Any, int]]]) -> None:
    registered = PRIVATE_LAYOUTS.get(7) is None
    if registered:
        PRIVATE_LAYOUTS.register(7, "the common() case's private layout")
    try:
        codec, hex_bytes, obj, size = case[1]()
        common(codec, hex_bytes, obj, size)
    finally:
        if registered:
            PRIVATE_LAYOUTS.unregister(7)


def test_the_conformance_vector_is_the_literal():
    """The tensor descriptor's literal is the corpus file, byte for byte."""
    literal = next(make for model, make in CASES if model is TensorDescriptor)()[1]
    assert (DESCRIPTORS / "row_major_int8_5.bin").read_bytes() == bytes.fromhex(literal)


def test_common_fails_on_a_wrong_byte():
    """common() can fail: one byte changed in a literal is a different object."""
    codec, hex_bytes, obj, size = next(make for model, make in CASES if model is PerTensorAffine)()
    with pytest.raises(AssertionError):
        common(codec, hex_bytes.replace("03000000", "04000000"), obj, size)
