"""Hurray streams on the command line: validate, inspect, decode, dequantize, extract, audit and
fuzz; detection; standard input read frame by frame."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hurray_decl import cli
from hurray_decl.hurray.numerics import dequantize
from hurray_decl.hurray.stream import read_stream, write_stream
from hurray_decl.hurray.stream.strategies import frame_bytes
from hurray_decl.hurray.tensor import write_tensor_descriptor
from tests.helpers import covers, dump_verdict

ROOT = Path(__file__).resolve().parents[1]
VECTORS = ROOT / "tests" / "conformance" / "hurray" / "streams"
MANIFEST = json.loads((VECTORS / "manifest.json").read_text(encoding="utf-8"))["vectors"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


def hurray(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hurray_decl", *argv], input=stdin, capture_output=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False, timeout=300)


@covers("HS-FRM-03", "HS-FRM-12")
@pytest.mark.parametrize("entry", MANIFEST, ids=lambda e: e["file"])
def test_validate_gives_every_vector_its_verdict(capsys, entry):
    status, out, _ = run(capsys, "validate", "--kind", "stream", str(VECTORS / entry["file"]))
    if entry["expect"] == "valid":
        assert status == 0 and out.startswith("valid: stream of"), out
    else:
        assert status == 1 and out.startswith(f"invalid: [{entry['rule']}] frame["), out


def test_validate_reads_standard_input_too():
    for name, code in (("v12-overlay-then-tensor.stream", None), ("i13-major-2-then-valid.stream", "HS-VER-02")):
        done = hurray("validate", "--kind", "stream", "-", stdin=(VECTORS / name).read_bytes())
        assert done.returncode == (0 if code is None else 1)
        assert (b"valid: stream of 2 items" if code is None else f"[{code}]".encode()) in done.stdout


def test_audit_of_the_stream_vectors_agrees_with_the_manifest(capsys):
    status, out, _ = run(capsys, "audit", str(VECTORS), "--format", "json")
    result = json.loads(out)
    assert status == 0 and result["summary"]["disagreements"] == 0
    assert result["summary"]["files"] == len(MANIFEST) and result["summary"]["invalid"] == 20


def test_a_stream_is_detected_and_validated_whole(capsys, tmp_path):
    """A two-tensor stream is a stream, not its first descriptor; a descriptor alone stays one."""
    two = (VECTORS / "v03-three-tensors.stream").read_bytes()
    (tmp_path / "s.bin").write_bytes(two)
    status, out, err = run(capsys, "validate", str(tmp_path / "s.bin"))
    assert (status, out.strip(), err) == (0, "valid: stream of 3 items (3 frames, 194 bytes)", "")
    first = next(iter(read_stream(two)))
    (tmp_path / "d.bin").write_bytes(write_tensor_descriptor(first.descriptor))
    assert run(capsys, "validate", str(tmp_path / "d.bin"))[:2] == (0, "valid: TensorDescriptor\n")
    (tmp_path / "one.bin").write_bytes(frame_bytes(first)[0])  # a descriptor and exactly its buffers
    assert run(capsys, "validate", str(tmp_path / "one.bin"))[1].startswith("valid: stream of 1 item")
    (tmp_path / "bad.bin").write_bytes(two[:-1])  # the last frame cut short: never "valid"
    status, out, _ = run(capsys, "validate", str(tmp_path / "bad.bin"))
    assert status == 1 and "[HS-FRM-04] frame[2].buffer[0]" in out
    done = hurray("validate", "-", stdin=two)  # detected on standard input as well
    assert done.returncode == 0 and b"valid: stream of 3 items" in done.stdout


I05 = next(e for e in MANIFEST if e["file"].startswith("i05-"))  # a frame, 16 zero bytes, a frame


def _verdict(command: str, out: str) -> tuple[str, int]:
    """(rule code, offset) of the refusal that ``command``'s standard output reports."""
    if command == "decode":
        error = json.loads(out.splitlines()[-1])["error"]
        return error["code"], error["offset"]
    line = dump_verdict(out) if command == "inspect" else out.strip()
    code = line.split("[", 1)[1].split("]", 1)[0]
    return code, int(line.split(" at byte ", 1)[1].split(":", 1)[0])


@pytest.mark.parametrize("command", ["validate", "inspect", "decode"])
@pytest.mark.parametrize("kind", [[], ["--kind", "stream"]], ids=["detected", "forced"])
def test_bytes_after_a_frame_are_judged_as_the_next_frame(capsys, command, kind):
    """A descriptor, exactly its buffers, then bytes that are no frame: a stream whose second frame is
    refused, from a file and from standard input, never the first descriptor's "valid"."""
    path = VECTORS / I05["file"]
    first = frame_bytes(next(iter(read_stream(path.read_bytes()))))[0]
    expected = (I05["rule"], len(first))
    status, out, err = run(capsys, command, *kind, str(path))
    assert (status, _verdict(command, out), err) == (1, expected, "")
    done = hurray(command, *kind, "-", stdin=path.read_bytes())
    assert (done.returncode, _verdict(command, done.stdout.decode()), done.stderr) == (1, expected, b"")


def test_a_descriptor_followed_by_less_than_its_buffers_is_judged_alone(capsys, tmp_path):
    """Its buffers do not fit in the rest: a descriptor (exit 0), whose verdict names the bytes it judged,
    from a file and from standard input; one byte more than its buffers makes it a stream."""
    item = next(iter(read_stream((VECTORS / I05["file"]).read_bytes())))
    descriptor = write_tensor_descriptor(item.descriptor)
    size = sum(len(b) for b in item.buffers)
    judged = f"valid: TensorDescriptor (bytes 0-{len(descriptor) - 1} of {len(descriptor) + size - 1}; " \
             "--length to judge a window)\n"
    short = descriptor + b"\xab" * (size - 1)
    (tmp_path / "short.bin").write_bytes(short)
    status, out, err = run(capsys, "validate", str(tmp_path / "short.bin"))
    assert (status, out) == (0, judged) and f"the {size - 1} bytes after it were not read" in err
    done = hurray("validate", "-", stdin=short)
    assert (done.returncode, done.stdout.decode()) == (0, judged)
    status, out, _ = run(capsys, "inspect", str(tmp_path / "short.bin"))
    assert status == 0 and out.splitlines()[-1] == "valid" + judged.strip()[len("valid: TensorDescriptor"):]
    window = run(capsys, "validate", str(tmp_path / "short.bin"), "--length", str(len(descriptor)))
    assert window == (0, "valid: TensorDescriptor\n", "")
    (tmp_path / "over.bin").write_bytes(descriptor + b"\xab" * (size + 1))
    status, out, _ = run(capsys, "validate", str(tmp_path / "over.bin"))
    assert status == 1 and out.startswith(f"invalid: [HS-FRM-04] frame[1].prefix at byte {len(descriptor) + size + 1}:")


def test_a_two_frame_stream_is_still_a_stream(capsys, tmp_path):
    item = next(iter(read_stream((VECTORS / I05["file"]).read_bytes())))
    two = write_stream([item, item])
    (tmp_path / "two.bin").write_bytes(two)
    said = f"valid: stream of 2 items (2 frames, {len(two)} bytes)\n"
    assert run(capsys, "validate", str(tmp_path / "two.bin")) == (0, said, "")
    done = hurray("validate", "-", stdin=two)
    assert (done.returncode, done.stdout.decode(), done.stderr) == (0, said, b"")


def test_progress_prints_a_line_per_item(capsys):
    status, out, _ = run(capsys, "validate", "--kind", "stream", "--progress",
                         str(VECTORS / "v12-overlay-then-tensor.stream"))
    lines = out.splitlines()
    assert status == 0 and len(lines) == 3
    assert lines[0].startswith("frame[0] at byte 0: composite overlay") and lines[1].startswith("frame[3] at byte ")


def test_inspect_names_every_byte(capsys):
    data = (VECTORS / "v10-csr-three-buffers.stream").read_bytes() + (VECTORS / "v03-three-tensors.stream").read_bytes()
    done = hurray("inspect", "--kind", "stream", "-", "--format", "json", stdin=data)
    rows = json.loads(done.stdout)["rows"]
    assert done.returncode == 0
    assert [r["offset"] for r in rows] == [0] + [sum(r["size"] for r in rows[:i]) for i in range(1, len(rows))]
    assert sum(r["size"] for r in rows) == len(data)
    fields = {r["field"] for r in rows}
    assert {"frame[0].buffer[2]", "frame[3].descriptor.shape[0]", "frame[3].buffer[0]",
            "frame[0].descriptor.buffers[1].byte_size"} <= fields


def test_inspect_marks_the_refused_field(capsys):
    status, out, _ = run(capsys, "inspect", "--kind", "stream", str(VECTORS / "i20-sync-event-cuda.stream"))
    assert status == 1 and out.count("<-- HS-SYNC-01") == 1  # the text table (its field cell may wrap)
    status, out, _ = run(capsys, "inspect", "--kind", "stream", "--format", "markdown",
                         str(VECTORS / "i20-sync-event-cuda.stream"))
    marked = [line for line in out.splitlines() if "<-- HS-SYNC-01" in line]
    assert status == 1 and len(marked) == 1 and "| frame[0].descriptor.buffers[0].sync_mode |" in marked[0]


def test_decode_prints_a_json_line_per_item(capsys):
    status, out, _ = run(capsys, "decode", "--kind", "stream", str(VECTORS / "i04-partial-frame-after-tensor.stream"))
    lines = [json.loads(line) for line in out.splitlines()]
    assert status == 1 and len(lines) == 2
    assert lines[0]["frame"] == 0 and lines[0]["descriptor"]["shape"] == [4] and lines[0]["buffers"] == [16]
    assert lines[1]["error"]["code"] == "HS-FRM-04" and lines[1]["error"]["offset"] == 78


def test_dequantize_a_frame_by_index(capsys, tmp_path):
    path = VECTORS / "v06-per-channel-affine.stream"
    item = next(iter(read_stream(path.read_bytes())))
    out = tmp_path / "v.npy"
    status, said, _ = run(capsys, "dequantize", "--kind", "stream", str(path), "--index", "0", "-o", str(out))
    assert status == 0, said
    assert np.array_equal(np.load(out), dequantize(item.descriptor, list(item.buffers)))
    assert run(capsys, "dequantize", "--kind", "stream", str(path), "--index", "3", "-o", str(out))[0] == 2
    assert run(capsys, "dequantize", "--kind", "stream", str(path), "--name", "w", "-o", str(out))[0] == 2


def test_extract_a_frame_by_index(capsys, tmp_path):
    path = VECTORS / "v03-three-tensors.stream"
    status, _, _ = run(capsys, "extract", str(path), "--index", "2", "-o", str(tmp_path))
    third = list(read_stream(path.read_bytes()))[2]
    assert status == 0
    assert (tmp_path / "frame2.descriptor.bin").read_bytes() == write_tensor_descriptor(third.descriptor)
    assert (tmp_path / "frame2.buffer0.bin").read_bytes() == b"HRRY\x01\x005\x00"
    status, _, _ = run(capsys, "extract", "--kind", "stream", str(VECTORS / "i03-truncated-buffer.stream"),
                         "--index", "0", "-o", str(tmp_path))
    assert status == 1 and not (tmp_path / "frame0.descriptor.bin").exists()


def _line(process: subprocess.Popen, seconds: float = 60) -> bytes:
    ready, _, _ = select.select([process.stdout], [], [], seconds)
    assert ready, "no line arrived"
    return process.stdout.readline()


@covers("HS-FRM-13", "HS-FRM-14")
def test_validate_reports_each_frame_as_it_arrives_on_a_pipe():
    """Frame k's line comes while frame k+1 has not been sent; the refusal of frame 2 comes while
    standard input is still open."""
    items = list(read_stream((VECTORS / "v03-three-tensors.stream").read_bytes()))
    frames = [write_stream([item]) for item in items]
    frames[2] = frames[2][:4] + b"\x07" + frames[2][5:]  # major 7: refused on the prefix
    process = subprocess.Popen([sys.executable, "-m", "hurray_decl", "validate", "--kind", "stream", "-",
                                "--progress"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        for k in (0, 1):
            process.stdin.write(frames[k])
            process.stdin.flush()
            assert _line(process).startswith(f"frame[{k}] at byte".encode())
        process.stdin.write(frames[2])
        process.stdin.flush()
        assert b"[HS-VER-02] frame[2].descriptor.version_major" in _line(process)
        assert process.poll() is None or process.returncode == 1
    finally:
        process.stdin.close()
        process.wait(60)
    assert process.returncode == 1


def test_fuzz_an_external_stream_reader(tmp_path):
    reader = f"{sys.executable} -m hurray_decl validate --kind stream {{file}}"
    done = hurray("fuzz", "--kind", "stream", "--reader", reader, "--count", "16", "--seed", "3", "--jobs", "2",
                  "--out", str(tmp_path / "kept"))
    assert done.returncode == 0, done.stdout.decode()[-2000:]
    assert b"16 cases, seed 3: 0 disagreements" in done.stdout
