"""GGUF's K-quants in the project's private scheme ggml_super_block (0xF0): bit-identical to
``gguf.quants.dequantize`` (signed zeros, infinities and NaNs of random blocks included), back to
GGUF byte for byte, written only with ``--private-schemes`` and refused by name otherwise
(issue 33, acceptance 1 for Q2_K .. Q6_K, and Q4_1 / Q5_1 whatever their minimum)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import gguf
import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl.convert.gguf import GGUF_TYPES, GgufTensor
from hurray_decl.convert.hurray import from_gguf, from_gguf_super_blocks, super_blocks_gguf
from hurray_decl.convert.tensors import PRIVATE_TYPES, gguf_to_hurray
from hurray_decl.hurray.quantization import SCHEMES, register_project_schemes, unregister_private_scheme
from hurray_decl.hurray.schemes import ggml_super_block
from hurray_decl.hurray.schemes.ggml_super_block import GgmlSuperBlock
from hurray_decl.hurray.tensor import read_tensor_descriptor, write_tensor_descriptor
from tests.conftest import PRIVATE_TAG
from tests.convert.test_cli_convert import ROOT, cli
from tests.convert.test_gguf_file import write
from tests.convert.test_gguf_write import canonical_k
from tests.helpers import raises_rule

Q = gguf.GGMLQuantizationType
K_QUANTS = ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")
WITH_MINIMUM = ("Q4_1", "Q5_1")  # per-block affine holds them only when m = -z * d


def u32(a) -> np.ndarray:
    return np.ascontiguousarray(a, np.float32).reshape(-1).view(np.uint32)


def test_the_tag_and_the_types():
    assert ggml_super_block.TAG == PRIVATE_TAG and set(PRIVATE_TYPES) == {*K_QUANTS, *WITH_MINIMUM}
    assert ggml_super_block.ROW.length == ggml_super_block.LENGTH and ggml_super_block.ROW.private


@pytest.mark.parametrize("name", K_QUANTS + WITH_MINIMUM)
@pytest.mark.parametrize("kind", ["llama.cpp", "random bytes"])
def test_k_quants_are_exact_and_come_back(name, kind):
    row = GGUF_TYPES[name]
    rng = np.random.default_rng(len(name) + row.elements)
    shape = (391, 256) if name in ("Q6_K", "Q4_1") else (3, 5, 512)  # 100,096 elements; rank 3
    blocks = int(np.prod(shape)) // row.elements
    if kind == "llama.cpp" and name in WITH_MINIMUM:  # gguf's quantizer: m the block's minimum, no -z * d
        raw = gguf.quants.quantize(rng.standard_normal(shape).astype(np.float32), Q[name]).reshape(-1)
        assert descriptor_refused(raw, name, shape)
    elif kind == "llama.cpp":
        raw = canonical_k(rng, name, blocks)
    else:  # every bit pattern: d and dmin infinite, NaN among them; block 0 of zeros of both signs
        raw = rng.integers(0, 256, blocks * row.record.itemsize, dtype=np.uint8)
        records = raw.view(row.record)
        records["d"][0], records["d"][1] = -0.0, np.nan  # block 0 of -0 values, block 1 of NaNs
        if "dmin" in row.record.names:
            records["dmin"][0] = 0.0  # q * -0 - 0 = -0
        if "m" in row.record.names:
            records["m"][0] = -0.0  # q * -0 + -0 = -0
    descriptor, buffers = from_gguf_super_blocks(raw, name, shape)
    assert isinstance(descriptor.quantization, GgmlSuperBlock) and descriptor.quantization.scheme_tag == 0xF0
    assert descriptor.quantization.added == (name in WITH_MINIMUM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # gguf's own products of infinities
        want = gguf.quants.dequantize(raw.reshape(*shape[:-1], -1), Q[name])
    got = hd.dequantize(descriptor, buffers)
    assert got.shape == shape and np.array_equal(u32(got), u32(want))
    if kind == "random bytes":
        assert np.isnan(want).any() and (np.signbit(want) & (want == 0)).any()
    type_name, back = super_blocks_gguf(descriptor, buffers)
    assert type_name == name and back.tobytes() == raw.tobytes()
    again = read_tensor_descriptor(write_tensor_descriptor(descriptor))  # the declaration reads what it wrote
    assert again == descriptor


def descriptor_refused(raw, name, shape) -> bool:
    """Per-block affine refuses these blocks (HQ-PB-22), so only the private scheme holds them."""
    try:
        from_gguf(raw, name, shape)
    except hd.HurrayDeclError as err:
        return err.code == "HQ-PB-22"
    return False


def test_added_minimum_needs_minimums():
    raw = canonical_k(np.random.default_rng(5), "Q6_K", 1)
    descriptor, buffers = from_gguf_super_blocks(raw, "Q6_K", (1, 256))
    flagged = descriptor.model_copy(update={"quantization": descriptor.quantization.model_copy(update={"flags": 1})})
    with raises_rule("HQ-EXT-03", path="flags"):
        hd.validate_buffers(read_tensor_descriptor(write_tensor_descriptor(flagged)), buffers)


def test_written_only_when_asked_and_refused_by_name():
    raw = canonical_k(np.random.default_rng(1), "Q4_K", 2)
    tensor = GgufTensor("w", "Q4_K", (2, 256), raw)
    with raises_rule("HQ-EXT-04", path="ggml_type") as refused:
        gguf_to_hurray(tensor)
    assert "ggml_super_block" in str(refused.value) and "--private-schemes" in str(refused.value)
    descriptor, _ = gguf_to_hurray(tensor, private_schemes=True)
    encoded = write_tensor_descriptor(descriptor)
    unregister_private_scheme(0xF0)  # a reader without the agreement: the tag is an unknown private one
    assert SCHEMES.get(0xF0) is None
    with pytest.raises(hd.HurrayDeclError) as unknown:
        read_tensor_descriptor(encoded)
    assert unknown.value.code.startswith("HQ-EXT")


def test_a_code_outside_the_types_range_has_no_gguf_form():
    raw = canonical_k(np.random.default_rng(2), "Q5_K", 1)
    descriptor, buffers = from_gguf_super_blocks(raw, "Q5_K", (1, 256))
    data = bytearray(buffers[0])
    data[0] = 40  # uint8 storage holds 40; Q5_K codes are 0 .. 31
    with raises_rule("ARGUMENT", path="codes[0]"):
        super_blocks_gguf(descriptor, [bytes(data), *buffers[1:]])


def test_the_commands(tmp_path):
    rng = np.random.default_rng(33)
    tensors = [(name.lower(), canonical_k(rng, name, 6).reshape(3, -1), Q[name]) for name in K_QUANTS]
    tensors += [("q4_0", gguf.quants.quantize(rng.standard_normal((3, 64)).astype(np.float32), Q.Q4_0), Q.Q4_0),
                ("q4_1", gguf.quants.quantize(rng.standard_normal((3, 64)).astype(np.float32), Q.Q4_1), Q.Q4_1),
                ("norm", rng.standard_normal(7).astype(np.float32), None)]
    write(tmp_path / "m.gguf", tensors)
    done = cli("convert", "m.gguf", "-o", "m.hrry", "--json", cwd=tmp_path)
    assert done.returncode == 1 and not (tmp_path / "m.hrry").exists()
    rows = {r["name"]: r for r in json.loads(done.stdout)["tensors"] if r["status"] != "converted"}
    assert set(rows) == {n.lower() for n in K_QUANTS} | {"q4_1"}
    assert all(r["code"] == ("HQ-PB-22" if n == "q4_1" else "HQ-EXT-04") for n, r in rows.items())
    assert all(r["converts_with"][0] == "--private-schemes" for r in rows.values())
    done = cli("convert", "m.gguf", "-o", "m.hrry", "--private-schemes", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    register_project_schemes()
    loaded = hd.load(str(tmp_path / "m.hrry"))
    reader = gguf.GGUFReader(tmp_path / "m.gguf")
    for t in reader.tensors:
        want = gguf.quants.dequantize(t.data, t.tensor_type)
        assert np.array_equal(u32(loaded[t.name].numpy()), u32(want)), t.name
    done = cli("convert", "m.hrry", "--to", "gguf", "-o", "back.gguf", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "back.gguf").read_bytes() == (tmp_path / "m.gguf").read_bytes()
    done = cli("convert", "m.hrry", "--to", "safetensors", "--dequantize", "-o", "m.safetensors", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    from safetensors.numpy import load_file

    values = load_file(str(tmp_path / "m.safetensors"))
    assert np.array_equal(u32(values["q6_k"]), u32(gguf.quants.dequantize(reader.tensors[4].data, Q.Q6_K)))
    # another program of this package reads the scheme too (hd.load knows the project's schemes)
    script = (f"import hurray_decl as hd; import numpy as np; v = hd.load({str(tmp_path / 'm.hrry')!r})['q4_k']"
              ".numpy(); np.save('q4_k.npy', v)")
    shown = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                           env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=False)
    assert shown.returncode == 0, shown.stderr
    assert np.array_equal(u32(np.load(tmp_path / "q4_k.npy")), u32(loaded["q4_k"].numpy()))


def test_the_kaitai_twin_agrees_with_the_declaration():
    """schemas/hurray/ggml_super_block.ksy (generated/hurray/ggml_super_block.py) and the Construct
    declaration accept the same payloads with the same fields and refuse the same ones."""
    from generated.hurray.ggml_super_block import GgmlSuperBlock as Kaitai

    twin_agrees(0xF0, Kaitai, ("axis", "super_block", "sub_block", "d_buffer_index", "scale_buffer_index",
                               "dmin_buffer_index", "min_buffer_index"), 200)


def twin_agrees(tag: int, kaitai: type, names: tuple[str, ...], count: int) -> None:
    """``count`` payloads of private scheme ``tag`` (fields of 0..5 or NONE32, flags mostly 0,
    some cut short or padded): the Kaitai reader ``kaitai`` and the Construct declaration accept
    the same ones with the same ``names`` fields, and refuse the same ones."""
    import kaitaistruct

    from hurray_decl.hurray.quantization import decode_quantization

    register_project_schemes()
    rng = np.random.default_rng(4)
    accepted = 0
    for _ in range(count):
        fields = rng.integers(0, 6, len(names)).astype("<u4")
        fields[rng.random(len(names)) < 0.15] = 0xFFFFFFFF
        flags = 0 if rng.random() < 0.8 else int(rng.integers(1, 1 << 16))
        payload = bytes([tag, 1]) + flags.to_bytes(2, "little") + fields.tobytes()
        cut = len(payload) if rng.random() < 0.8 else int(rng.integers(4, len(payload)))
        payload = payload[:cut] + (b"\x00" * int(rng.integers(0, 3)) if cut == len(payload) else b"")
        try:
            k = kaitai(flags, kaitaistruct.KaitaiStream(kaitaistruct.BytesIO(payload[4:])))
        except kaitaistruct.KaitaiStructError:
            k = None
        try:
            c = decode_quantization(payload)
        except hd.HurrayDeclError:
            c = None
        assert (k is None) == (c is None), payload.hex()
        if c is not None and k is not None:
            wire = c.to_wire()
            assert all(getattr(k, n) == wire[n] for n in names), payload.hex()
            accepted += 1
    assert 20 < accepted < count
