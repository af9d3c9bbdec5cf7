"""Every bad input of issue #14 through the console script, as a user's shell would run it.

Each case runs ``hurray-decl`` in a subprocess (this worktree first on PYTHONPATH) in an empty
working folder, and checks the documented exit code, a one-line message naming the rule or the
argument, no traceback, and that no file is left behind (in the working folder or beside an output).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl import cli
from hurray_decl.cli import common
from hurray_decl.hurray import examples
from tests.helpers import covers
from tests.paths import CONFORMANCE, REPO as ROOT

SCRIPT = Path(sys.executable).parent / "hurray-decl"
COMMAND = [str(SCRIPT)] if SCRIPT.is_file() else [sys.executable, "-m", "hurray_decl"]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
       "NO_COLOR": "1"}


def hurray(*argv: str, cwd: Path, stdin: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*COMMAND, *argv], cwd=cwd, env=ENV, input=stdin, capture_output=True, timeout=timeout,
                          check=False)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """Input files shared by the cases (never written by them)."""
    folder = tmp_path_factory.mktemp("inputs")
    row = next(e for e in examples.examples() if e.name == "valid_row_major").data
    (folder / "row.bin").write_bytes(row)
    (folder / "b48.bin").write_bytes(bytes(48))
    (folder / "sub").mkdir()
    quantized = hd.quantize(np.linspace(-1, 1, 4 * 64, dtype=np.float32).reshape(4, 64), "per_block_affine",
                            block_size=32)
    descriptor, buffers = quantized.descriptor, quantized.buffers
    (folder / "q.bin").write_bytes(hd.write_tensor_descriptor(descriptor))
    for i, content in enumerate(buffers):
        (folder / f"qb{i}.bin").write_bytes(content)
    decoded = json.loads(hd.read_tensor_descriptor(row).model_dump_json())
    (folder / "good.json").write_text(json.dumps(decoded))
    (folder / "noshape.json").write_text(json.dumps({k: v for k, v in decoded.items() if k != "shape"}))
    (folder / "badtype.json").write_text(json.dumps({**decoded, "shape": "abc"}))
    (folder / "newer.json").write_text(json.dumps({**decoded, "version_major": 7}))
    (folder / "big.json").write_text('{"shape": [' + "7, " * 50_000)  # 150 KB, never closed
    for name, text in {"badjson": "{not json", "list": "[1, 2]", "noentries": '{"version": 1}'}.items():
        (folder / name).mkdir()
        (folder / name / "row.bin").write_bytes(row)
        (folder / name / "manifest.json").write_text(text)
    (folder / "missing").mkdir()
    (folder / "missing" / "row.bin").write_bytes(row)
    (folder / "missing" / "manifest.json").write_text(json.dumps(
        {"descriptors": [{"file": "row.bin", "expect": None}, {"file": "gone.bin", "expect": None}]}))
    (folder / "unlisted").mkdir()
    (folder / "unlisted" / "row.bin").write_bytes(row)
    (folder / "unlisted" / "extra.bin").write_bytes(row)
    (folder / "unlisted" / "README.md").write_text("not a descriptor")
    (folder / "unlisted" / "manifest.json").write_text(json.dumps({"descriptors": [{"file": "row.bin"}]}))
    (folder / "a-file").write_text("x")
    return folder


@dataclass
class Case:
    argv: list[str]
    status: int
    says: str = ""  # in the one message line (the rule or the argument)
    stdin: bytes | None = None
    stdout: str = ""  # in standard output
    lines: int = 1  # message lines on standard error
    outputs: list[str] = field(default_factory=list)  # files a successful case leaves in the working folder


def long_example() -> bytes:
    return next(e.data for e in examples.examples() if len(e.data) > 127 and e.expect is None)


CASES: dict[str, Case] = {
    # inputs
    "hex over 255 characters": Case(["validate", long_example().hex()], 0, stdout="valid", lines=0),
    "hex with 0x and spaces": Case(["validate", "{row0x}"], 0, stdout="valid", lines=0),
    "missing ./cafe is no such file": Case(["validate", "./cafe"], common.FILE, "no such file: ./cafe"),
    "missing cafe.bin is no such file": Case(["validate", "cafe.bin"], common.FILE, "no such file: cafe.bin"),
    "neither file nor hex": Case(["validate", "zz"], common.USAGE, "argument INPUT"),
    "odd hex": Case(["validate", "abc"], common.USAGE, "odd number of hex digits"),
    "a folder as input": Case(["validate", "{in}/sub"], common.FILE, "is a folder"),
    "dash reads standard input": Case(["validate", "-"], 0, stdin=b"{row}", stdout="valid", lines=0),
    "/dev/stdin from a pipe": Case(["validate", "/dev/stdin"], 0, stdin=b"{row}", stdout="valid", lines=0),
    "trailing bytes short of the buffers: one note": Case(
        ["validate", "-"], 0, "the 40 bytes after it were not read", stdin=b"{row}" + bytes(40),
        stdout="valid: TensorDescriptor (bytes 0-"),
    "trailing bytes past the buffers: the next frame": Case(
        ["validate", "-"], common.INVALID, stdin=b"{row}" + bytes(1000), stdout="invalid: [HS-FRM-05] frame[1]",
        lines=0),
    "--buffers missing file": Case(["validate", "{in}/row.bin", "--buffers", "{in}/nope.bin"], common.FILE,
                                   "argument --buffers: no such file"),
    "--buffers a folder": Case(["validate", "{in}/row.bin", "--buffers", "{in}/sub"], common.FILE,
                               "argument --buffers"),
    "--buffers before the descriptor": Case(["validate", "--buffers", "{in}/b48.bin", "{in}/row.bin"], 0,
                                            stdout="valid", lines=0),
    "--buffers wrong content": Case(["validate", "--buffers", "{in}/b48.bin", "{in}/q.bin"], common.INVALID,
                                    stdout="invalid: [HT-BUFT-01]", lines=0),
    # encode
    "encode a binary file": Case(["encode", "{in}/row.bin", "--hex"], common.USAGE, "argument INPUT: not JSON"),
    "encode bad JSON, 150 KB": Case(["encode", "{in}/big.json", "--hex"], common.USAGE, "argument INPUT: not JSON"),
    "encode without shape": Case(["encode", "{in}/noshape.json", "--hex"], common.USAGE, "INPUT -> shape: missing"),
    "encode a wrong type": Case(["encode", "{in}/badtype.json", "--hex"], common.USAGE, "argument INPUT -> shape"),
    "encode a refused value": Case(["encode", "{in}/newer.json", "-o", "out.bin"], common.INVALID, "[HT-HDR-05]"),
    "encode -o a folder": Case(["encode", "{in}/good.json", "-o", "{in}/sub"], common.FILE, "argument -o"),
    "encode -o a missing folder": Case(["encode", "{in}/good.json", "-o", "nowhere/x.bin"], common.FILE,
                                       "no such folder"),
    "encode -o writes": Case(["encode", "{in}/good.json", "-o", "x.bin"], 0, lines=0, outputs=["x.bin"]),
    # dequantize
    "dequantize -o a folder": Case(["dequantize", "{in}/q.bin", "{in}/qb0.bin", "{in}/qb1.bin", "-o", "{in}/sub"],
                                   common.FILE, "argument -o"),
    "dequantize -o a missing folder": Case(["dequantize", "{in}/q.bin", "{in}/qb0.bin", "{in}/qb1.bin", "-o",
                                            "nowhere/x.npy"], common.FILE, "no such folder"),
    "dequantize wrong buffers": Case(["dequantize", "{in}/q.bin", "{in}/qb0.bin", "{in}/qb0.bin", "-o", "x.npy"],
                                     common.INVALID, "[HT-BUFT-01]"),
    "dequantize a missing buffer": Case(["dequantize", "{in}/q.bin", "{in}/qb0.bin", "qb9.bin", "-o", "x.npy"],
                                        common.FILE, "argument BUFFER: no such file"),
    "dequantize unquantized": Case(["dequantize", "{in}/row.bin", "{in}/b48.bin", "-o", "x.npy"], 0,
                                   stdout="wrote float32 [3, 4]", lines=0, outputs=["x.npy"]),  # its values, exit 0
    "dequantize writes": Case(["dequantize", "{in}/q.bin", "{in}/qb0.bin", "{in}/qb1.bin", "-o", "x.npy"], 0,
                              stdout="wrote float32 [4, 64]", lines=0, outputs=["x.npy"]),
    # audit
    "audit a manifest of bad JSON": Case(["audit", "{in}/badjson"], common.FILE, "not a JSON manifest"),
    "audit a manifest that is a list": Case(["audit", "{in}/list"], common.FILE, "a manifest is an object"),
    "audit a manifest without entries": Case(["audit", "{in}/noentries"], common.FILE, "a manifest is an object"),
    "audit a listed file missing": Case(["audit", "{in}/missing"], common.INVALID, stdout="gone.bin  missing",
                                        lines=0),
    "audit a file not listed": Case(["audit", "{in}/unlisted"], common.INVALID, stdout="1 not in the manifest",
                                    lines=0),
    "audit the conformance folder": Case(["audit", "{conformance}"], 0, stdout="0 disagreeing with the manifest",
                                         lines=0),
    "audit a missing folder": Case(["audit", "{in}/nope"], common.FILE, "no such folder"),
    "audit a file for a folder": Case(["audit", "{in}/a-file"], common.FILE, "is not a folder"),
    # bench
    "bench --size 0": Case(["bench", "--size", "0"], common.USAGE, "argument --size"),
    "bench --size -5": Case(["bench", "--size", "-5"], common.USAGE, "argument --size"),
    "bench --size 31": Case(["bench", "--size", "31"], common.USAGE, "argument --size"),
    "bench --size 33": Case(["bench", "--size", "33"], common.USAGE, "argument --size"),
    "bench --repeat 0": Case(["bench", "--repeat", "0"], common.USAGE, "argument --repeat"),
    "bench --repeat -1": Case(["bench", "--repeat", "-1"], common.USAGE, "argument --repeat"),
    # fuzz
    "fuzz --json a folder": Case(["fuzz", "--reader", "true", "--count", "1", "--json", "{in}/sub"], common.FILE,
                                 "argument --json"),
    "fuzz --out a file": Case(["fuzz", "--reader", "true", "--count", "1", "--out", "{in}/row.bin"], common.FILE,
                              "argument --out"),
    "fuzz a missing reader": Case(["fuzz", "--reader", "no-such-reader {file}", "--count", "1"], common.USAGE,
                                  "argument --reader: no such program: no-such-reader"),
    "fuzz --json in a missing folder": Case(["fuzz", "--reader", "true", "--count", "1", "--json", "nowhere/r.json"],
                                            common.FILE, "argument --json: no such folder"),
    "fuzz --count 0": Case(["fuzz", "--reader", "true", "--count", "0"], common.USAGE, "argument --count"),
    "fuzz an unknown rule": Case(["fuzz", "--reader", "true", "--count", "1", "--rule", "HT-HDR-99"], common.USAGE,
                                 "HT-HDR-99"),
    "fuzz leaves no folder": Case(["fuzz", "--reader", "false", "--count", "2", "--seed", "3", "--rule",
                                   "HT-HDR-04"], 0, stdout="0 disagreements", lines=2),
    # the rest of the command line
    "an unknown rule": Case(["rule", "NOPE-1"], common.USAGE, "argument ID: no rule NOPE-1"),
    "an unknown command": Case(["nope"], common.USAGE, "argument COMMAND"),
    "no command": Case([], common.USAGE, "COMMAND"),
    "--version": Case(["--version"], 0, stdout=f"hurray-decl {hd.__version__}", lines=0),
}


def substitute(text: str, folder: Path, row: bytes) -> str:
    return (text.replace("{in}", str(folder)).replace("{conformance}", str(CONFORMANCE))
            .replace("{row0x}", " ".join(f"0x{b:02x}" for b in row)))


@pytest.mark.parametrize("name", CASES)
def test_bad_input(name, inputs, tmp_path):
    case = CASES[name]
    row = (inputs / "row.bin").read_bytes()
    stdin = case.stdin.replace(b"{row}", row) if case.stdin is not None else None
    before_inputs = sorted(p.name for p in inputs.rglob("*"))
    done = hurray(*(substitute(a, inputs, row) for a in case.argv), cwd=tmp_path, stdin=stdin)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert "Traceback" not in out + err
    assert done.returncode == case.status, (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == case.lines, lines
    if case.says:
        assert case.says in lines[-1], lines
        assert len(lines[-1]) <= common.MESSAGE_LIMIT + 60
    if case.stdout:
        assert case.stdout in out
    assert "README.md" not in out  # never audited as a descriptor
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(case.outputs)
    assert sorted(p.name for p in inputs.rglob("*")) == before_inputs


def test_messages_name_the_field_once(inputs, tmp_path):
    err = hurray("encode", str(inputs / "badtype.json"), cwd=tmp_path).stderr.decode()
    assert err.count("shape") == 1 and "abc" not in err and "HT-" not in err


def test_encode_of_bad_json_does_not_echo_it(inputs, tmp_path):
    err = hurray("encode", str(inputs / "big.json"), cwd=tmp_path).stderr.decode()
    assert "7, 7" not in err and len(err) < 200


def test_process_substitution_reads_the_stream(inputs, tmp_path):
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    line = " ".join(map(str, COMMAND)) + f" validate <(cat {inputs / 'row.bin'})"
    done = subprocess.run(["bash", "-c", line], env=ENV, capture_output=True, check=False, cwd=tmp_path)
    assert done.returncode == 0 and b"valid" in done.stdout, done.stderr


def test_a_closed_pipe_is_no_traceback(tmp_path):
    process = subprocess.Popen([*COMMAND, "schemes"], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    process.stdout.close()  # the reader is gone before anything is written (like "| head -0")
    err = process.stderr.read().decode()
    assert process.wait(timeout=60) == common.BROKEN_PIPE and err == ""


READER_HOLDING = ("import pathlib, sys, time\n"
                  "held = pathlib.Path('running')\n"
                  "held.touch()\n"
                  "while held.exists():\n"
                  "    time.sleep(0.01)\n")
"""A fuzz reader that says it runs (the file ``running``) and runs until that file is removed: the
test, not the machine's speed, decides when a case ends."""


def test_ctrl_c_is_no_traceback(tmp_path):
    """Ctrl-C while a case's reader runs, whatever the machine's load: the reader holds its case
    until the test lets it go, after the signal; exit 130, one line, the work folder removed."""
    import shlex
    import time

    reader = shlex.join([sys.executable, "-c", READER_HOLDING])
    process = subprocess.Popen([*COMMAND, "fuzz", "--reader", reader, "--count", "40", "--jobs", "1", "--seed", "2",
                                "--timeout", "600", "--out", str(tmp_path / "kept")], cwd=tmp_path, env=ENV,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    running = tmp_path / "running"
    deadline = time.monotonic() + 300  # a guard against a hang only: the test waits for events, not for time
    while not running.exists():
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)  # the first case's reader is running now
    while process.poll() is None:  # let every reader that runs finish (the ones not started are dropped)
        assert time.monotonic() < deadline
        running.unlink(missing_ok=True)
        time.sleep(0.01)
    rest = process.stderr.read().decode()
    assert process.wait() == common.INTERRUPTED, rest
    assert "Traceback" not in rest and rest.strip().splitlines()[-1] == "hurray-decl: interrupted"
    assert [line for line in rest.strip().splitlines() if not line.startswith("[fuzz]")] == ["hurray-decl: interrupted"]
    assert not list(tmp_path.glob("hurray-fuzz-*"))


def test_an_internal_error_is_one_line_and_debug_shows_it(monkeypatch, capsys):
    from hurray_decl.cli import reference

    def broken(args):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(reference, "cmd_schemes", broken)
    assert cli.main(["schemes"]) == common.INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error ZeroDivisionError: a bug" in err and "--debug" in err
    assert cli.main(["--debug", "schemes"]) == common.INTERNAL
    assert "Traceback" in capsys.readouterr().err


@covers("HT-HDR-10", "HT-HDR-08")
def test_inspect_shows_only_the_declared_bytes(inputs, tmp_path):
    """A descriptor declaring a 4 MiB buffer followed by 3 MB (its buffers do not fit: no stream): the
    dump ends at descriptor_length, one note counts the rest, the verdicts name the bytes judged."""
    row = (inputs / "row.bin").read_bytes()
    d = hd.read_tensor_descriptor(row)
    large = hd.write_tensor_descriptor(d.model_copy(update={
        "shape": (1024, 1024), "buffers": (d.buffers[0].model_copy(update={"byte_size": 4 << 20}),)}))
    big = tmp_path / "big.bin"
    with big.open("wb") as stream:
        stream.write(b"\x07" * 100 + large)
        stream.truncate(100 + len(large) + 3_000_000)
    done = hurray("inspect", str(big), "--offset", "100", "--format", "json", cwd=tmp_path)
    dump = json.loads(done.stdout)
    assert done.returncode == 0 and dump["error"] is None
    assert sum(r["size"] for r in dump["rows"]) == len(large)
    assert done.stderr.decode().splitlines() == [
        f"hurray-decl: note: the descriptor ends after {len(large)} bytes (its descriptor_length); "
        f"the 3000000 bytes after it were not read"]
    judged = f"(bytes 0-{len(large) - 1} of {len(large) + 3_000_000}; --length to judge a window)"
    text = hurray("inspect", str(big), "--offset", "100", cwd=tmp_path)
    assert text.returncode == 0 and text.stdout.decode().splitlines()[-1] == f"valid {judged}"
    valid = hurray("validate", str(big), "--offset", "100", cwd=tmp_path)
    assert valid.returncode == 0 and valid.stdout.decode() == f"valid: TensorDescriptor {judged}\n"
    window = hurray("inspect", str(big), "--offset", "100", "--length", str(len(large) + 5), cwd=tmp_path)
    assert window.returncode == 0 and "the 5 bytes after it" in window.stderr.decode()
    exact = hurray("validate", str(big), "--offset", "100", "--length", str(len(large)), cwd=tmp_path)
    assert exact.returncode == 0 and exact.stdout == b"valid: TensorDescriptor\n" and not exact.stderr
    cut = hurray("validate", str(big), "--offset", "100", "--length", str(len(large) - 1), cwd=tmp_path)
    assert cut.returncode == common.INVALID and b"HT-HDR-08" in cut.stdout


def test_a_missing_package_is_an_environment_error_naming_it(monkeypatch, capsys):
    from hurray_decl.cli import reference

    def needs(args):
        raise ModuleNotFoundError("No module named 'gguf'", name="gguf")

    monkeypatch.setattr(reference, "cmd_schemes", needs)
    assert cli.main(["schemes"]) == common.FILE
    assert capsys.readouterr().err == ("hurray-decl: error: this command needs the Python package 'gguf', "
                                       "which is not installed\n")
