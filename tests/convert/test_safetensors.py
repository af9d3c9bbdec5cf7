"""safetensors in and out: files written by the safetensors package itself, every dtype it has,
through Hurray tensors and back, bit for bit, with ``__metadata__`` kept both ways."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

safetensors = pytest.importorskip("safetensors")
from safetensors import TensorSpec, serialize_file
from safetensors.numpy import save_file

import hurray_decl as hd
from hurray_decl.convert.safetensors import (
    DTYPES,
    from_hurray,
    is_safetensors,
    kv_to_metadata,
    metadata_to_kv,
    open_safetensors,
    to_hurray,
    write_safetensors,
)
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray.tables import storage

ROOT = Path(__file__).resolve().parents[2]


def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hurray_decl", *argv], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)


def raw_file(path: Path, tensors: dict[str, tuple[str, tuple[int, ...], bytes]], metadata=None) -> None:
    """A file written by the package's own serializer from raw bytes (every dtype, float8 and F4 too)."""
    keep = {name: np.frombuffer(data, np.uint8).copy() for name, (_, _, data) in tensors.items()}
    specs = {name: TensorSpec(dtype=dtype, shape=shape, data_ptr=keep[name].ctypes.data, data_len=len(data))
             for name, (dtype, shape, data) in tensors.items()}
    serialize_file(specs, str(path), metadata=metadata)


WRITER_SHAPES = {"F4": (3, 5)}  # float4_e2m1fn_x2: the package counts byte pairs in the last dimension


def every_dtype(rng: np.random.Generator) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    """Random bit patterns of every convertible dtype, shape (3, 7) (F4: 3 x 5 byte pairs), valid Hurray values."""
    tensors = {}
    for code, row in DTYPES.items():
        if row.element is None:
            continue
        shape = WRITER_SHAPES.get(code, (3, 7))
        itemsize = 1 if code == "F4" else storage.value_dtype(row.element).itemsize  # F4: bytes of the pairs
        data = rng.integers(0, 256, size=int(np.prod(shape)) * itemsize, dtype=np.uint8)
        if code == "BOOL":
            data &= 1
        if code == "F8_E8M0":  # Hurray refuses 0x00 and 0xFF (HE-26)
            data = np.clip(data, 1, 254).astype(np.uint8)
        tensors[f"t_{code}"] = (row.writer_name, shape, data.tobytes())
    return tensors


def test_every_dtype_reads_with_its_bits_and_comes_back(tmp_path):
    rng = np.random.default_rng(0)
    source = every_dtype(rng)
    raw_file(tmp_path / "all.safetensors", source, {"format": "np"})
    with open_safetensors(tmp_path / "all.safetensors") as opened:
        assert opened.metadata == {"format": "np"}
        assert set(opened.names) == set(source)
        tensors = {}
        for name in opened.names:
            values = opened.array(name)
            _, shape, data = source[name]
            code = name[2:]
            if code == "F4":  # two values a byte, element 2k in the low nibble
                codes = np.frombuffer(data, np.uint8)
                unpacked = np.stack([codes & 15, codes >> 4], axis=-1).reshape(shape[0], shape[1] * 2)
                assert values.shape == (3, 10)
                assert np.array_equal(values.view(np.uint8), unpacked)
            else:
                assert values.shape == shape
                assert values.tobytes() == data, name
            tensors[name] = to_hurray(name, values)
            assert tensors[name].descriptor.quantization is None
    write_safetensors(tmp_path / "back.safetensors", [(n, from_hurray(t)) for n, t in tensors.items()],
                      {"format": "np"})
    assert (tmp_path / "back.safetensors").read_bytes() == (tmp_path / "all.safetensors").read_bytes()


@pytest.mark.parametrize("code, rule", [("F8_E4M3FNUZ", "HE-23"), ("F8_E5M2FNUZ", "HE-24")])
def test_the_fnuz_types_are_refused_by_their_rules(tmp_path, code, rule):
    raw_file(tmp_path / "f.safetensors", {"x": (DTYPES[code].writer_name, (4,), bytes(4))})
    with open_safetensors(tmp_path / "f.safetensors") as opened, pytest.raises(HurrayDeclError) as caught:
        opened.array("x")
    assert caught.value.code == rule


def float_model(path: Path, metadata: dict[str, str] | None) -> dict[str, np.ndarray]:
    import ml_dtypes

    rng = np.random.default_rng(3)
    tensors = {"emb": rng.standard_normal((331, 307)).astype(np.float32),  # 10^5 elements, odd shape
               "norm": rng.standard_normal(307).astype(np.float16),
               "proj": rng.standard_normal((7, 11, 13)).astype(ml_dtypes.bfloat16)}
    tensors["emb"].reshape(-1)[:4] = [np.nan, -0.0, np.inf, 1e-45]  # NaN, signed zero, inf, a subnormal
    save_file(tensors, str(path), metadata=metadata)
    return tensors


@pytest.mark.parametrize("metadata", [None, {"format": "pt"}])
def test_a_float_file_round_trips_through_hrry_byte_for_byte(tmp_path, metadata):
    original = float_model(tmp_path / "m.safetensors", metadata)
    done = cli("convert", "m.safetensors", "-o", "m.hrry", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert hd.load_kv(tmp_path / "m.hrry") == (metadata or {})
    loaded = hd.load(tmp_path / "m.hrry")
    assert list(loaded) == ["emb", "proj", "norm"]  # the file's order: the package's (alignment, then name)
    for name, values in original.items():
        assert np.asarray(loaded[name]).tobytes() == values.tobytes()
    back = cli("convert", "m.hrry", "--to", "safetensors", "-o", "back.safetensors", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert (tmp_path / "back.safetensors").read_bytes() == (tmp_path / "m.safetensors").read_bytes()


def test_metadata_of_many_keys_is_kept_both_ways(tmp_path):
    metadata = {f"key{i}": f"value {i} \u00e9" for i in range(12)} | {"json": json.dumps({"a": [1, 2]})}
    float_model(tmp_path / "m.safetensors", metadata)
    assert cli("convert", "m.safetensors", "-o", "m.hrry", cwd=tmp_path).returncode == 0
    kv = hd.load_kv(tmp_path / "m.hrry")
    assert kv == metadata and all(isinstance(v, str) for v in kv.values())
    with open_safetensors(tmp_path / "m.safetensors") as opened:
        assert list(kv) == list(opened.metadata)  # the file's own order
    assert cli("convert", "m.hrry", "--to", "safetensors", "-o", "b.safetensors", cwd=tmp_path).returncode == 0
    with safetensors.safe_open(str(tmp_path / "b.safetensors"), framework="numpy") as reread:
        assert reread.metadata() == metadata


def test_kv_values_that_are_not_strings_become_json_text():
    assert metadata_to_kv({"a": "1"}) == {"a": "1"}
    assert kv_to_metadata({"s": "x", "n": 3, "l": (1, 2), "f": 0.5}) == {"s": "x", "n": "3", "l": "[1, 2]",
                                                                          "f": "0.5"}


def test_quantized_tensors_are_listed_and_the_plain_ones_written(tmp_path):
    w = hd.quantize(np.linspace(-1, 1, 4 * 64).reshape(4, 64), "per_block_affine", block_size=32)
    hd.save(tmp_path / "m.hrry", {"w": w, "b": np.arange(5, dtype=np.float32)}, kv={"layers": [1, 2]})
    refused = cli("convert", "m.hrry", "--to", "safetensors", "-o", "m.safetensors", "--json", cwd=tmp_path)
    assert refused.returncode == 1 and not (tmp_path / "m.safetensors").exists()  # nothing without --partial
    done = cli("convert", "m.hrry", "--to", "safetensors", "-o", "m.safetensors", "--json", "--partial", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["tensors"]}
    assert rows["w"]["status"] == "skipped" and rows["w"]["code"] == "HT-SEC-01"
    assert "--dequantize" in rows["w"]["reason"]
    with open_safetensors(tmp_path / "m.safetensors") as opened:
        assert opened.names == ["b"] and opened.metadata == {"layers": "[1, 2]"}
        assert np.array_equal(opened.array("b"), np.arange(5, dtype=np.float32))
    done = cli("convert", "m.hrry", "--to", "safetensors", "-o", "d.safetensors", "--dequantize", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with open_safetensors(tmp_path / "d.safetensors") as opened:
        assert opened.array("w").tobytes() == w.numpy().tobytes()


def test_detection_and_bad_files(tmp_path):
    float_model(tmp_path / "m.safetensors", None)
    assert is_safetensors((tmp_path / "m.safetensors").read_bytes()[:16])
    assert not is_safetensors(b"GGUF\x03\x00\x00\x00") and not is_safetensors(b"HRRYFILE")
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes((tmp_path / "m.safetensors").read_bytes()[:5000])
    done = cli("convert", "cut.safetensors", "-o", "x.hrry", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "not a valid safetensors file" in done.stderr
    assert not (tmp_path / "x.hrry").exists()
    gguf_to_st = cli("convert", "cut.safetensors", "--to", "safetensors", "-o", "y.safetensors", cwd=tmp_path)
    assert gguf_to_st.returncode == 2 and "no conversion from safetensors to safetensors" in gguf_to_st.stderr


def handmade(path: Path, header: dict, data: bytes) -> None:
    """A safetensors file from its header and data, as any writer may make it (no package checks)."""
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + data)


def test_a_shape_numpy_cannot_represent_is_refused_by_rule(tmp_path):
    """T4-D: [0, 2^63-1] holds no element, so the package's checks pass, but NumPy cannot build
    the array (it sizes it by the non-zero dimensions): HX-01, exit 1, nothing written."""
    handmade(tmp_path / "z.safetensors", {"t": {"dtype": "F32", "shape": [0, 2**63 - 1], "data_offsets": [0, 0]}}, b"")
    with open_safetensors(tmp_path / "z.safetensors") as opened, pytest.raises(HurrayDeclError) as caught:
        opened.array("t")
    assert caught.value.code == "HX-01"
    done = cli("convert", "z.safetensors", "-o", "z.hrry", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr and "HX-01" in done.stdout + done.stderr
    assert not (tmp_path / "z.hrry").exists()


BOOL_BYTES = bytes([0x00, 0x01, 0x02, 0x9E, 0xFF])


def test_bool_bytes_other_than_0_and_1_are_their_truth_value(tmp_path):
    """T4-E: a BOOL byte is true when it is not zero (02 and 9e were packed by their low bit, as
    False); ``convert`` and ``hd.save`` read the same bytes alike. Then 10^5 + 3 bytes, so that
    the packing crosses many bytes and ends in a partial one."""
    rng = np.random.default_rng(5)
    long = rng.integers(0, 256, 100_003, dtype=np.uint8)
    long[::7] = 0
    raw_file(tmp_path / "b.safetensors", {"b": ("bool", (5,), BOOL_BYTES), "long": ("bool", (long.size,),
                                                                                    long.tobytes())})
    done = cli("convert", "b.safetensors", "-o", "b.hrry", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    expected = {"b": np.array([False, True, True, True, True]), "long": long != 0}
    hd.save(tmp_path / "saved.hrry", {name: np.frombuffer(data, np.uint8).view(np.bool_)
                                      for name, data in (("b", BOOL_BYTES), ("long", long.tobytes()))})
    for path in ("b.hrry", "saved.hrry"):
        loaded = hd.load(tmp_path / path)
        for name, values in expected.items():
            assert np.array_equal(loaded[name].numpy(), values), (path, name)
        assert loaded["b"].buffers[0] == b"\x1e"  # HE-12: element i is bit i, LSB first
