"""Every command reads through ``cli.inputs`` and writes through ``cli.outputs``: ``convert`` and ``ls``
take their kind from the one detection (a ``.gguf`` whose magic is damaged is a GGUF refused with
HF-HDR-03, a damaged ``.hrry`` a container refused HF-HDR-03), ``audit --format html`` pages are
written as every output is (recognisable temporaries, the umask's permissions, nothing left), and
an input of no known magic is not read whole to find out that it has no kind."""

from __future__ import annotations

import contextlib
import io
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest

from hurray_decl import cli
from hurray_decl.cli import detection, html, inputs
from hurray_decl.onnx_light.inputs import KINDS, MESSAGES
from hurray_decl.onnx_light.protowire import walk
from tests.paths import CONFORMANCE, REPO

ONNX_EXAMPLES = REPO / "hurray_decl" / "onnx_light" / "examples"
ENV = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "NO_COLOR": "1", "OPENBLAS_NUM_THREADS": "1"}


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def forget_handed_on():
    yield
    inputs.HANDED_ON.clear()


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("one-layer")
    path = folder / "model.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("w", np.linspace(-1, 1, 64, dtype=np.float32))
    writer.add_tensor("q", gguf.quants.quantize(np.linspace(-1, 1, 128, dtype=np.float32).reshape(2, 64),
                                                gguf.GGMLQuantizationType.Q8_0),
                      raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ------------------------------------------------------------------ convert: refusals by the detected kind

def damaged(model: Path, name: str) -> bytes:
    data = model.read_bytes()
    return {"magic.gguf": b"GGUE" + data[4:], "short.gguf": b"GGU", "flipped.gguf": b"GG\xd8F" + data[4:],
            "magic.hrry": b"HRRYFILF" + bytes(100), "cut.onnx": b"\x08\x07\x3a\xff\xff\x03" + bytes(10),
            "notes.txt": b"not a model\n", "empty.gguf": b"",
            "value.pb": (ONNX_EXAMPLES / "valid_int4.pb").read_bytes()}[name]


@pytest.mark.parametrize("name, status, says", [
    ("magic.gguf", 1, "invalid: [HF-HDR-03] gguf -> magic at byte 0: not a GGUF file"),
    ("flipped.gguf", 1, "invalid: [HF-HDR-03]"),
    ("short.gguf", 1, "invalid: [HF-HDR-03]"),  # a damaged magic, not a file of no kind: the suffix tells
    ("magic.hrry", 1, "invalid: [HF-HDR-03]"),
    ("cut.onnx", 1, "invalid: [OL-WIRE-01]"),
    ("notes.txt", 1, "invalid input: "),
    ("empty.gguf", 2, "empty input"),
    ("value.pb", 2, "convert does not take an onnx-light value input"),
])
def test_convert_refuses_by_the_kind_the_input_layer_detects(model, tmp_path, name, status, says):
    source = tmp_path / name
    source.write_bytes(damaged(model, name))
    to = ("--to", "onnx-light") if name.endswith(".hrry") else ()  # a container is converted to the others
    code, out, err = run("convert", str(source), *to, "-o", str(tmp_path / "out.x"))
    assert (code, out) == (status, ""), err
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "is neither" not in err and ("none of the kinds" in err) == (name == "notes.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no output, no temporary


@pytest.mark.parametrize("name, says", [
    ("magic.gguf", "invalid: [HF-HDR-03] gguf -> magic at byte 0"),
    ("short.gguf", "invalid: [HF-HDR-03]"),
    ("magic.hrry", "invalid: [HF-HDR-03]"),
])
def test_ls_refuses_a_damaged_magic_by_the_suffix(model, tmp_path, name, says):
    source = tmp_path / name
    source.write_bytes(damaged(model, name))
    status, out, err = run("ls", str(source))
    assert (status, out) == (1, "") and err.startswith(f"hurray-decl: {says}") and len(err.splitlines()) == 1


@pytest.mark.parametrize("argv, says", [
    (("--name", "x"), "argument --name: does not apply to a GGUF input of convert"),
    (("--buffer", "{model}"), "argument --buffer: does not apply to a GGUF input of convert"),
])
def test_convert_refuses_options_that_do_not_apply(model, tmp_path, argv, says):
    argv = tuple(a.replace("{model}", str(model)) for a in argv)
    status, _, err = run("convert", str(model), "-o", str(tmp_path / "out.hrry"), *argv)
    assert status == 2 and says in err
    assert not list(tmp_path.iterdir())


def test_convert_refuses_buffers_for_a_stream(tmp_path):
    stream = CONFORMANCE / "streams" / "v03-three-tensors.stream"
    status, _, err = run("convert", str(stream), "--buffer", str(stream), "-o", str(tmp_path / "out.hrry"))
    assert status == 2 and "argument --buffer: does not apply to a Hurray stream input of convert" in err
    assert not list(tmp_path.iterdir())


def test_convert_missing_and_folder_inputs_as_every_command(tmp_path):
    for argv, status, says in [(("convert", str(tmp_path / "missing.gguf")), 3, "no such file"),
                               (("convert", str(tmp_path)), 3, "is a folder, not a file")]:
        code, _, err = run(*argv, "-o", str(tmp_path / "out.hrry"))
        validated = run("validate", argv[1])
        assert code == validated[0] == status and says in err and err == validated[2]
    assert not list(tmp_path.iterdir())


def test_convert_reads_standard_input_as_a_file(model, tmp_path):
    """``convert -`` reads the GGUF from standard input through the same layer: the same output."""
    assert run("convert", str(model), "-o", str(tmp_path / "file.hrry"))[0] == 0
    piped = subprocess.run([sys.executable, "-m", "hurray_decl", "convert", "-", "-o", str(tmp_path / "pipe.hrry")],
                           input=model.read_bytes(), capture_output=True, env=ENV, check=False)
    assert piped.returncode == 0, piped.stderr
    assert (tmp_path / "pipe.hrry").read_bytes() == (tmp_path / "file.hrry").read_bytes()


@pytest.mark.parametrize("target", ["out.hrry", "out.onnx", "folder"])
def test_convert_outputs_take_the_umask(model, tmp_path, target):
    saved = os.umask(0o027)
    try:
        to = "onnx-light" if target.endswith(".onnx") else "hurray"
        status, _, err = run("convert", str(model), "--to", to, "-o", str(tmp_path / target))
    finally:
        os.umask(saved)
    assert status == 0, err
    out = tmp_path / target
    assert out.stat().st_mode & 0o777 == (0o750 if out.is_dir() else 0o640)
    assert sorted(p.name for p in tmp_path.iterdir()) == [target]


@pytest.mark.parametrize("target", ["out.hrry", "out.onnx", "one.bin"])
def test_convert_removes_the_temporaries_of_killed_runs(model, tmp_path, target):
    """``convert`` writes through ``cli.outputs``: a temporary that a killed run left in the target
    folder (its process gone) is recognised by its name and removed."""
    host = re.sub(r"[^A-Za-z0-9_]", "_", socket.gethostname())[:40]
    stale = tmp_path / f".{target}.hurray-decl-{host}-999999999.part"
    stale.write_bytes(b"partial")
    source = model
    if target == "one.bin":
        source = tmp_path.parent / f"{tmp_path.name}-one.gguf"
        writer = gguf.GGUFWriter(str(source), "llama")
        writer.add_tensor("w", np.linspace(-1, 1, 64, dtype=np.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
    to = "onnx-light" if target.endswith(".onnx") else "hurray"
    status, _, err = run("convert", str(source), "--to", to, "-o", str(tmp_path / target))
    assert status == 0, err
    expected = [target] if target != "one.bin" else ["one.bin", "one.buf0.bin"]
    assert sorted(p.name for p in tmp_path.iterdir()) == expected


# ------------------------------------------------------------------ html pages through cli.outputs

def test_html_pages_are_outputs(tmp_path):
    """``write_atomically`` is ``outputs.write_text``: the umask's mode, no temporary left, and a
    refusal (a missing folder) that leaves nothing."""
    page = tmp_path / "page.html"
    saved = os.umask(0o027)
    try:
        html.write_atomically(page, "<p>one</p>")
        html.write_atomically(page, "<p>two</p>")
    finally:
        os.umask(saved)
    assert page.read_text(encoding="utf-8") == "<p>two</p>" and page.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]
    from hurray_decl.cli.common import FileProblem

    with pytest.raises(FileProblem, match="no such folder"):
        html.write_atomically(tmp_path / "nowhere" / "page.html", "x")


def test_audit_html_pages_take_the_umask(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("quant_per_block_int4_128x128.bin",):
        (corpus / name).write_bytes((CONFORMANCE / "descriptors" / name).read_bytes())
    (corpus / "bad.bin").write_bytes(b"HRRX" + bytes(40))
    out = tmp_path / "pages"
    done = subprocess.run(["/bin/sh", "-c", 'umask 027 && exec "$0" -m hurray_decl audit "$1" --format html -o "$2"',
                           sys.executable, str(corpus), str(out)], capture_output=True, text=True, env=ENV,
                          check=False)
    assert done.returncode in (0, 1) and "wrote" in done.stdout, done.stderr
    pages = sorted(out.iterdir())
    assert {p.name for p in pages} == {"index.html", "bad.bin.html", "quant_per_block_int4_128x128.bin.html"}
    assert {p.stat().st_mode & 0o777 for p in pages} == {0o640}


# ------------------------------------------------------------------ an input of no known magic: read as far as needed

def walks(data: bytes) -> list[tuple]:
    result = []
    for kind in KINDS:
        w = walk(data, MESSAGES[kind].DESCRIPTOR, rows=False)
        result.append((kind, w.known, w.unknown, None if w.error is None else (w.error.offset, w.error.reason)))
    return result


def protobuf_samples() -> list[bytes]:
    """The onnx-light examples, their cuts and byte flips, and bytes of no kind."""
    rng = np.random.default_rng(5)
    samples = []
    for path in sorted(ONNX_EXAMPLES.iterdir()):
        if path.suffix not in (".pb", ".onnx"):
            continue
        data = path.read_bytes()
        samples.append(data)
        for cut in rng.integers(0, len(data), 6):
            samples.append(data[:cut])
        for at in rng.integers(0, len(data), 6):
            flipped = bytearray(data)
            flipped[at] ^= int(rng.integers(1, 256))
            samples.append(bytes(flipped))
        samples.append(data + bytes(rng.integers(0, 256, 40, dtype=np.uint8)))
    for size in (0, 5, 31, 32, 33, 100, 4000):
        samples += [rng.integers(0, 256, size, dtype=np.uint8).tobytes() for _ in range(20)]
    samples += [bytes(100), b"\x0a\xff\xff\xff\xff\x07" + bytes(100), b"\x08" + b"\xff" * 40, b"\x0b" + bytes(50)]
    return samples


def test_the_protobuf_scan_decides_the_walks_from_a_prefix():
    """Where the scan stops, the walks of the prefix end as the walks of the whole input do
    (every kind, every count, the same error at the same offset), with the size known or not."""
    bounded = 0
    for data in protobuf_samples():
        at = lambda start, count, data=data: data[start:start + count]  # noqa: E731
        extent = detection.protobuf_extent(at, len(data))
        assert extent == detection.protobuf_extent(at, None)
        if extent is None:
            continue
        bounded += 1
        assert walks(data[:extent]) == walks(data), data[:80]
    assert bounded > 100


HUGE = 4 << 30
"""A sparse file larger than the address space the child may take."""

CHILD = """
import resource, sys
from pathlib import Path
from hurray_decl import cli
import hurray_decl.onnx_light.inputs, hurray_decl.hurray.tensor  # the imports, before the limit
size = next(int(l.split()[1]) for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmSize:"))
limit = size * 1024 + (512 << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("command", ["validate", "ls", "convert"])
def test_a_huge_input_of_no_kind_is_not_read_whole(tmp_path, command):
    """4 GiB of no known magic (a key of field number 0, then zeros), with 512 MiB of address space
    to spare: the kind is decided from the first bytes, and the verdict is that of a small input."""
    huge, small = tmp_path / "huge.bin", tmp_path / "small.bin"
    with huge.open("wb") as out:
        out.write(b"\x00\x01not a descriptor")
        out.truncate(HUGE)
    small.write_bytes(b"\x00\x01not a descriptor" + bytes(100))
    more = ("-o", str(tmp_path / "out.hrry")) if command == "convert" else ()
    results = []
    for path in (huge, small):
        done = subprocess.run([sys.executable, "-c", CHILD, command, str(path), *more], capture_output=True,
                              text=True, env=ENV, check=False)
        results.append((done.returncode, (done.stdout + done.stderr).replace(path.name, "FILE").splitlines()[0]))
    assert results[0] == results[1] and results[0][0] == 1, results  # the verdict (the count of unread bytes aside)
    assert "HT-HDR-04" in results[0][1] or "none of the kinds" in results[0][1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["huge.bin", "small.bin"]


def test_a_huge_input_of_no_kind_on_standard_input(tmp_path):
    """Standard input too: the kind is decided from the first bytes, the rest passes through."""
    done = subprocess.run(["/bin/sh", "-c", '{ printf "\\000\\001x"; head -c 1500000000 /dev/zero; } | '
                           '"$0" -c "$1" validate -', sys.executable, CHILD], capture_output=True, text=True, env=ENV,
                          check=False)
    assert done.returncode == 1 and "[HT-HDR-04]" in done.stdout, (done.stdout, done.stderr)
