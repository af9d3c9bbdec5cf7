"""Bad command lines over every kind of input: descriptor, payload, container, stream, onnx-light
value, tensor and model, GGUF; for the commands that judge them and for ``ls`` and ``convert``, which
read through the same input layer.

For every kind: a missing file, an empty one, a folder, a truncated file, garbage, huge claims,
windows past the end, options that do not apply or conflict, outputs that cannot be written; and,
in subprocesses, a closed pipe, a full disk (a 1 MiB tmpfs, when ``mount`` is permitted), SIGINT and
SIGKILL in the middle of writing. Each case checks: no traceback, the exit status the README
gives, the message naming the argument or the rule, and no file left in the output folder (under
the target's name or as a temporary) once a later run has written into it.

The table runs in-process here (bounded: well under a minute); ``python -m tests.test_cli_harness``
runs every case in its own subprocess as a user would and prints a summary per kind and status.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl import cli
from hurray_decl.cli import common, inputs
from tests.helpers import on_terminal
from tests.paths import CONFORMANCE, REPO

ONNX_EXAMPLES = REPO / "hurray_decl" / "onnx_light" / "examples"
OK, INVALID, USAGE, FILE = common.OK, common.INVALID, common.USAGE, common.FILE
TAKES = ("validate", "inspect", "decode", "dequantize")


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]
    status: int
    says: str = ""            # in the last line of standard error (or standard output for a verdict)
    stdin: bytes | None = None
    outputs: tuple[str, ...] = ()   # the files the output folder holds afterwards


def claimed(shape: tuple[int, ...]) -> tuple[object, list[bytes]]:
    """A valid per-tensor affine tensor of ``shape`` whose every element reads one byte (zero strides):
    a huge output from a one-byte buffer."""
    from hurray_decl.hurray.tables.element_types import BY_NAME
    from hurray_decl.hurray.tensor import BufferHandle, Strided, TensorDescriptor

    descriptor = TensorDescriptor(type_tag=BY_NAME["int8"].tag, shape=shape,
                                  layout=Strided(strides=(0,) * len(shape)),
                                  buffers=(BufferHandle(byte_size=1),), quantization=hd.PerTensorAffine(scale=1.0))
    return hd.read_tensor_descriptor(hd.write_tensor_descriptor(descriptor)), [b"\x07"]


def build_corpus(folder: Path) -> dict[str, Path]:
    """One valid file of every kind, and the big ones, in ``folder``."""
    from hurray_decl.hurray.container.writer import write_container

    folder.mkdir(parents=True, exist_ok=True)
    t = hd.quantize(np.linspace(-1, 1, 256).reshape(4, 64), "per_block_affine", block_size=32, storage="int4")
    files = {"descriptor": folder / "w.bin", "container": folder / "small.hrry", "stream": folder / "three.stream",
             "value": folder / "value.pb", "tensor": folder / "tensor.pb", "model": folder / "model.onnx",
             "gguf": folder / "small.gguf"}
    files["descriptor"].write_bytes(hd.write_tensor_descriptor(t.descriptor))
    for i, b in enumerate(t.buffers):
        (folder / f"w.buf{i}.bin").write_bytes(bytes(b))
    files["container"].write_bytes(write_container([("w", t.descriptor, t.buffers)], {"producer": "harness"}))
    shutil.copy(CONFORMANCE / "streams" / "v03-three-tensors.stream", files["stream"])
    shutil.copy(ONNX_EXAMPLES / "valid_int4.pb", files["value"])
    shutil.copy(ONNX_EXAMPLES / "valid_tensor.pb", files["tensor"])
    shutil.copy(ONNX_EXAMPLES / "valid_compact_int4.onnx", files["model"])
    import gguf

    writer = gguf.GGUFWriter(str(files["gguf"]), "llama")
    writer.add_tensor("w", np.linspace(-1, 1, 64, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    for kind, path in list(files.items()):
        data = path.read_bytes()
        (folder / f"trunc-{path.name}").write_bytes(data[:max(1, len(data) // 2)])
        (folder / f"empty-{path.name}").write_bytes(b"")
        garbage = np.random.default_rng(len(kind)).integers(0, 256, 300, dtype=np.uint8).tobytes()
        (folder / f"garbage-{path.name}").write_bytes(garbage)
    (folder / "dir.hrry").mkdir()
    big, buffers = claimed((1024, 1024))  # 4 MiB of float32 from one byte
    (folder / "big.bin").write_bytes(hd.write_tensor_descriptor(big))
    (folder / "big.buf0.bin").write_bytes(buffers[0])
    (folder / "big.hrry").write_bytes(write_container([("big", big, buffers)], {}))
    huge, buffers = claimed((16384, 8192))  # 512 MiB: long enough to be interrupted
    (folder / "huge.hrry").write_bytes(write_container([("huge", huge, buffers)], {}))
    shutil.copy(CONFORMANCE / "files" / "i13-kv-count-huge.hrry", folder / "claims.hrry")
    shutil.copy(CONFORMANCE / "streams" / "i17-buffer-size-2pow40.stream", folder / "claims.stream")
    header = bytearray(files["descriptor"].read_bytes())
    header[6:10] = (0xFFFFFFFF).to_bytes(4, "little")  # descriptor_length: 4 GiB
    (folder / "claims.bin").write_bytes(bytes(header))
    (folder / "claims.pb").write_bytes(b"\x0a\xff\xff\xff\xff\x07" + b"\x00" * 16)  # a 2 GiB length prefix
    (folder / "claims.gguf").write_bytes(b"GGUF" + (3).to_bytes(4, "little") + (2 ** 62).to_bytes(8, "little") * 2)
    (folder / "magic.gguf").write_bytes(b"GGUE" + files["gguf"].read_bytes()[4:])
    return files


PAYLOAD = "0201000000000000010000000200000003000000"
"""A valid per-channel affine payload (the README's)."""
BAD_PAYLOAD = "03010000000000000600000001000000ffffffff03000000"
"""A per-block payload whose block size breaks HQ-PB-03."""


def cases() -> dict[str, Case]:
    """The table: name -> case ({c} is the corpus folder, {o} the output folder)."""
    table: dict[str, Case] = {}
    names = {"descriptor": "w.bin", "container": "small.hrry", "stream": "three.stream", "value": "value.pb",
             "tensor": "tensor.pb", "model": "model.onnx", "gguf": "small.gguf"}
    extra = {"descriptor": ("{c}/w.buf0.bin", "{c}/w.buf1.bin"), "stream": ("--index", "0")}
    for kind, name in names.items():
        f = f"{{c}}/{name}"
        foreign = kind == "gguf"
        for command in TAKES:
            out = ("-o", "{o}/x.npy") if command == "dequantize" else ()
            more = extra.get(kind, ()) if command == "dequantize" else ()
            judged = USAGE if foreign else INVALID
            rule = "convert" if foreign else '"verdict": "invalid"' if command == "decode" else "["
            table[f"{kind}: {command} a missing file"] = Case((command, f"{{c}}/missing-{name}", *more, *out), FILE,
                                                               "no such file")
            empty = OK if kind == "stream" and command != "dequantize" else USAGE
            if kind == "stream" and command == "dequantize":
                empty = USAGE  # a valid empty stream has no frame[0]
            table[f"{kind}: {command} an empty file"] = Case(
                (command, f"{{c}}/empty-{name}", *more, *out), empty,
                "" if empty == OK else "--index" if kind == "stream" else "empty input")
            table[f"{kind}: {command} truncated"] = Case((command, f"{{c}}/trunc-{name}", *more, *out), judged,
                                                         rule)
            table[f"{kind}: {command} garbage"] = Case((command, f"{{c}}/garbage-{name}", *more, *out), judged,
                                                       rule)
            size = (REPO_CORPUS[0] / name).stat().st_size if REPO_CORPUS else 0
            table[f"{kind}: {command} --offset past the end"] = Case(
                (command, f, *more, "--offset", str(size + 1), *out), USAGE, "--offset")
            table[f"{kind}: {command} --length past the end"] = Case(
                (command, f, *more, "--offset", "1", "--length", str(size), *out), USAGE, "--length")
            table[f"{kind}: {command} --quantization with --kind model"] = Case(
                (command, f, "--quantization", "--kind", "model", *out), USAGE, "--quantization")
        table[f"{kind}: validate a folder"] = Case(("validate", "{c}/dir.hrry"), FILE, "folder")
        table[f"{kind}: validate --format json of a truncated file"] = Case(
            ("validate", f"{{c}}/trunc-{name}", "--format", "json"), USAGE if foreign else INVALID,
            "convert" if foreign else '"verdict": "invalid"')
        if foreign:
            table[f"{kind}: validate names the command that takes it"] = Case(("validate", f), USAGE, "convert")
            table[f"{kind}: dequantize huge claims"] = Case(("dequantize", "{c}/claims.gguf", "-o", "{o}/x.npy"),
                                                            USAGE, "convert")
            continue
        table[f"{kind}: validate"] = Case(("validate", f), OK, "")
        inapplicable = [("--index", "0"), ("--name", "w"), ("--permissive",), ("--region", "0:1"), ("--progress",)]
        for option in inapplicable:
            applies = {"--index": ("stream",), "--name": ("container", "value", "model"),
                       "--permissive": ("descriptor", "container", "stream"),
                       "--region": ("descriptor", "container", "stream"), "--progress": ("stream",)}[option[0]]
            if kind in applies:
                continue
            command = "dequantize" if option[0] in ("--index", "--region") else "validate"
            out = ("-o", "{o}/x.npy") if command == "dequantize" else ()
            more = extra.get(kind, ()) if command == "dequantize" else ()
            table[f"{kind}: {command} {option[0]} does not apply"] = Case(
                (command, f, *more, *option, *out), USAGE, f"{option[0]}: does not apply")
        if kind != "descriptor":
            table[f"{kind}: dequantize with a buffer file"] = Case(
                ("dequantize", f, "{c}/w.buf0.bin", "-o", "{o}/x.npy"), USAGE, "")
        table[f"{kind}: dequantize -o a folder"] = Case(("dequantize", f, *extra.get(kind, ()), "-o", "{o}"), FILE,
                                                        "folder")
        table[f"{kind}: dequantize -o in a missing folder"] = Case(
            ("dequantize", f, *extra.get(kind, ()), "-o", "{o}/nowhere/x.npy"), FILE, "no such folder")
        claims = {"descriptor": "claims.bin", "container": "claims.hrry", "stream": "claims.stream",
                  "value": "claims.pb", "tensor": "claims.pb", "model": "claims.pb"}[kind]
        forced = ("--kind", kind) if kind in ("value", "tensor", "model") else ()
        for command in ("validate", "inspect", "decode"):
            table[f"{kind}: {command} huge claims"] = Case((command, f"{{c}}/{claims}", *forced), INVALID,
                                                           '"verdict": "invalid"' if command == "decode" else "[")
    # ls and convert: the same input layer, so the same refusals of missing, empty, folder and damaged input
    to = {"container": "onnx-light", "descriptor": "onnx-light"}
    for kind, name in names.items():
        f = f"{{c}}/{name}"
        listed = kind not in ("value", "tensor")
        for command in ("ls", "convert"):
            out = ("--to", to.get(kind, "hurray"), "-o", "{o}/out.x") if command == "convert" else ()
            more = ("--buffer", "{c}/w.buf0.bin", "--buffer", "{c}/w.buf1.bin") \
                if command == "convert" and kind == "descriptor" else ()
            table[f"{kind}: {command} a missing file"] = Case((command, f"{{c}}/missing-{name}", *more, *out), FILE,
                                                               "no such file")
            empty = (USAGE, "empty input") if kind != "stream" else \
                (OK, "0 tensors, 0 bytes (stream)") if command == "ls" else (INVALID, "nothing written")
            table[f"{kind}: {command} an empty file"] = Case((command, f"{{c}}/empty-{name}", *more, *out), *empty)
            judged = "invalid: ["
            table[f"{kind}: {command} truncated"] = Case(  # a cut .pb is a value by its suffix
                (command, f"{{c}}/trunc-{name}", *more, *out), INVALID if listed else USAGE,
                judged if listed else f"{command} does not take an onnx-light value")
            if not listed:
                table[f"{kind}: {command} is not a file of tensors"] = Case(
                    (command, f, *out), USAGE, f"{command} does not take an onnx-light {kind}")
    for command in ("ls", "convert"):
        out = ("-o", "{o}/out.hrry") if command == "convert" else ()
        code = "invalid: [HF-HDR-03] gguf -> magic"
        table[f"gguf: {command} a damaged magic is a GGUF's"] = Case((command, "{c}/magic.gguf", *out), INVALID, code)
        table[f"gguf: {command} garbage named .gguf"] = Case((command, "{c}/garbage-small.gguf", *out), INVALID,
                                                             code)
        table[f"gguf: {command} a folder"] = Case((command, "{c}/dir.hrry", *out), FILE, "is a folder")
        table[f"container: {command} a damaged magic"] = Case(
            (command, "-", *(("--to", "onnx-light", *out) if out else ())), INVALID,
            "invalid: [HF-HDR-03]", stdin=b"HRRYFILF" + bytes(100))
    table["gguf: ls a damaged magic on standard input has no kind"] = Case(("ls", "-"), INVALID, "[HT-HDR-04]",
                                                                           stdin=b"GGUE" + bytes(100))
    table["gguf: convert a damaged magic on standard input has no kind"] = Case(
        ("convert", "-", "-o", "{o}/out.hrry"), INVALID, "none of the kinds convert reads", stdin=b"GGUE" + bytes(100))
    table["gguf: ls"] = Case(("ls", "{c}/small.gguf"), OK, "1 tensor, 256 bytes (gguf)")
    table["gguf: convert"] = Case(("convert", "{c}/small.gguf", "-o", "{o}/out.hrry"), OK, "1 converted",
                                  outputs=("out.hrry",))
    # kinds by content, whatever the suffix; damaged magic; stdin
    table["container: HRRYFILF is a damaged container"] = Case(("validate", "-"), INVALID, "[HF-HDR-03]",
                                                               stdin=b"HRRYFILF" + bytes(100))
    table["container: --offset/--length choose the embedded descriptor"] = Case(
        ("validate", "{c}/small.hrry", "--offset", "64", "--length", "10"), INVALID, "[HT-")
    table["container: --kind stream is HS-FRM-12"] = Case(("validate", "{c}/small.hrry", "--kind", "stream"),
                                                          INVALID, "[HS-FRM-12]")
    table["container: validate --buffers"] = Case(("validate", "{c}/small.hrry", "--buffers", "{c}/w.buf0.bin"),
                                                  USAGE, "--buffers: does not apply")
    table["container: extract a missing file"] = Case(("extract", "{c}/nofile.hrry", "-o", "{o}"), FILE,
                                                      "no such file")
    table["container: extract an unknown name"] = Case(("extract", "{c}/small.hrry", "--name", "nope", "-o", "{o}"),
                                                       USAGE, "--name")
    table["container: extract into a file"] = Case(("extract", "{c}/small.hrry", "-o", "{c}/w.bin"), FILE,
                                                   "not a folder")
    table["container: extract"] = Case(("extract", "{c}/small.hrry", "-o", "{o}"), OK, "",
                                       outputs=("w.buffer0.bin", "w.buffer1.bin", "w.descriptor.bin"))
    table["container: dequantize"] = Case(("dequantize", "{c}/small.hrry", "-o", "{o}/x.npy"), OK, "",
                                          outputs=("x.npy",))
    table["descriptor: extract is not for descriptors"] = Case(("extract", "{c}/w.bin", "-o", "{o}"), USAGE,
                                                               "does not take a tensor descriptor")
    table["descriptor: dequantize without buffers"] = Case(("dequantize", "{c}/w.bin", "-o", "{o}/x.npy"), USAGE,
                                                           "buffer")
    table["payload: validate"] = Case(("validate", "--quantization", PAYLOAD), OK, "")
    table["payload: validate an invalid one"] = Case(("validate", "--quantization", BAD_PAYLOAD), INVALID,
                                                     "[HQ-PB-03]")
    table["payload: decode an invalid one"] = Case(("decode", "--quantization", BAD_PAYLOAD), INVALID, "")
    table["payload: inspect an empty one"] = Case(("inspect", "--quantization", "-"), INVALID, "", stdin=b"")
    table["payload: odd hex"] = Case(("validate", "--quantization", "abc"), USAGE, "odd number")
    table["payload: with --kind value"] = Case(("validate", "--quantization", "--kind", "value", PAYLOAD), USAGE,
                                               "--quantization")
    table["payload: with buffer files"] = Case(("validate", "--quantization", PAYLOAD, "--buffers", "{c}/w.buf0.bin"),
                                               USAGE, "--buffers")
    table["empty standard input"] = Case(("validate", "-"), USAGE, "empty input", stdin=b"")
    table["empty standard input as a stream"] = Case(("validate", "-", "--kind", "stream"), OK, "", stdin=b"")
    table["stream: dequantize --name"] = Case(("dequantize", "{c}/three.stream", "--name", "w", "--index", "0",
                                               "-o", "{o}/x.npy"), USAGE, "--name")
    table["stream: dequantize --index past the end"] = Case(("dequantize", "{c}/three.stream", "--index", "9",
                                                             "-o", "{o}/x.npy"), USAGE, "--index")
    table["model: --name unknown"] = Case(("dequantize", "{c}/model.onnx", "--name", "nope", "-o", "{o}/x.npy"),
                                          USAGE, "--name")
    table["value: --permissive"] = Case(("inspect", "{c}/value.pb", "--permissive"), USAGE, "--permissive")
    table["safetensors is pointed to convert"] = Case(("inspect", "-"), USAGE, "safetensors",
                                                      stdin=(2).to_bytes(8, "little") + b"{}")
    return table


REPO_CORPUS: list[Path] = []
"""The corpus folder, once built (the table reads file sizes from it)."""


def run_in_process(argv: list[str], stdin: bytes | None) -> tuple[int, str, str]:
    """``main(argv)`` with standard input ``stdin``: (status, stdout, stderr)."""
    saved = sys.stdin
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin or b""))
    inputs.HANDED_ON.clear()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main(argv)
            out.flush()
    finally:
        sys.stdin = saved
    return status, out.buffer.getvalue().decode("utf-8", "replace"), err.getvalue()  # type: ignore[attr-defined]


def run_in_subprocess(argv: list[str], stdin: bytes | None, cwd: Path) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "hurray_decl", *argv], input=stdin or b"", capture_output=True,
                          cwd=cwd, timeout=120, check=False, env=environment())
    return done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


def judge(case: Case, status: int, out: str, err: str, folder: Path) -> list[str]:
    """What is wrong with a run of ``case`` (nothing: an empty list)."""
    problems = []
    if "Traceback" in out + err:
        problems.append("a traceback")
    if status != case.status:
        problems.append(f"exit {status}, not {case.status}: {(err or out).strip()[-300:]}")
    lines = [line for line in (err + out).splitlines() if line.strip()]
    if case.says and not any(case.says in line for line in lines[-40:]):
        problems.append(f"no {case.says!r} in {lines[-3:]}")
    left = sorted(p.name for p in folder.iterdir())
    if left != sorted(case.outputs):
        problems.append(f"the output folder holds {left}")
    return problems


def fill(argv: tuple[str, ...], corpus: Path, out: Path) -> list[str]:
    return [a.replace("{c}", str(corpus)).replace("{o}", str(out)) for a in argv]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    build_corpus(folder)
    REPO_CORPUS[:] = [folder]
    return folder


CASES = None


def table(corpus: Path) -> dict[str, Case]:
    global CASES
    if CASES is None:
        CASES = cases()
    return CASES


def test_every_case_of_the_table(corpus, tmp_path):
    """The whole table in-process: every case's status, message and output folder."""
    failures = {}
    for name, case in table(corpus).items():
        out = tmp_path / "out"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        status, stdout, stderr = run_in_process(fill(case.argv, corpus, out), case.stdin)
        problems = judge(case, status, stdout, stderr, out)
        if problems:
            failures[name] = problems
    assert not failures, "\n".join(f"{name}: {'; '.join(p)}" for name, p in failures.items())
    kinds = Counter(name.split(":")[0] for name in CASES or {})
    assert min(kinds[k] for k in ("descriptor", "container", "stream", "value", "tensor", "model", "gguf")) >= 20


# ------------------------------------------------------------------ subprocesses: pipes, disks, signals


def hurray(*argv: str, cwd: Path, stdin: bytes | None = None) -> tuple[int, str, str]:
    return run_in_subprocess(list(argv), stdin, cwd)


@pytest.mark.parametrize("name", ["small.hrry", "three.stream", "value.pb", "w.bin"])
def test_a_closed_pipe_is_141_and_silent(corpus, name):
    reader = subprocess.Popen([sys.executable, "-m", "hurray_decl", "inspect", str(corpus / name)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment())
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.read(1)
    reader.stdout.close()  # as `| head -c1` does
    err = reader.stderr.read().decode()
    assert reader.wait(timeout=120) in (0, 1, common.BROKEN_PIPE) and "Traceback" not in err and "error" not in err


@pytest.fixture
def small_disk(tmp_path):
    folder = tmp_path / "disk"
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True,
                          check=False)
    if done.returncode != 0:
        pytest.skip(f"mount is not permitted here: {done.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


@pytest.mark.parametrize("argv", [("dequantize", "{c}/big.hrry", "-o", "{o}/x.npy"),
                                  ("dequantize", "{c}/big.bin", "{c}/big.buf0.bin", "-o", "{o}/x.npy")])
def test_a_full_disk_is_refused_before_any_file_with_the_sizes(corpus, small_disk, argv):
    status, _, err = hurray(*fill(argv, corpus, small_disk), cwd=corpus)
    assert status == FILE and "Traceback" not in err, err
    assert "4,194,432 bytes" in err and "bytes free" in err, err  # 4 MiB and the 128-byte .npy header
    assert list(small_disk.iterdir()) == []


def test_a_full_disk_while_extracting_leaves_nothing(corpus, small_disk):
    free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    (small_disk / "filler").write_bytes(b"\x00" * (free - 64))
    status, _, err = hurray("extract", str(corpus / "small.hrry"), "-o", str(small_disk), cwd=corpus)
    assert status == FILE and "Traceback" not in err and "bytes free" in err, err
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]


def start_writing(corpus: Path, out: Path) -> subprocess.Popen:
    """``dequantize huge.hrry`` (512 MiB), returned once its temporary exists (it is writing)."""
    writer = subprocess.Popen([sys.executable, "-m", "hurray_decl", "dequantize", str(corpus / "huge.hrry"),
                               "-o", str(out / "x.npy")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=environment())
    deadline = time.monotonic() + 120
    while not any(p.name.endswith(".part") for p in out.iterdir()):
        assert writer.poll() is None, writer.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return writer


def test_sigint_mid_write_leaves_nothing(corpus, tmp_path):
    writer = start_writing(corpus, tmp_path)
    writer.send_signal(signal.SIGINT)
    _, err = writer.communicate(timeout=120)
    assert writer.returncode in (common.INTERRUPTED, OK), err
    assert b"Traceback" not in err
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ([] if writer.returncode else ["x.npy"])


def test_sigkill_mid_write_is_cleaned_by_the_next_run(corpus, tmp_path):
    writer = start_writing(corpus, tmp_path)
    writer.kill()
    writer.wait(timeout=60)
    stale = [p.name for p in tmp_path.iterdir()]
    assert len(stale) == 1 and stale[0].startswith(".x.npy.hurray-decl-") and stale[0].endswith(".part")
    status, _, err = hurray("dequantize", str(corpus / "small.hrry"), "-o", str(tmp_path / "y.npy"), cwd=corpus)
    assert status == OK, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["y.npy"]


def test_container_outputs_show_progress_on_a_terminal_and_take_the_umask(corpus, tmp_path):
    status, shown = on_terminal([sys.executable, "-m", "hurray_decl", "dequantize", str(corpus / "big.hrry"),
                                 "-o", str(tmp_path / "x.npy")], cwd=tmp_path, env=environment())
    assert status == OK and b"dequantize: 100%" in shown, shown
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / "x.npy").stat().st_mode & 0o777 == 0o666 & ~mask
    status, _, err = hurray("extract", str(corpus / "small.hrry"), "-o", str(tmp_path), cwd=corpus)
    assert status == OK, err
    assert {p.stat().st_mode & 0o777 for p in tmp_path.iterdir()} == {0o666 & ~mask}


# ------------------------------------------------------------------ the larger run, in subprocesses


def main() -> int:
    """Every case in its own subprocess; a summary by kind and status (exit 1 if any case fails)."""
    import tempfile

    with tempfile.TemporaryDirectory() as temporary:
        corpus = Path(temporary) / "corpus"
        build_corpus(corpus)
        REPO_CORPUS[:] = [corpus]
        failures, counts = {}, Counter()
        started = time.monotonic()
        for name, case in cases().items():
            out = Path(temporary) / "out"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            status, stdout, stderr = run_in_subprocess(fill(case.argv, corpus, out), case.stdin, corpus)
            counts[(name.split(":")[0], status)] += 1
            problems = judge(case, status, stdout, stderr, out)
            if problems:
                failures[name] = problems
        for (kind, status), count in sorted(counts.items()):
            print(f"{kind:40} exit {status:3}: {count}")
        print(f"{sum(counts.values())} command lines in {time.monotonic() - started:.0f} s, "
              f"{len(failures)} failing, 0 tracebacks" if not any("a traceback" in p for p in failures.values())
              else "tracebacks!")
        for name, problems in failures.items():
            print(f"FAIL {name}: {'; '.join(problems)}")
        return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
