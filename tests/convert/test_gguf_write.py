"""GGUF metadata both ways and ``convert --to gguf`` (issue 24, acceptance 1).

A .gguf written by gguf's GGUFWriter holds KV entries of every GGUF value type (each integer
width, both float widths, bool, UTF-8 and non-UTF-8 strings, arrays of each, arrays of arrays)
and tensors F32 (10^5+ elements, odd shape), F16, Q8_0, Q4_0, Q5_0 (gguf-quantized, with blocks
of zeros), Q4_K and Q6_K (blocks as llama.cpp's quantizer lays them out: the sub-block of
largest scale at the top code). Then:

* ``convert -> .hrry`` keeps every KV entry, each in its container type, with its GGUF type;
* ``.hrry -> gguf`` gives the same KV (types, bytes, order) and the same bytes for every tensor
  that converted (the K-quants are listed with HQ-EXT-04: a private scheme, written when asked);
* ``onnx-light -> gguf`` gives the original file back, byte for byte.
"""

from __future__ import annotations

import json
import math
import struct

import gguf
import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl.convert.gguf import GGUF_TYPES, gguf_parts, pack_blocks, parts_blocks, sub_blocks
from hurray_decl.convert.metadata import (
    MISSING_TENSORS_KEY,
    TENSOR_TYPES_KEY,
    VALUE_TYPES_KEY,
    check_gguf_entries,
    container_kv,
    from_metadata_props,
    gguf_entries,
    to_metadata_props,
)
from hurray_decl.convert.onnx_light import gguf_to_onnx_light, onnx_light_to_gguf
from hurray_decl.convert.tensors import hurray_to_gguf
from hurray_decl.errors import ArgumentError
from hurray_decl.hurray.container import KVTag, KVValue, read_container
from hurray_decl.onnx_light import ModelProto
from tests.convert.test_cli_convert import cli

Q = gguf.GGMLQuantizationType
T = gguf.GGUFValueType

KV = [  # (key, value, type, array element type)
    ("general.name", "tiny-model", T.STRING, None),
    ("t.u8", 200, T.UINT8, None), ("t.i8", -5, T.INT8, None), ("t.u16", 60000, T.UINT16, None),
    ("t.i16", -30000, T.INT16, None), ("t.u32", 4_000_000_000, T.UINT32, None),
    ("t.i32", -2_000_000_000, T.INT32, None), ("t.u64", 2**64 - 1, T.UINT64, None), ("t.i64", -2**63, T.INT64, None),
    ("t.f32", 0.1, T.FLOAT32, None), ("t.f32_nan", struct.unpack("<f", bytes.fromhex("0100c0ff"))[0], T.FLOAT32, None),
    ("t.f64", 0.1, T.FLOAT64, None), ("t.bool", True, T.BOOL, None), ("t.text", "héllo", T.STRING, None),
    ("t.bytes", b"\xff\x00\xfe", T.STRING, None),
    ("t.au8", [1, 2, 255], T.ARRAY, T.UINT8), ("t.ai8", [-128, 127], T.ARRAY, T.INT8),
    ("t.au16", [65535], T.ARRAY, T.UINT16), ("t.ai16", [-1, 2], T.ARRAY, T.INT16),
    ("t.au32", [7, 8, 9], T.ARRAY, T.UINT32), ("t.ai32", [-7, 8], T.ARRAY, T.INT32),
    ("t.au64", [2**64 - 1], T.ARRAY, T.UINT64), ("t.ai64", [-(2**63)], T.ARRAY, T.INT64),
    ("t.af32", [1.5, -0.0, math.inf], T.ARRAY, T.FLOAT32), ("t.af64", [1e-300, -2.5], T.ARRAY, T.FLOAT64),
    ("t.abool", [True, False, True], T.ARRAY, T.BOOL), ("t.astr", ["a", "bé", ""], T.ARRAY, T.STRING),
    ("t.araw", [b"\xff", b"ok"], T.ARRAY, T.STRING),
    ("t.nested", [[1, 2], [3.5], ["x", "y"], [[True], [False, True]]], T.ARRAY, T.ARRAY),
]


def canonical_k(rng, name: str, blocks: int, top: bool = True) -> np.ndarray:
    """K-quant blocks as llama.cpp's quantizer lays them out (gguf-py has no K-quant quantizer):
    random codes, sub-block scales and mins non-zero with one of each at the top code (``top``;
    otherwise scales in half the range, which llama.cpp never writes)."""
    row = GGUF_TYPES[name]
    per = row.elements // row.sub_block
    lo, hi = row.scale_codes if top else (row.scale_codes[0] // 2, row.scale_codes[1] // 2)
    q = rng.integers(row.low, row.high + 1, (blocks, row.elements))
    sc = rng.integers(lo, hi + 1, (blocks, per))
    sc[sc == 0] = 1
    picks = np.arange(blocks), rng.integers(0, per, blocks)
    if top:
        sc[picks] = row.top_scale
    levels = {"d": rng.uniform(1e-3, 1e-2, blocks).astype(np.float16).astype(np.float32), "sc": sc}
    if row.has_offset:
        mn = rng.integers(0, row.min_codes[1] + 1, (blocks, per))
        mn[picks] = row.top_scale
        levels |= {"dmin": rng.uniform(1e-3, 1e-2, blocks).astype(np.float16).astype(np.float32), "mn": mn}
    return pack_blocks(name, q, levels)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> dict:
    rng = np.random.default_rng(24)
    folder = tmp_path_factory.mktemp("gguf_write")
    path = folder / "model.gguf"
    writer = gguf.GGUFWriter(path, "llama")
    for key, value, vtype, sub in KV:
        writer.add_key_value(key, value, vtype, sub_type=sub)
    tensors = {"f32": rng.standard_normal((3, 33_335)).astype(np.float32),   # 100,005 elements
               "f16": rng.standard_normal((5, 7)).astype(np.float16)}
    for name, value in tensors.items():
        writer.add_tensor(name, value)
    for name in ("Q8_0", "Q4_0", "Q5_0"):
        x = rng.standard_normal((3, 352)).astype(np.float32)
        x[1, 32:64] = 0  # a block of zeros: gguf writes d = -0 (Q4_0, Q5_0) or +0 (Q8_0)
        writer.add_tensor(name.lower(), gguf.quants.quantize(x, Q[name]), raw_dtype=Q[name])
    for name, blocks in (("Q4_K", 9), ("Q6_K", 9)):
        writer.add_tensor(name.lower(), canonical_k(rng, name, blocks).reshape(3, -1), raw_dtype=Q[name])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return {"folder": folder, "path": path}


def fields(path) -> tuple[list, dict]:
    """KV entries (key, types, value bytes) in order, and tensors {name: (type, shape, bytes)}."""
    reader = gguf.GGUFReader(path)
    kv = [(f.name, [t.name for t in f.types], b"".join(p.tobytes() for p in f.parts[3:]))
          for f in reader.fields.values() if len(f.parts) >= 4]
    tensors = {t.name: (t.tensor_type.name, t.shape.tolist(), t.data.tobytes()) for t in reader.tensors}
    return kv, tensors


def test_gguf_to_hrry_keeps_every_kv_entry(model):
    folder = model["folder"]
    done = cli("convert", "model.gguf", "-o", "model.hrry", "--partial", cwd=folder)
    assert done.returncode == 0, done.stderr
    kv = read_container(folder / "model.hrry").kv
    types = dict(item.split(" ", 1)[::-1] for item in kv[VALUE_TYPES_KEY].value)
    assert list(types) == ["general.architecture"] + [k for k, *_ in KV]
    for key, value, vtype, sub in KV:
        got = kv[key]
        assert types[key] == (f"ARRAY[{sub.name}]" if sub is not None else vtype.name)
        if vtype == T.ARRAY and sub == T.ARRAY:
            assert got.tag == KVTag.BYTES  # the GGUF encoding of the array of arrays
        elif key in ("t.bytes",):
            assert (got.tag, got.value) == (KVTag.BYTES, value)
        elif key == "t.araw":
            assert (got.tag, got.element_tag, got.value) == (KVTag.ARRAY, KVTag.BYTES, tuple(value))
        elif key == "t.f32_nan":
            assert struct.pack("<d", got.value).hex() == "000000200000f8ff"  # the float32 payload, moved up
        elif sub in (T.FLOAT32,):
            assert got.value == tuple(float(np.float32(v)) for v in value)
            assert math.copysign(1, got.value[1]) == -1
        elif vtype == T.FLOAT32:
            assert got.value == float(np.float32(value))
        else:
            assert got.value == (tuple(value) if sub is not None else value), key
    recorded = dict(item.split(" ", 1)[::-1] for item in kv[TENSOR_TYPES_KEY].value)
    assert recorded == {"f32": "F32", "f16": "F16", "q8_0": "Q8_0", "q4_0": "Q4_0", "q5_0": "Q5_0"}


def test_hrry_to_gguf_same_kv_and_tensor_bytes(model):
    folder = model["folder"]
    assert cli("convert", "model.gguf", "-o", "model.hrry", "--partial", cwd=folder).returncode == 0
    done = cli("convert", "model.hrry", "--to", "gguf", "-o", "back.gguf", "--json", cwd=folder)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    converted = [r["name"] for r in report["tensors"] if r["status"] == "converted"]
    assert converted == ["f32", "f16", "q8_0", "q4_0", "q5_0"]
    kv, tensors = fields(folder / "back.gguf")
    kv0, tensors0 = fields(model["path"])
    assert [e for e in kv if e[0] != MISSING_TENSORS_KEY] == kv0  # and the list of what the partial model lacks:
    (missing,) = [e for e in kv if e[0] == MISSING_TENSORS_KEY]
    assert missing[1] == ["ARRAY", "STRING"] and b"HQ-EXT-04 Q4_K q4_k" in missing[2]
    assert b"HQ-EXT-04 Q6_K q6_k" in missing[2]
    assert set(tensors) == {"f32", "f16", "q8_0", "q4_0", "q5_0"}
    for name, tensor in tensors.items():
        assert tensor == tensors0[name], name
    assert not list(folder.glob(".back.gguf*"))  # the temporary file was renamed


def test_onnx_light_to_gguf_gives_the_file_back(model):
    folder = model["folder"]
    assert cli("convert", "model.gguf", "--to", "onnx-light", "-o", "model.onnx", cwd=folder).returncode == 0
    onnx = ModelProto.FromString((folder / "model.onnx").read_bytes())
    assert {p.key for p in onnx.metadata_props} >= {k for k, *_ in KV}
    done = cli("convert", "model.onnx", "--to", "gguf", "-o", "back.gguf", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert "7 converted, 0 skipped" in done.stdout
    assert fields(folder / "back.gguf") == fields(model["path"])
    assert (folder / "back.gguf").read_bytes() == model["path"].read_bytes()
    # onnx-light -> .hrry (through the values' GGUF form) -> gguf: the same KV and single-level tensors
    done = cli("convert", "model.onnx", "-o", "again.hrry", "--json", "--partial", cwd=folder)
    assert done.returncode == 0, done.stderr
    skipped = {r["name"]: r["code"] for r in json.loads(done.stdout)["tensors"] if r["status"] != "converted"}
    assert skipped == {"q4_k": "HQ-HDR-09", "q6_k": "HQ-HDR-09"}
    assert cli("convert", "again.hrry", "--to", "gguf", "-o", "again.gguf", cwd=folder).returncode == 0
    kv, tensors = fields(folder / "again.gguf")
    kv0, tensors0 = fields(model["path"])
    assert [e for e in kv if e[0] != MISSING_TENSORS_KEY] == kv0
    assert tensors == {n: t for n, t in tensors0.items() if n not in skipped}


def test_a_failed_gguf_conversion_writes_nothing(model, tmp_path):
    done = cli("convert", str(model["path"]), "--to", "gguf", "-o", str(tmp_path / "x.gguf"), cwd=tmp_path)
    assert done.returncode == 2 and "no conversion from gguf to gguf" in done.stderr
    assert not list(tmp_path.iterdir())


# --- the mappings one by one ---------------------------------------------------------------------

def test_metadata_props_round_trip_every_container_tag():
    kv = {"s": KVValue.of("text"), "i": KVValue.of(-3), "u": KVValue(tag=KVTag.UINT64, value=2**64 - 1),
          "f": KVValue(tag=KVTag.FLOAT64, value=struct.unpack("<d", bytes.fromhex("0100000000f8ff7f"))[0]),
          "b": KVValue.of(False), "y": KVValue.of(b"\x00\xff"), "af": KVValue.of([-0.0, 1.5]),
          "ay": KVValue(tag=KVTag.ARRAY, element_tag=KVTag.BYTES, value=(b"\x01",)),
          "empty": KVValue(tag=KVTag.ARRAY, element_tag=KVTag.INT64, value=())}
    props = to_metadata_props(kv)
    assert props[0] == ("s", "text")  # strings stay readable as themselves
    back = from_metadata_props(props)
    assert list(back) == list(kv)
    for key, value in kv.items():
        assert (back[key].tag, back[key].element_tag) == (value.tag, value.element_tag)
        if value.tag == KVTag.FLOAT64:
            assert struct.pack("<d", back[key].value) == struct.pack("<d", value.value)  # the NaN payload
        elif key == "af":
            assert [struct.pack("<d", v) for v in back[key].value] == [struct.pack("<d", v) for v in value.value]
        else:
            assert back[key].value == value.value
    assert from_metadata_props([("plain", "1")])["plain"] == KVValue.of("1")  # another producer's entry


def test_container_values_that_do_not_fit_their_gguf_type_are_listed():
    kv = container_kv([]) | {"x": KVValue(tag=KVTag.UINT64, value=300), "w": KVValue.of(5),
                             "e": KVValue(tag=KVTag.ARRAY, element_tag=KVTag.INT64, value=()), "n": KVValue.of(7),
                             VALUE_TYPES_KEY: KVValue.of(["UINT8 x", "UINT8 w", "ARRAY[INT64] e"])}
    entries, refused = gguf_entries(kv)
    assert [k for k, _ in refused] == ["x", "w"]
    assert "does not fit GGUF UINT8" in refused[0][1].detail and "no GGUF UINT8 form" in refused[1][1].detail
    assert [(e.key, e.type) for e in entries] == [("e", "ARRAY[INT64]"), ("n", "INT64")]  # n: its own type
    assert [k for k, _ in check_gguf_entries(entries)] == ["e"]  # gguf's writer refuses empty arrays


def test_hurray_quantized_tensor_to_q4_0_dequantizes_the_same():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((7, 33 * 32)).astype(np.float32)
    t = hd.quantize(x, "per_block_affine", axis=1, block_size=32, storage="int4", scale_type="float16")
    g = hurray_to_gguf("w", t.descriptor, t.buffers)
    assert g.type_name == "Q4_0"
    got = gguf.quants.dequantize(g.data.reshape(7, -1), Q.Q4_0)
    assert np.array_equal(got.view(np.uint32), hd.dequantize(t.descriptor, t.buffers).view(np.uint32))


def test_hurray_asymmetric_uint4_is_q4_1_and_8_bit_is_q8_0():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 64)).astype(np.float32)
    for storage, symmetric, expected in (("uint4", False, "Q4_1"), ("int8", True, "Q8_0")):
        t = hd.quantize(x, "per_block_affine", axis=1, block_size=32, storage=storage, symmetric=symmetric,
                        scale_type="float16")
        try:
            g = hurray_to_gguf("w", t.descriptor, t.buffers)
        except ArgumentError as err:  # m = -z * d need not be a float16: then it is refused, by name
            assert "no exact Q" in err.detail
            continue
        assert g.type_name in (expected, "Q5_0", "Q5_1")
        got = gguf.quants.dequantize(g.data.reshape(3, -1), Q[g.type_name])
        assert np.array_equal(got.view(np.uint32), hd.dequantize(t.descriptor, t.buffers).view(np.uint32))


def test_hurray_blocks_along_another_axis_are_refused():
    x = np.linspace(-1, 1, 64 * 64, dtype=np.float32).reshape(64, 64)
    t = hd.quantize(x, "per_block_affine", axis=0, block_size=32, storage="int4", scale_type="float16")
    with pytest.raises(ArgumentError, match="32 elements along the last axis"):
        hurray_to_gguf("w", t.descriptor, t.buffers)


@pytest.mark.parametrize("name", ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"])
def test_single_level_gguf_blocks_back_from_onnx_light_and_hurray(name):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 33 * 32 + 32 * 3)).astype(np.float32)
    x[0, :32] = 0
    x[2, 32:64] = 0.25
    raw = gguf.quants.quantize(x, Q[name]).reshape(-1).view(np.uint8)
    assert np.array_equal(onnx_light_to_gguf(gguf_to_onnx_light(raw, name, x.shape), None, name)[1], raw)
    try:
        parts = gguf_parts(raw, name, x.shape)
    except hd.HurrayDeclError:  # Q4_1 / Q5_1 whose m is not -z * d: no per-block affine form
        assert name in ("Q4_1", "Q5_1")
        return
    assert np.array_equal(parts_blocks(parts, name)[1], raw)


@pytest.mark.parametrize("name", ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"])
def test_k_quants_back_from_onnx_light(name):
    rng = np.random.default_rng(8)
    raw = canonical_k(rng, name, 12)
    shape = (3, 4 * 256)
    assert np.array_equal(onnx_light_to_gguf(gguf_to_onnx_light(raw, name, shape))[1], raw)
    # scales llama.cpp would not write (no sub-block at the top code) still give the same values
    other = canonical_k(rng, name, 12, top=False)
    again = onnx_light_to_gguf(gguf_to_onnx_light(other, name, shape))[1]
    reference = sub_blocks(other, name, shape).reference()
    assert np.array_equal(sub_blocks(again, name, shape).reference().view(np.uint32), reference.view(np.uint32))


def test_stream_to_gguf(tmp_path):
    from hurray_decl.hurray.stream import StreamWriter

    rng = np.random.default_rng(9)
    tensors = [hd.quantize(rng.standard_normal((3, 96)), "per_block_affine", axis=1, block_size=32, storage=storage,
                           scale_type="float16") for storage in ("int4", "int8")]
    tensors.append(hd.Tensor.from_numpy(rng.standard_normal((5, 3)).astype(np.float16)))
    with (tmp_path / "w.hrs").open("wb") as sink, StreamWriter(sink) as writer:
        for t in tensors:
            writer.write(t.descriptor, t.buffers)
    done = cli("convert", "w.hrs", "--to", "gguf", "-o", "w.gguf", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    reader = gguf.GGUFReader(tmp_path / "w.gguf")
    assert [(t.name, t.tensor_type.name) for t in reader.tensors] == [("w.0", "Q4_0"), ("w.1", "Q8_0"), ("w.2", "F16")]
    for t, g in zip(tensors, reader.tensors):
        got = gguf.quants.dequantize(g.data, g.tensor_type).astype(np.float32)
        want = np.asarray(t.numpy(), np.float32)
        assert np.array_equal(got.reshape(-1).view(np.uint32), want.reshape(-1).view(np.uint32))


@pytest.mark.parametrize("props", [
    [("hurray_decl.kv_types", "[1]")], [("hurray_decl.kv_types", "{"), ("a", "1")],
    [("hurray_decl.kv_types", '{"a": "int64"}'), ("a", "1.5")],
    [("hurray_decl.kv_types", '{"a": "float64"}'), ("a", '"zz"')],
    [("hurray_decl.kv_types", '{"a": "array[bool]"}'), ("a", "[1]")],
    [("hurray_decl.kv_types", '{"a": "nothing"}'), ("a", "1")],
])
def test_bad_metadata_props_are_refused_by_name(props):
    with pytest.raises(ArgumentError):
        from_metadata_props(props)


# --- the gguf target, tensor by tensor -----------------------------------------------------------

@pytest.fixture
def blocks_container(tmp_path) -> dict:
    """A .hrry container of per-block tensors (Q4_0, Q8_0 and F16 in GGUF), one with blocks along
    axis 0 (refused), and the GGUF tensors the conversion makes of the others."""
    from hurray_decl.hurray.container.writer import ContainerWriter

    rng = np.random.default_rng(25)
    tensors = {"a": hd.quantize(rng.standard_normal((7, 160)), "per_block_affine", axis=1, block_size=32,
                                storage="int4", scale_type="float16"),
               "axis0": hd.quantize(rng.standard_normal((64, 64)), "per_block_affine", axis=0, block_size=32,
                                    storage="int4", scale_type="float16"),
               "b": hd.quantize(rng.standard_normal((5, 3, 64)), "per_block_affine", axis=2, block_size=32,
                                storage="int8", scale_type="float16"),
               "c": hd.Tensor.from_numpy(rng.standard_normal((3, 5)).astype(np.float16))}
    with (tmp_path / "w.hrry").open("wb") as stream:
        writer = ContainerWriter(stream, tensor_count_hint=len(tensors))
        for name, t in tensors.items():
            writer.add(name, t.descriptor, t.buffers)
        writer.finish()
    kept = {n: hurray_to_gguf(n, t.descriptor, t.buffers) for n, t in tensors.items() if n != "axis0"}
    return {"folder": tmp_path, "kept": kept}


def test_gguf_target_converts_and_writes_tensor_by_tensor(blocks_container, monkeypatch, capsys):
    """A first pass converts every tensor (the refusals and GGML types depend on the values) and keeps
    none; then each kept tensor is converted again and written before the next is converted. The
    file is the one GGUFWriter writes with every tensor held (``add_tensor``), byte for byte."""
    import weakref

    from hurray_decl.cli import main
    from hurray_decl.convert import tensors as convert

    folder, kept = blocks_container["folder"], blocks_container["kept"]
    events: list[tuple] = []
    alive: list[weakref.ref] = []
    real, real_write = convert.hurray_to_gguf, gguf.GGUFWriter.write_tensor_data

    def counted(name, *rest):
        events.append(("convert", name, sum(r() is not None for r in alive)))  # converted bytes still held
        tensor = real(name, *rest)
        alive.append(weakref.ref(tensor.data))
        return tensor

    def write(self, tensor, *rest, **options):
        events.append(("write", tensor.nbytes, sum(r() is not None for r in alive)))
        return real_write(self, tensor, *rest, **options)

    monkeypatch.setattr(convert, "hurray_to_gguf", counted)
    monkeypatch.setattr(gguf.GGUFWriter, "write_tensor_data", write)
    assert main(["convert", str(folder / "w.hrry"), "--to", "gguf", "-o", str(folder / "w.gguf"), "--json",
                 "--partial"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["status"] == "converted") for r in report["tensors"]] == [
        ("a", True), ("axis0", False), ("b", True), ("c", True)]
    sizes = {n: t.data.nbytes for n, t in kept.items()}
    assert events == [("convert", "a", 0), ("convert", "axis0", 0), ("convert", "b", 0), ("convert", "c", 0),
                      ("convert", "a", 0), ("write", sizes["a"], 1), ("convert", "b", 0), ("write", sizes["b"], 1),
                      ("convert", "c", 0), ("write", sizes["c"], 1)]
    whole = gguf.GGUFWriter(folder / "whole.gguf", "")  # the same tensors, all held, in one call
    whole.add_array(MISSING_TENSORS_KEY, [f"{report['tensors'][1]['code']} hurray axis0"])  # what --partial left out
    for name, t in kept.items():
        whole.add_tensor(name, t.data.reshape(*t.shape[:-1], -1), raw_dtype=Q[t.type_name])
    whole.write_header_to_file()
    whole.write_kv_data_to_file()
    whole.write_tensors_to_file()
    whole.close()
    assert (folder / "w.gguf").read_bytes() == (folder / "whole.gguf").read_bytes()
    assert [(t.name, t.tensor_type.name) for t in gguf.GGUFReader(folder / "w.gguf").tensors] == [
        ("a", "Q4_0"), ("b", "Q8_0"), ("c", "F16")]


@pytest.mark.parametrize("name, says", [("a", "a is now Q5_0 [7, 110] bytes, not Q4_0 [7, 90]"),
                                         ("b", "b is now refused ([ARGUMENT] elements[0]: no exact Q5_0 form")])
def test_a_source_that_converts_otherwise_the_second_time_writes_nothing(blocks_container, monkeypatch, capsys, name,
                                                                         says):
    from hurray_decl.cli import main
    from hurray_decl.convert import tensors as convert

    folder = blocks_container["folder"]
    real, calls = convert.hurray_to_gguf, []

    def drifting(tensor, descriptor, buffers, ggml_type=None):  # Q5_0 the second time, as if its bytes changed
        calls.append(tensor)
        return real(tensor, descriptor, buffers, "Q5_0" if calls.count(name) == 2 else ggml_type)

    monkeypatch.setattr(convert, "hurray_to_gguf", drifting)
    assert main(["convert", str(folder / "w.hrry"), "--to", "gguf", "-o", str(folder / "w.gguf"), "--partial"]) == 3
    assert f"the source changed during the conversion: {says}" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == ["w.hrry"]
