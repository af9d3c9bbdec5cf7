"""The .hrry container: the conformance vectors, byte-exact rewrites, the declared
layout, the reader's check levels, the writer's refusals and the memory bound on claimed counts."""

from __future__ import annotations

import io
import json
import mmap
import struct
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hurray_decl.declare.schema import field_offsets
from hurray_decl.errors import ArgumentError, HurrayDeclError
from hurray_decl.hurray.container import (
    FileFlag,
    KVTag,
    KVValue,
    crc32c,
    is_container,
    open_container,
    read_container,
    validate_container,
)
from hurray_decl.hurray.container.declarations import FILE_HEADER, FILE_PREAMBLE, INDEX_ENTRY, MIN_FILE_SIZE, TRAILER
from hurray_decl.hurray.container.sequential import read_sequential
from hurray_decl.hurray.container.strategies import Patch, valid_containers
from hurray_decl.hurray.container.writer import ContainerWriter, encode_kv, rewrite, write_container
from hurray_decl.hurray.tables.codes import MemberRole
from hurray_decl.hurray.tensor import BufferHandle, CompositeHead, Shard, TensorDescriptor
from hurray_decl.hurray.tensor.sections import CompositeMember
from tests.paths import FILES

MANIFEST = json.loads((FILES / "manifest.json").read_text())
VECTORS = MANIFEST["vectors"]
VALID = [v for v in VECTORS if v["expect"] == "valid"]
INVALID = [v for v in VECTORS if v["expect"] == "invalid"]


def vector(name: str) -> bytes:
    return (FILES / name).read_bytes()


def refused(data, code: str, **kw) -> HurrayDeclError:
    with pytest.raises(HurrayDeclError) as info:
        validate_container(data, **kw)
    assert info.value.code == code, str(info.value)
    return info.value


def f32(shape, fill=0):
    size = 4 * int(np.prod(shape)) if shape else 4
    return TensorDescriptor(type_tag=0x03, shape=shape, buffers=(BufferHandle(byte_size=size),)), [bytes([fill]) * size]


# ------------------------------------------------------------------ acceptance 2: the conformance vectors


def test_the_manifest_lists_every_file_there():
    assert len(VECTORS) == 21
    assert sorted(v["file"] for v in VECTORS) == sorted(p.name for p in FILES.glob("*.hrry"))


@pytest.mark.parametrize("entry", VALID, ids=[v["file"] for v in VALID])
def test_valid_vector_is_accepted_and_rewritten_byte_exact(entry):
    data = vector(entry["file"])
    c = validate_container(data)
    counts = entry.get("digest_reader", {"tensors": 2, "kv": 2})
    assert (len(c.entries), len(c.kv)) == (counts["tensors"], counts["kv"])
    assert rewrite(c) == data


@pytest.mark.parametrize("entry", INVALID, ids=[v["file"] for v in INVALID])
def test_invalid_vector_gets_its_rule(entry):
    err = refused(vector(entry["file"]), entry["rule"])
    assert err.offset is not None and 0 <= err.offset < entry["size"]


@pytest.mark.parametrize("entry", INVALID, ids=[v["file"] for v in INVALID])
def test_invalid_vector_is_refused_at_its_level(entry):
    """O faults stop open_container; T faults pass open and stop the tensor (or composite);
    V faults pass both and stop only validate (FILE-FORMAT.md § 9.3)."""
    data, level, code = vector(entry["file"]), entry["check_level"], entry["rule"]
    if level == "O":
        with pytest.raises(HurrayDeclError, match=code):
            open_container(data)
        return
    c = open_container(data)
    if level == "T":
        with pytest.raises(HurrayDeclError) as info:
            for name in c.names:
                t = c.tensor(name)
                if isinstance(t.descriptor.layout, CompositeHead):
                    c.composite(name)
        assert info.value.code == code
    else:
        for name in c.names:
            c.tensor(name)
        refused(data, code)


@pytest.mark.rules("HF-HDR-19")
def test_basic_hrry_is_a_container_never_a_descriptor():
    data = vector("basic.hrry")
    like_a_descriptor = b"HRRY\x01\x00"  # a descriptor's magic and version, then the file's bytes
    assert is_container(data) and not is_container(like_a_descriptor + data[len(like_a_descriptor):])
    c = validate_container(data)
    assert c.names == ("weights", "bias")
    assert {k: v.value for k, v in c.kv.items()} == {"producer": "hurray-conformance", "tensor_count": 2}
    assert c.tensor("weights").descriptor.shape == (2, 2)
    assert bytes(c.tensor("bias").buffers[0]) == bytes(3)


def test_v06_rewritten_canonically_is_v07():
    """The reference pads a composite head to A (DIFF-02); the spec placement is v07 exactly."""
    c = validate_container(vector("v06-composite-reference-placement.hrry"))
    assert rewrite(c, canonical=True) == vector("v07-composite-spec-placement.hrry")


# ------------------------------------------------------------------ the declaration


@pytest.mark.rules("HF-HDR-02", "HF-IDX-01", "HF-IDX-08")
def test_field_offsets_come_from_the_declarations():
    header = {name: off for name, (off, _) in field_offsets(FILE_HEADER).items()}
    assert header == {"magic": 0, "container_version_major": 8, "container_version_minor": 9, "reserved": 10,
                      "file_flags": 12, "data_buffer_alignment": 16, "first_descriptor_offset": 20,
                      "tensor_count_hint": 28, "reserved_header": 36}
    assert FILE_HEADER.sizeof() == 64 and TRAILER.sizeof() == 40
    trailer = {name: off for name, (off, _) in field_offsets(TRAILER).items()}
    assert trailer == {"index_offset": 0, "index_length": 8, "kv_offset": 16, "kv_length": 24, "index_crc32c": 28,
                       "reserved": 32, "trailer_magic": 36}
    entry = INDEX_ENTRY.build({"name_length": 3, "name": b"abc", "descriptor_offset": 1, "descriptor_length": 2,
                               "data_offset": 3, "data_length": 4, "flags": 0})
    assert len(entry) == 34 + 3
    assert entry == struct.pack("<H3sQIQQI", 3, b"abc", 1, 2, 3, 4, 0)


@pytest.mark.rules("HF-HDR-01", "HF-META-12", "HF-META-04")
def test_every_kv_type_of_v01_decodes_little_endian():
    c = validate_container(vector("v01-dense-kv-all-types.hrry"))
    assert not c.header.has(FileFlag.HAS_KV_METADATA) and len(c.kv) == 7  # read though the flag is clear
    tags = sorted({(v.tag, v.element_tag) for v in c.kv.values()})
    assert tags == [(1, None), (2, None), (4, None), (5, None), (6, None), (7, 1), (7, 2)]
    assert c.header.data_buffer_alignment == 4096 and c.trailer.index_offset % 8 == 0


@pytest.mark.rules("HF-META-12", "HF-META-21", "HF-META-01")
def test_kv_values_round_trip_exactly():
    nan = struct.unpack("<d", bytes.fromhex("0100000000 00f8 7f".replace(" ", "")))[0]
    kv = {"s": "é€", "i": -(1 << 63), "u": KVValue(tag=KVTag.UINT64, value=5), "big": (1 << 64) - 1, "f": nan,
          "b": True, "y": b"\x00\xff", "ai": [1, -2], "as": ["x", ""],
          "empty": KVValue(tag=KVTag.ARRAY, element_tag=KVTag.BOOL, value=())}
    data = write_container([], kv)
    c = validate_container(data)
    assert c.kv["u"].tag == KVTag.UINT64 and c.kv["big"].tag == KVTag.UINT64 and c.kv["i"].tag == KVTag.INT64
    assert struct.pack("<d", c.kv["f"].value) == struct.pack("<d", nan)  # NaN payload kept
    assert c.kv["empty"].value == () and c.kv["empty"].element_tag == KVTag.BOOL
    assert c.kv["as"].value == ("x", "") and c.kv["y"].value == b"\x00\xff"
    assert rewrite(c) == data
    section = encode_kv({"k": 7})
    assert section == struct.pack("<IH1sBq", 1, 1, b"k", 2, 7)  # count, key_length, key, tag, int64


# ------------------------------------------------------------------ checksum


@pytest.mark.rules("HF-DATA-18", "HF-DATA-19")
def test_crc32c_check_values_and_coverage():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(bytes(8)) == 0x8C28B28A
    data = vector("basic.hrry")
    c = open_container(data)
    t = c.trailer
    assert crc32c(data[t.index_offset:t.index_offset + t.index_length]) == t.index_crc32c == 0x51349F72
    changed = bytearray(data)
    changed[Patch(data).descriptor_field(0, "byte_offset")[0]] ^= 0xFF  # inside a descriptor: not covered
    open_container(bytes(changed))


@pytest.mark.rules("HF-DATA-22", "HF-DATA-20")
def test_crc_flag_clear_with_zero_is_not_verified():
    p = Patch(vector("basic.hrry"))
    p.put(p.header("file_flags"), 0, 4).put(p.trailer("index_crc32c"), 0, 4)
    validate_container(bytes(p.data))
    p.put(p.header("file_flags"), FileFlag.HAS_INDEX_CRC32C, 4)  # a stored 0 is an ordinary value: it mismatches
    refused(bytes(p.data), "HF-DATA-20")


# ------------------------------------------------------------------ reader levels, versions, limits


@pytest.mark.rules("HF-HDR-03", "HF-HDR-18")
@pytest.mark.parametrize("data,code", [(b"", "HF-HDR-03"), (b"HRRYFIL", "HF-HDR-03"),
                                       (b"HRRYFILF" + bytes(200), "HF-HDR-03"),
                                       (vector("v04-no-tensors.hrry")[:MIN_FILE_SIZE - 1], "HF-HDR-18"),
                                       (vector("v04-no-tensors.hrry")[:FILE_PREAMBLE.sizeof()], "HF-HDR-18")])
def test_short_or_foreign_input(data, code):
    refused(data, code)


@pytest.mark.rules("HF-HDR-07", "HF-HDR-08", "HF-HDR-09", "HF-IDX-03", "HF-IDX-10", "HF-META-08", "HF-HDR-10",
                   "HF-IDX-14", "HF-META-16")
def test_minor_version_relaxes_only_hf_d06():
    """At minor 1 reserved bytes are ignored and trailing bytes inside the index and KV
    sections are skipped; unknown flags, entry flags and tags are still refused."""
    base = write_container([("w", *f32((2,)))], {"k": 1})
    p = Patch(base)
    minor_at, reserved_at, reserved_header_at = (p.header(name) for name in (
        "container_version_minor", "reserved", "reserved_header"))
    p.put(minor_at, 1, 1).put(reserved_at, 0xAA, 1).put(reserved_header_at + 4, 0xBB, 1)
    p.put(p.trailer("reserved"), 0xCC, 1)
    relaxed = bytes(p.data)
    c = validate_container(relaxed)
    assert c.header.container_version_minor == 1
    refused(bytes(Patch(relaxed).put(minor_at, 0, 1).data), "HF-HDR-08")
    q = Patch(relaxed)
    q.put(minor_at, 0, 1).put(reserved_at, 0, 2)
    refused(bytes(q.data), "HF-HDR-09")
    q.put(reserved_header_at + 4, 0, 1)
    refused(q.recrc(), "HF-IDX-03")
    # trailing bytes inside index_length: skipped at minor 1, refused at minor 0
    for minor, code in ((1, None), (0, "HF-IDX-10")):
        r = Patch(base).put(minor_at, minor, 1)
        end = r.c.trailer.index_offset + r.c.trailer.index_length
        r.insert(end, b"\x01" * 8).put(r.trailer("index_length"), r.c.trailer.index_length + 8, 8)
        data = r.recrc()
        if code:
            refused(data, code)
        else:
            validate_container(data)
    # trailing bytes inside kv_length (the KV padding absorbs them)
    for minor, code in ((1, None), (0, "HF-META-08")):
        r = Patch(base).put(minor_at, minor, 1)
        r.put(r.kv_count()[0], 0, 4)  # the one entry becomes trailing bytes
        data = r.recrc()
        if code:
            refused(data, code)
        else:
            assert validate_container(data).kv == {}
    refused(bytes(Patch(relaxed).put(p.header("file_flags"), 0x8 | 0x4, 4).data), "HF-HDR-10")
    e = Patch(relaxed)
    refused(e.put(e.entry(0, "flags"), 1, 4).recrc(), "HF-IDX-14")
    k = Patch(relaxed)
    refused(k.put(k.kv_entries()[0]["value_tag"][0], 0x08, 1).recrc(), "HF-META-16")


@pytest.mark.rules("HF-HDR-17", "HF-HDR-16")
def test_count_hint_never_locates_tensors():
    p = Patch(vector("basic.hrry"))
    data = bytes(p.put(p.header("tensor_count_hint"), 7, 8).data)
    c = open_container(data)  # random access takes the count from the index
    assert c.names == ("weights", "bias") and c.tensor("bias").descriptor.shape == (3,)
    refused(data, "HF-HDR-16")


@pytest.mark.rules("HF-IDX-16")
def test_write_order_comes_from_descriptor_offsets():
    c = validate_container(vector("v05-align8192-sorted-u64.hrry"))
    assert c.names == ("a.weight", "z.bias")  # sorted index
    assert [t.name for t in c.tensors()] == ["z.bias", "a.weight"]  # written first, first in the file


@pytest.mark.rules("HF-DATA-06", "HF-DATA-07")
def test_three_buffers_are_placed_by_arithmetic():
    c = validate_container(vector("v02-quant-three-buffers.hrry"))
    t = next(c.tensors())
    starts = [s for s, _ in t.placement.buffers]
    assert [len(b) for b in t.buffers] == [256, 16, 16]
    assert starts == [4096, 8192, 12288] and t.entry.data_offset == 4096 and t.entry.data_length == 8208


@pytest.mark.rules("HF-DATA-12")
def test_empty_tensor_is_placed_like_any_other():
    c = validate_container(vector("v03-empty-tensor.hrry"))
    t = next(c.tensors())
    assert t.descriptor.shape == (0, 4) and t.entry.data_length == 0 and t.entry.data_offset % 4096 == 0


@pytest.mark.rules("HF-DATA-14", "HF-DATA-10", "HF-DATA-09")
def test_composites_pre_order_both_placements():
    for name, head_offset in (("v06-composite-reference-placement.hrry", 4096),
                              ("v07-composite-spec-placement.hrry", 117)):
        c = validate_container(vector(name))
        comp = c.composite("w")
        assert [m.name for m in comp.members] == ["w.c0", "w.c1"]
        assert c.entry("w").data_offset == head_offset
    head = TensorDescriptor(type_tag=3, shape=(2,), layout=CompositeHead(composition_rule=3, member_count=1))
    data = write_container([("g", head, []), ("m", *f32((2,)))])
    c = validate_container(data)
    g = c.entry("g")
    assert g.data_length == 0 and g.data_offset == g.descriptor_offset + g.descriptor_length  # no A padding
    assert c.entry("m").descriptor_offset == -(-g.data_offset // 8) * 8


def _partition(boxes, parent=(4,)):
    head = TensorDescriptor(type_tag=3, shape=parent, layout=CompositeHead(composition_rule=1, member_count=len(boxes)))
    tensors = [("p", head, [])]
    for i, (offset, size) in enumerate(boxes):
        d, b = f32((size,))
        tensors.append((f"p{i}", d.replace(shard=Shard(parent_shape=parent, shard_offset=(offset,))), b))
    return tensors


@pytest.mark.rules("HF-DATA-16", "HF-DATA-15", "HF-DATA-17")
def test_composite_checks_on_write_and_read():
    validate_container(write_container(_partition([(0, 2), (2, 2)])))
    with pytest.raises(HurrayDeclError, match="HF-DATA-16"):  # overlap
        write_container(_partition([(0, 3), (2, 2)]))
    with pytest.raises(HurrayDeclError, match="HF-DATA-16"):  # gap
        write_container(_partition([(0, 1), (2, 2)]))
    with pytest.raises(HurrayDeclError, match="HF-DATA-15"):  # torn on write
        write_container(_partition([(0, 2), (2, 2)])[:2])
    overlay = TensorDescriptor(type_tag=3, shape=(4,), layout=CompositeHead(composition_rule=2, combine_op=1,
                                                                            member_count=2))
    base, b0 = f32((4,))
    corr, b1 = f32((1,))
    shard = Shard(parent_shape=(4,), shard_offset=(0,))
    members = [("b", base.replace(shard=shard, composite_member=CompositeMember(member_role=MemberRole.BASE)), b0),
               ("c", corr.replace(shard=Shard(parent_shape=(4,), shard_offset=(3,)),
                                  composite_member=CompositeMember(member_role=MemberRole.CORRECTION)), b1)]
    validate_container(write_container([("o", overlay, []), *members]))
    with pytest.raises(HurrayDeclError, match="HF-DATA-16"):  # the base must come first
        write_container([("o", overlay, []), *members[::-1]])
    head = CompositeHead(composition_rule=3, member_count=1)
    heads = [(f"h{i}", TensorDescriptor(type_tag=3, shape=(1,), layout=head), []) for i in range(9)]
    write_container(heads[1:] + [("leaf", *f32((1,)))])  # 8 levels
    with pytest.raises(HurrayDeclError, match="HF-DATA-17"):
        write_container(heads + [("leaf", *f32((1,)))])


# ------------------------------------------------------------------ writer


@pytest.mark.rules("HF-HDR-06", "HF-HDR-20", "HF-DATA-01", "HF-HDR-02-S")
def test_writer_one_forward_pass_to_a_pipe():
    class Pipe:
        def __init__(self):
            self.parts = []

        def write(self, data):
            self.parts.append(bytes(data))
            return len(data)

    pipe = Pipe()
    w = ContainerWriter(pipe, tensor_count_hint=1)
    assert b"".join(pipe.parts).startswith(b"HRRYFILE\x01\x00")  # the header is out before any tensor
    w.add("w", *f32((3,), 1))
    w.finish({"k": "v"})
    data = b"".join(pipe.parts)
    c = validate_container(data)  # V level: header, tensors, KV, index, trailer with nothing between
    assert c.header.tensor_count_hint == 1
    assert c.trailer.kv_offset == 4096 + 16 and c.trailer.index_offset == c.trailer.kv_offset + 16


@pytest.mark.rules("HF-DATA-23")
def test_writer_refuses_buffers_that_do_not_match():
    d, b = f32((2,))
    for buffers in ([], [b[0], b[0]], [b[0][:-1]], [b[0] + b"\x00"]):
        with pytest.raises(HurrayDeclError, match="HF-DATA-23"):
            write_container([("w", d, buffers)])


@pytest.mark.rules("HF-IDX-11", "HF-IDX-12", "HF-IDX-13", "HF-META-09", "HF-META-10", "HF-META-11", "HF-META-13",
                   "HF-META-15", "HF-META-03")
def test_writer_refuses_bad_names_and_keys():
    d, b = f32((1,))
    for names, code in ((["" ], "HF-IDX-11"), (["\ud800"], "HF-IDX-12"), (["a", "a"], "HF-IDX-13")):
        with pytest.raises(HurrayDeclError, match=code):
            write_container([(n, d, b) for n in names])
    for kv, code in (({"": 1}, "HF-META-09"), ({"\udfff": 1}, "HF-META-10"), ({"k": "\ud800"}, "HF-META-13"),
                     ({"k": {"tag": 7, "element_tag": 7, "value": ()}}, "HF-META-15")):
        with pytest.raises(HurrayDeclError, match=code):
            write_container([], {k: KVValue(**v) if isinstance(v, dict) else v for k, v in kv.items()})
    with pytest.raises(HurrayDeclError, match="HF-META-03"):
        write_container([], {}, kv_promised=True)
    with pytest.raises(ArgumentError):
        write_container([], {"k": [1, "x"]})
    with pytest.raises(ArgumentError):
        write_container([(1, d, b)])
    # duplicate keys cannot come from a dict; the reader refuses them (HF-META-11)
    p = Patch(write_container([], {"ab": True, "cd": False}))
    refused(p.put(p.kv_entries()[1]["key"][0], b"ab").recrc(), "HF-META-11")


@pytest.mark.rules("HF-META-19")
def test_writer_refuses_lengths_that_do_not_fit(tmp_path):
    with pytest.raises(HurrayDeclError, match="HF-META-19"):
        encode_kv({"k" * 65536: 1})
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as f:
        f.truncate(1 << 32)
    with open(sparse, "rb") as f:
        view = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))  # virtual: nothing is read
    with pytest.raises(HurrayDeclError, match="HF-META-19"):
        encode_kv({"k": view})  # 2^32 bytes: one more than a u32 length says
    half = view[:1 << 31]
    with pytest.raises(HurrayDeclError, match="HF-META-19"):
        encode_kv({"a": half, "b": half})  # each fits, the section does not

    class Many:
        def __len__(self):
            return 1 << 32

    with pytest.raises(HurrayDeclError, match="HF-META-19"):
        KVValue(tag=KVTag.ARRAY, element_tag=KVTag.BOOL, value=Many())


@settings(max_examples=40)
@given(data=valid_containers())
def test_generated_containers_validate_and_rewrite(data):
    c = validate_container(data)
    assert rewrite(c) == data
    assert [(d, tuple(b)) for d, b in read_sequential(io.BytesIO(data))] == [
        (t.descriptor, tuple(bytes(x) for x in t.buffers)) for t in c.tensors()]


# ------------------------------------------------------------------ sequential mode


@pytest.mark.rules("HF-DATA-24", "HF-DATA-25")
def test_sequential_reader_uses_arithmetic_only():
    d, _ = f32((4,))
    tricky = [b"HRRY" + bytes(12)]  # content that looks like a descriptor is never inspected
    for hint in (1, None):
        data = write_container([("w", d, tricky), ("v", *f32((1,)))], {"k": 1},
                               tensor_count_hint=None if hint is None else 2)
        got = list(read_sequential(io.BytesIO(data)))
        assert [bytes(b[0]) for _, b in got] == [tricky[0], bytes(4)]
    wrong = Patch(write_container([("w", d, tricky)], tensor_count_hint=1))
    wrong.put(wrong.header("tensor_count_hint"), 0, 8)
    with pytest.raises(HurrayDeclError, match="HF-DATA-25"):
        list(read_sequential(io.BytesIO(bytes(wrong.data))))


# ------------------------------------------------------------------ memory and fuzzing


@pytest.mark.rules("HF-META-07", "HF-IDX-09")
def test_claimed_counts_never_drive_allocation():
    tracemalloc.start()
    try:
        refused(vector("i13-kv-count-huge.hrry"), "HF-META-07")
        p = Patch(vector("v04-no-tensors.hrry"))
        p.put(p.c.trailer.index_offset, (1 << 64) - 1, 8)
        refused(p.recrc(), "HF-IDX-09")
        q = Patch(write_container([], {"a": ["x"]}))
        refused(q.put(q.kv_entries()[0]["value.count"][0], 0xFFFF_FFFF, 4).recrc(), "HF-META-07")  # array count
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 << 20, peak


@st.composite
def _mutated(draw):
    data = bytearray(draw(valid_containers()))
    for _ in range(draw(st.integers(1, 4))):
        width = draw(st.sampled_from([1, 2, 4, 8]))
        at = draw(st.integers(0, len(data) - width))
        value = draw(st.sampled_from([0, 1, 7, 8, 0xFF, 4096, 1 << 31, (1 << 64) - 1]) | st.integers(0, (1 << 64) - 1))
        data[at:at + width] = (value % (1 << 8 * width)).to_bytes(width, "little")
    if draw(st.booleans()):
        del data[draw(st.integers(0, len(data))):]
    return bytes(data)


@settings(max_examples=300)
@given(data=_mutated() | st.binary(max_size=200).map(lambda b: b"HRRYFILE\x01" + b))
def test_arbitrary_bytes_give_a_verdict_with_a_known_code(data):
    from hurray_decl.rules import all_rules

    try:
        validate_container(data)
    except HurrayDeclError as err:
        assert err.code in all_rules(), err
    try:
        list(read_sequential(io.BytesIO(data)))
    except HurrayDeclError as err:
        assert err.code in all_rules(), err


def test_pyhurray_files_are_read(tmp_path):
    hurray = pytest.importorskip("hurray")
    path = tmp_path / "x.hrry"
    hurray.save(str(path), {"a": hurray.zeros((3, 5), dtype=hurray.float32), "b": hurray.ones((7,), dtype=hurray.int8)},
                kv={"n": 3, "s": "text", "l": [1.5, 2.5]})
    c = read_container(path).validate()
    assert set(c.names) == {"a", "b"} and c.kv["s"].value == "text" and c.kv["l"].value == (1.5, 2.5)
    assert bytes(c.tensor("b").buffers[0]) == b"\x01" * 7
    assert rewrite(c) == path.read_bytes()
    ours = tmp_path / "ours.hrry"
    ours.write_bytes(rewrite(c))
    back = hurray.load(str(ours))
    assert set(back) == {"a", "b"}


@pytest.mark.rules("HF-HDR-11", "HF-HDR-12", "HF-HDR-14")
def test_writer_header_options_follow_the_header_rules(tmp_path):
    for options, code in (({"alignment": 100}, "HF-HDR-11"), ({"alignment": 2048}, "HF-HDR-12"),
                          ({"first_descriptor_offset": 68}, "HF-HDR-14")):
        with pytest.raises(HurrayDeclError, match=code):
            ContainerWriter(io.BytesIO(), **options)
    data = write_container([("w", *f32((2,)))], alignment=1 << 21, first_descriptor_offset=128)
    c = validate_container(data)
    assert c.entry("w").descriptor_offset == 128 and c.entry("w").data_offset == 1 << 21
    empty = tmp_path / "empty.hrry"
    empty.write_bytes(b"")
    with pytest.raises(HurrayDeclError, match="HF-HDR-03"):
        read_container(empty)
    path = tmp_path / "w.hrry"
    path.write_bytes(data)
    assert bytes(read_container(path).validate().tensor("w").buffers[0]) == bytes(8)
