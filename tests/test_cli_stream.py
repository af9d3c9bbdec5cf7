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
    """The manifest's verdicts are a reader's without a buffer limit (--buffer-limit none)."""
    status, out, _ = run(capsys, "validate", "--kind", "stream", str(VECTORS / entry["file"]), "--buffer-limit", "none")
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


# ---------------------------------------------------------------- at scale: limits, rows as frames arrive


def _popen(*argv: str, stdout=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hurray_decl", *argv], stdin=subprocess.PIPE, stdout=stdout,
                            stderr=subprocess.PIPE, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _finish(process: subprocess.Popen) -> tuple[bytes, bytes]:
    """Close standard input (the command may have gone already), then its output, once it exited."""
    try:
        process.stdin.close()
    except BrokenPipeError:
        pass
    out, err = process.stdout.read(), process.stderr.read()
    process.wait(300)
    return out, err


def _claiming(size: int) -> bytes:
    """A uint8 frame whose one buffer claims ``size`` bytes (dense data may exceed what the shape needs)."""
    from hurray_decl.hurray.tensor import BufferHandle, TensorDescriptor

    return write_tensor_descriptor(TensorDescriptor(type_tag=0x11, shape=(4,), buffers=(BufferHandle(byte_size=size),)))


@covers("HS-FRM-08")
def test_claims_past_the_buffer_limit_are_refused_before_their_bytes(capsys, tmp_path):
    """By default the limit is the available memory: the 2^40 and 2^63-byte claims are refused at
    their byte_size, not read until the input ends; --buffer-limit sets it (K, M, G, T)."""
    for name, claim in (("i17-buffer-size-2pow40.stream", 1 << 40), ("i18-buffer-size-2pow63.stream", 1 << 63)):
        status, out, _ = run(capsys, "validate", "--kind", "stream", str(VECTORS / name))
        assert status == 1 and out.startswith("invalid: [HS-FRM-08] frame[0].descriptor.buffers[0].byte_size at "
                                              "byte 37: a buffer above the reader's buffer limit"), out
        assert f"actual {claim} bytes" in out
    data = (VECTORS / "v03-three-tensors.stream").read_bytes()
    (tmp_path / "s.stream").write_bytes(data)
    for command in ("validate", "inspect", "ls", "decode"):
        status, out, err = run(capsys, command, str(tmp_path / "s.stream"), "--buffer-limit", "8")
        assert status == 1 and "HS-FRM-08" in out + err and "buffers[0].byte_size" in out + err, (command, out)
        assert run(capsys, command, str(tmp_path / "s.stream"), "--buffer-limit", "1K")[0] == 0
    assert run(capsys, "validate", str(tmp_path / "s.stream"), "--buffer-limit", "16")[0] == 0  # float32[4]
    status, _, err = run(capsys, "validate", str(tmp_path / "s.stream"), "--buffer-limit", "lots")
    assert status == 2 and "is not a size" in err


@covers("HS-FRM-08")
def test_a_huge_claim_then_endless_input_is_refused_without_reading_it():
    """2^62 bytes claimed on standard input, then zeros for as long as the command reads: refused by
    rule (exit 1) after less than 1 GiB was written, with or without --kind stream; with a 1 MiB
    limit, a 2 MiB claim likewise."""
    for options in ((), ("--kind", "stream"), ("--buffer-limit", "1M")):
        claim = (1 << 21) if options[:1] == ("--buffer-limit",) else (1 << 62)
        process = _popen("validate", "-", *options)
        written = 0
        zeros = bytes(1 << 20)
        try:
            process.stdin.write(_claiming(claim))
            while written < 1 << 30:
                process.stdin.write(zeros)
                written += len(zeros)
        except BrokenPipeError:
            pass
        finally:
            out, err = _finish(process)
        assert written < 1 << 30, options
        assert process.returncode == 1 and b"invalid: [HS-FRM-08] frame[0].descriptor.buffers[0].byte_size" in out, \
            (options, out, err)


class Lines:
    """The lines a process prints, each waited for (at most 60 s) without reading past it."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.fd, self.held = process.stdout.fileno(), b""

    def __call__(self) -> bytes:
        while b"\n" not in self.held:
            ready, _, _ = select.select([self.fd], [], [], 60)
            assert ready, "no line arrived"
            part = os.read(self.fd, 1 << 16)
            assert part, "the output ended"
            self.held += part
        line, self.held = self.held.split(b"\n", 1)
        return line + b"\n"


def test_inspect_and_ls_print_each_frame_before_the_next_arrives():
    """Rows of frame 0 come out while standard input is still open, for inspect and for ls; a
    composite's members are shown before the composite closes."""
    items = list(read_stream((VECTORS / "v12-overlay-then-tensor.stream").read_bytes()))
    frames = [f for item in items for f in frame_bytes(item)]  # head, base, correction, tensor
    for argv, first in ((("inspect", "--kind", "stream", "-"), b"Offset"),
                        (("ls", "-", "--buffer-limit", "1M"), b"NAME")):
        process = _popen(*argv)
        line = Lines(process)
        try:
            process.stdin.write(frames[0] + frames[1][:1])  # detection needs a byte of the next frame
            process.stdin.flush()
            assert line().startswith(first)
            sent = len(frames[0]) + 1
            if argv[0] == "inspect":
                assert line().startswith(b"-----") and b"frame[0].descriptor.magic" in line()
            else:
                assert line().startswith(b"frame[0] ")
            process.stdin.write(frames[1][1:] + frames[2][:1])
            process.stdin.flush()
            sent += len(frames[1])
            mark = b"frame[1].descriptor.shape" if argv[0] == "inspect" else b"frame[0].member[0] "
            while mark not in line():
                pass  # the overlay's base, its composite still open
            process.stdin.write(b"".join(frames)[sent:])
        finally:
            out, _ = _finish(process)
            rest = line.held + out
        assert process.returncode == 0 and rest.rstrip().endswith(b"valid" if argv[0] == "inspect" else b"(stream)")
        if argv[0] == "ls":
            names = [row.split()[0] for row in rest.splitlines()[:-1]]
            assert names == [b"frame[0].member[1]", b"frame[3]"]  # the correction; the fourth frame


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        return next(int(line.split()[1]) << 10 for line in status if line.startswith("VmRSS:"))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmRSS from /proc")
def test_validate_of_a_long_pipe_holds_its_memory_flat():
    """40,000 frames into validate -: the resident size after 40,000 is within 2 MiB of the size after
    5,000 (the reader used to keep about 117 bytes per frame: 4 MiB more)."""
    from tests.hurray.test_stream import f32

    frame = write_stream([f32([1.0, 2.0])])
    process = _popen("validate", "--kind", "stream", "-", stdout=subprocess.PIPE)
    sizes = {}
    try:
        for batch in range(40):
            process.stdin.write(frame * 1000)
            process.stdin.flush()
            if batch + 1 in (5, 40):
                sizes[batch + 1] = _rss(process.pid)  # at most a pipe's capacity (about 1,000 frames) unread
    finally:
        out, _ = _finish(process)
    assert process.returncode == 0 and out.startswith(b"valid: stream of 40000 items"), out
    assert sizes[40] - sizes[5] < 2 << 20, sizes
