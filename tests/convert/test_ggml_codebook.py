"""GGUF's IQ, TQ and NVFP4 types in the project's private scheme ggml_codebook (0xF1), and every
type the installed gguf-py dequantizes through ``convert`` whole: bit-identical to
``gguf.quants.dequantize`` (signed zeros, infinities and NaNs of random scales included), back to
GGUF byte for byte, written only with ``--private-schemes`` and refused by name otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl.convert import gguf_codebook
from hurray_decl.convert.gguf import GGUF_TYPES, GgufTensor
from hurray_decl.convert.gguf_codebook import FORMATS, decode_blocks, encode_blocks
from hurray_decl.convert.hurray import codebook_gguf, from_gguf_codebook
from hurray_decl.convert.tensors import CODEBOOK_TYPES, gguf_to_hurray
from hurray_decl.hurray import kernels
from hurray_decl.hurray.quantization import PROJECT_SCHEMES, SCHEMES
from hurray_decl.hurray.schemes import ggml_codebook
from hurray_decl.hurray.tensor import read_tensor_descriptor, write_tensor_descriptor
from tests.conftest import PROJECT_TAGS
from tests.convert.test_cli_convert import ROOT, cli
from tests.helpers import raises_rule

gguf = pytest.importorskip("gguf")
Q = gguf.GGMLQuantizationType


def u32(a) -> np.ndarray:
    return np.ascontiguousarray(a, np.float32).reshape(-1).view(np.uint32)


def dequantizable() -> list[str]:
    """Every GGML type the installed gguf-py dequantizes (asked with one block of zeros)."""
    names = []
    for kind in Q:
        if kind not in gguf.GGML_QUANT_SIZES:
            continue
        try:
            gguf.quants.dequantize(np.zeros((1, gguf.GGML_QUANT_SIZES[kind][1]), np.uint8), kind)
        except NotImplementedError:
            continue
        names.append(kind.name)
    return names


def codebook_blocks(rng, name: str, blocks: int, finite: bool = True) -> np.ndarray:
    """Blocks of a codebook type as llama.cpp's quantizers lay them out: codes drawn from the type's
    codebook (random bytes, written back in the form the type's own fields give), sub-block scales
    over their whole range, finite positive float16 scales (random bit patterns, NaN and infinite
    ones among them, when not ``finite``). TQ1_0 and TQ2_0 come from gguf-py's own quantizer."""
    form = FORMATS[name]
    if name in ("TQ1_0", "TQ2_0"):
        values = rng.standard_normal((blocks, form.elements)).astype(np.float32)
        return gguf.quants.quantize(values, Q[name]).reshape(-1)
    raw = rng.integers(0, 256, blocks * form.size, dtype=np.uint8).view(form.record)
    if name == "NVFP4":
        raw["d"] %= gguf_codebook.UE4M3_BYTES
    arrays = form.decode(raw)
    d = arrays.d.copy()
    if finite and name != "NVFP4":
        d[:] = rng.uniform(1e-3, 1.0, d.size).astype(np.float16)
    elif name != "NVFP4":  # random bit patterns, and surely an infinity, a NaN and -0 among them
        d[:3] = np.array([np.inf, np.nan, -0.0], np.float16)
    canonical = np.zeros(blocks, form.record)
    form.encode(canonical, gguf_codebook.CodebookBlocks(arrays.q, d, arrays.sc))
    return canonical.view(np.uint8)


def test_the_tag_and_the_table():
    assert ggml_codebook.TAG == 0xF1 and ggml_codebook.ROW.private and ggml_codebook.ROW.length == 32
    assert tuple(row.tag for row in PROJECT_SCHEMES) == PROJECT_TAGS
    assert set(CODEBOOK_TYPES) == set(ggml_codebook.TYPES) == set(FORMATS)
    for name, kind in ggml_codebook.TYPES.items():  # the ids and sizes are gguf's
        assert Q[name].value == kind.ggml_type
        assert gguf.GGML_QUANT_SIZES[Q[name]] == (FORMATS[name].elements, FORMATS[name].size)


def test_the_grids_are_ggmls():
    """ggml_grids.py holds the grids of the installed gguf-py (regenerate: schemas/regenerate_ggml_grids.py)."""
    done = subprocess.run([sys.executable, str(ROOT / "schemas" / "regenerate_ggml_grids.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S"):
        quant = getattr(gguf.quants, name)
        quant.init_grid()
        ours = gguf_codebook._grid(name)[0]
        assert np.array_equal(ours.astype(np.float32), np.asarray(quant.grid).reshape(quant.grid_shape)), name
    assert np.array_equal(gguf_codebook.IQ4_VALUES, gguf.quants.IQ4_NL.kvalues)
    assert np.array_equal(gguf_codebook.E2M1_DOUBLED, gguf.quants.NVFP4.kvalues)
    signs = np.frombuffer(gguf.quants.IQ2_XXS.ksigns, np.uint8)
    assert np.array_equal(gguf_codebook._ksigns(np.arange(128)), signs)


@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize("finite", [True, False], ids=["llama.cpp", "random scales"])
def test_exact_and_back(name, finite, monkeypatch):
    """One tensor of 10^5+ elements per type, odd leading dimensions, chunks of 7 blocks in the
    conversion and of 5 elements in the kernel."""
    monkeypatch.setattr(gguf_codebook, "CHUNK", 7)
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 5 if name in ("IQ4_NL", "NVFP4") else 1 << 12)
    form = FORMATS[name]
    rng = np.random.default_rng(form.size)
    shape = (391, 256) if form.elements == 256 else (3, 17, 1984)
    blocks = int(np.prod(shape)) // form.elements
    raw = codebook_blocks(rng, name, blocks, finite)
    descriptor, buffers = from_gguf_codebook(raw, name, shape)
    q = descriptor.quantization
    assert isinstance(q, ggml_codebook.GgmlCodebook) and q.scheme_tag == 0xF1 and q.ggml_type == Q[name].value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # gguf's own products of infinities
        want = gguf.quants.dequantize(raw.reshape(*shape[:-1], -1), Q[name])
    got = hd.dequantize(descriptor, buffers)
    assert got.shape == shape and np.array_equal(u32(got), u32(want))
    sc = np.frombuffer(buffers[2], np.int8)
    if name not in ("IQ4_NL", "TQ1_0", "TQ2_0", "NVFP4"):  # sub-block scales over their whole range
        kind = ggml_codebook.TYPES[name]
        top = {"IQ4_XS": (-32, 31), "IQ1_S": (1, 15), "IQ1_M": (1, 15)}.get(name, (1, 31))
        assert (sc.min(), sc.max()) == top, kind
    if not finite and name not in ("NVFP4", "TQ1_0", "TQ2_0"):
        assert np.isnan(want).any() and np.isinf(want).any() and (np.signbit(want) & (want == 0)).any()
    type_name, back = codebook_gguf(descriptor, buffers)
    assert type_name == name and back.tobytes() == raw.tobytes()
    assert read_tensor_descriptor(write_tensor_descriptor(descriptor)) == descriptor


@pytest.mark.parametrize("name, byte, value", [
    ("TQ1_0", 0, 1),  # 1 decodes as the digits of 0, whose canonical byte is 0
    ("NVFP4", 0, 0x7F),  # a scale byte read as 0, like 0x00
    ("NVFP4", 1, 0x80 | 0x38),  # the top bit of a scale byte is not read
    ("NVFP4", 4, 0x08),  # code 8 reads as +0, like code 0
])
def test_bytes_that_would_not_come_back_are_refused(name, byte, value):
    raw = codebook_blocks(np.random.default_rng(3), name, 4)
    raw[FORMATS[name].size + byte] = value
    with raises_rule("CV-GGML-01", path="raw -> blocks[1]"):
        decode_blocks(raw, name, chunk=3)


@pytest.mark.parametrize("name, why", [("IQ2_XXS", "grid"), ("IQ2_XS", "even count"), ("IQ1_S", "8 g"),
                                       ("IQ4_NL", "none of the type's values"), ("TQ2_0", "codes are")])
def test_values_off_the_codebook_have_no_gguf_form(name, why):
    arrays = decode_blocks(codebook_blocks(np.random.default_rng(4), name, 2), name)
    q = arrays.q.astype(np.int16)
    q[0, 0] = {"IQ2_XS": -q[0, 0]}.get(name, 3)  # one sign flipped: an odd count
    with raises_rule("ARGUMENT") as refused:
        encode_blocks(name, q, arrays.d, arrays.sc)
    assert why in str(refused.value)


def test_a_descriptor_whose_sizes_are_not_its_types():
    raw = codebook_blocks(np.random.default_rng(6), "IQ3_S", 2)
    descriptor, _ = from_gguf_codebook(raw, "IQ3_S", (2, 256))
    for field, value in (("exponent", -3), ("ggml_type", 12), ("sub_block", 16)):
        changed = descriptor.quantization.model_copy(update={field: value})
        with raises_rule("HQ-EXT-03", path=field):
            write_tensor_descriptor(descriptor.model_copy(update={"quantization": changed}))


def test_written_only_when_asked():
    raw = codebook_blocks(np.random.default_rng(7), "IQ2_S", 1)
    tensor = GgufTensor("w", "IQ2_S", (1, 256), raw)
    with raises_rule("HQ-EXT-04", path="ggml_type") as refused:
        gguf_to_hurray(tensor)
    assert "ggml_codebook" in str(refused.value) and "--private-schemes" in str(refused.value)
    descriptor, _ = gguf_to_hurray(tensor, private_schemes=True)
    assert isinstance(descriptor.quantization, ggml_codebook.GgmlCodebook)


# --- acceptance: one tensor of every type the installed gguf-py dequantizes ------------------------

def every_type_tensors(rng) -> list[tuple[str, np.ndarray, object, tuple[int, ...]]]:
    """(name, GGUF bytes or values, raw type, NumPy shape) of one tensor per dequantizable type."""
    from tests.convert.test_gguf_write import canonical_k

    out = []
    for name in dequantizable():
        kind = Q[name]
        elements = gguf.GGML_QUANT_SIZES[kind][0]
        shape = (391, 256) if name == "IQ2_XXS" else (3, 5 * max(elements, 64) if elements > 1 else 77)
        if name in ("F32", "F16", "BF16"):
            values = rng.standard_normal(shape).astype(np.float32)
            data = {"F32": values, "F16": values.astype(np.float16)}.get(name)
            out.append((name, data if data is not None else gguf.quants.quantize(values, kind), kind, shape))
        elif name in FORMATS:
            blocks = int(np.prod(shape)) // elements
            out.append((name, codebook_blocks(rng, name, blocks).reshape(*shape[:-1], -1), kind, shape))
        elif name in GGUF_TYPES and GGUF_TYPES[name].two_level:
            blocks = int(np.prod(shape)) // elements
            out.append((name, canonical_k(rng, name, blocks).reshape(*shape[:-1], -1), kind, shape))
        else:  # the types gguf-py quantizes: Q4_0 .. Q8_0, MXFP4
            out.append((name, gguf.quants.quantize(rng.standard_normal(shape).astype(np.float32), kind), kind, shape))
    return out


def test_every_type_through_convert(tmp_path, monkeypatch, capsys):
    """Acceptance: a GGUF of one tensor of every type the installed gguf-py dequantizes (one of
    100,096 elements, odd leading dimensions), converted by the command line in this process with
    chunks of 7 blocks and of 1,000 elements, so that chunk boundaries fall inside tensors."""
    from hurray_decl import cli as command_line
    from tests.convert.test_gguf_file import write

    monkeypatch.setattr(gguf_codebook, "CHUNK", 7)
    monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 1000)
    monkeypatch.chdir(tmp_path)

    def run(*argv: str) -> tuple[int, str]:
        status = command_line.main(list(argv))
        shown = capsys.readouterr()
        return status, shown.out + shown.err

    made = every_type_tensors(np.random.default_rng(33))
    assert {n for n, *_ in made} >= {*FORMATS, "Q6_K", "MXFP4", "F32"}
    assert any(int(np.prod(shape)) >= 100_000 for *_, shape in made)
    write(tmp_path / "m.gguf", [(name.lower(), data, None if name in ("F32", "F16") else kind)
                                for name, data, kind, _ in made])
    private = {n.lower() for n in (*FORMATS, *(t for t, r in GGUF_TYPES.items() if r.two_level), "Q4_1", "Q5_1")}
    private &= {n.lower() for n, *_ in made}
    status, text = run("convert", "m.gguf", "-o", "m.hrry")
    assert status == 1 and not (tmp_path / "m.hrry").exists(), text
    assert all(name in text for name in private), text
    status, text = run("convert", "m.gguf", "-o", "m.hrry", "--json")
    assert status == 1 and not (tmp_path / "m.hrry").exists()
    refused = {r["name"]: r for r in json.loads(text[:text.rindex("}") + 1])["tensors"] if r["status"] != "converted"}
    assert set(refused) == private
    assert all(r["converts_with"][0] == "--private-schemes" for r in refused.values())
    status, text = run("convert", "m.gguf", "-o", "m.hrry", "--private-schemes")
    assert status == 0, text
    loaded = hd.load(str(tmp_path / "m.hrry"))
    reader = gguf.GGUFReader(tmp_path / "m.gguf")
    assert len(reader.tensors) == len(made)
    for t in reader.tensors:
        want = gguf.quants.dequantize(t.data, t.tensor_type)
        got = loaded[t.name].numpy()
        assert got.shape == want.shape and np.array_equal(u32(got), u32(want)), t.name
    status, text = run("convert", "m.hrry", "--to", "gguf", "-o", "back.gguf")
    assert status == 0, text
    shown = subprocess.run(["cmp", str(tmp_path / "back.gguf"), str(tmp_path / "m.gguf")], check=False)
    assert shown.returncode == 0


def test_every_reader_of_this_package_knows_the_private_schemes(tmp_path):
    """ls, validate, dequantize, inspect and hd.open / hd.load in a fresh process read a .hrry of
    both private schemes; the engine below them, unregistered, refuses the tags (HQ-EXT-03)."""
    from tests.convert.test_gguf_file import write
    from tests.convert.test_gguf_write import canonical_k

    rng = np.random.default_rng(8)
    write(tmp_path / "m.gguf", [("iq3_s", codebook_blocks(rng, "IQ3_S", 3).reshape(3, -1), Q.IQ3_S),
                                ("q6_k", canonical_k(rng, "Q6_K", 2).reshape(2, -1), Q.Q6_K)])
    assert cli("convert", "m.gguf", "-o", "m.hrry", "--private-schemes", cwd=tmp_path).returncode == 0
    for argv in (["ls", "m.hrry"], ["validate", "m.hrry"], ["inspect", "m.hrry"],
                 ["dequantize", "m.hrry", "--name", "iq3_s", "-o", "v.npy"]):
        done = cli(*argv, cwd=tmp_path)
        assert done.returncode == 0 and "HQ-EXT" not in done.stdout + done.stderr, (argv, done.stdout, done.stderr)
    reader = gguf.GGUFReader(tmp_path / "m.gguf")
    want = gguf.quants.dequantize(reader.tensors[0].data, Q.IQ3_S)
    assert np.array_equal(u32(np.load(tmp_path / "v.npy")), u32(want))
    script = ("import hurray_decl as hd, numpy as np; f = hd.open('m.hrry'); "
              "np.save('a.npy', f['iq3_s'].numpy()); np.save('b.npy', hd.load('m.hrry')['q6_k'].numpy())")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode == 0, done.stderr
    assert np.array_equal(u32(np.load(tmp_path / "a.npy")), u32(want))
    assert np.array_equal(u32(np.load(tmp_path / "b.npy")),
                          u32(gguf.quants.dequantize(reader.tensors[1].data, Q.Q6_K)))
    from hurray_decl.hurray.quantization import decode_quantization, unregister_private_scheme

    descriptor, _ = from_gguf_codebook(codebook_blocks(rng, "IQ3_S", 1), "IQ3_S", (1, 256))
    payload = ggml_codebook.STRUCT.build(descriptor.quantization.to_wire())
    unregister_private_scheme(0xF1)
    assert SCHEMES.get(0xF1) is None
    with pytest.raises(hd.HurrayDeclError) as unknown:
        decode_quantization(payload)
    assert unknown.value.code.startswith("HQ-EXT")


def test_the_kaitai_twin_agrees_with_the_declaration():
    """schemas/hurray/ggml_codebook.ksy (generated/hurray/ggml_codebook.py) and the Construct
    declaration accept the same payloads with the same fields and refuse the same ones."""
    from generated.hurray.ggml_codebook import GgmlCodebook as Kaitai
    from tests.convert.test_private_scheme import twin_agrees

    twin_agrees(0xF1, Kaitai, ("axis", "ggml_type", "super_block", "sub_block", "exponent", "d_buffer_index",
                               "scale_buffer_index"), 300)
