"""Outputs that can never destroy a file: for every command that writes, an output naming a
character device (made with ``mknod`` here), a FIFO, a symbolic link or one of the command's
inputs is refused with exit 2 before any work, the node untouched; a replaced file keeps its
permission bits; a staging folder left by a SIGKILL'd ``convert -o DIR`` is removed by the next
run into the same folder."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hurray_decl import cli
from hurray_decl.cli import outputs
from tests.paths import REPO
from tests.test_cli_harness import build_corpus

WRITERS = {
    "encode": ("encode", "{c}/w.json", "-o", "{o}"),
    "dequantize descriptor": ("dequantize", "{c}/w.bin", "{c}/w.buf0.bin", "{c}/w.buf1.bin", "-o", "{o}"),
    "dequantize container": ("dequantize", "{c}/small.hrry", "-o", "{o}"),
    "dequantize stream": ("dequantize", "{c}/three.stream", "--index", "0", "-o", "{o}"),
    "dequantize value": ("dequantize", "{c}/value.pb", "-o", "{o}"),
    "extract container": ("extract", "{c}/small.hrry", "-o", "{o}"),
    "extract stream": ("extract", "{c}/three.stream", "--index", "0", "-o", "{o}"),
    "convert gguf": ("convert", "{c}/small.gguf", "-o", "{o}"),
    "convert container": ("convert", "{c}/small.hrry", "--to", "onnx-light", "-o", "{o}"),
    "quantize": ("quantize", "{c}/a.npy", "-o", "{o}"),
    "audit html": ("audit", "{c}/audit", "--format", "html", "-o", "{o}"),
    "fuzz json": ("fuzz", "--reader", "true", "--count", "1", "--json", "{o}"),
    "fuzz out": ("fuzz", "--reader", "true", "--count", "1", "--out", "{o}"),
}
"""Every command that writes a file or a folder, its output ``{o}`` ({c}: the corpus folder)."""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("safe")
    build_corpus(folder)
    assert cli.main(["decode", str(folder / "w.bin")]) == 0  # the JSON encode reads
    np.save(folder / "a.npy", np.linspace(-1, 1, 4096, dtype=np.float32).reshape(64, 64))
    (folder / "audit").mkdir()
    (folder / "audit" / "w.bin").write_bytes((folder / "w.bin").read_bytes())
    return folder


@pytest.fixture(autouse=True)
def _decoded(corpus, capsys) -> None:
    if not (corpus / "w.json").exists():
        assert cli.main(["decode", str(corpus / "w.bin")]) == 0
        (corpus / "w.json").write_text(capsys.readouterr().out, encoding="utf-8")
    capsys.readouterr()


def argv(name: str, corpus: Path, out: Path) -> list[str]:
    return [part.format(c=corpus, o=out) for part in WRITERS[name]]


def snapshot(folder: Path) -> dict[str, tuple[int, int, int, bytes | str]]:
    """Every entry of ``folder``: inode, mode, size, and a link's target or a regular file's bytes."""
    shot = {}
    for entry in sorted(os.listdir(folder)):
        info = os.lstat(folder / entry)
        body: bytes | str = b""
        if stat.S_ISLNK(info.st_mode):
            body = os.readlink(folder / entry)
        elif stat.S_ISREG(info.st_mode):
            body = (folder / entry).read_bytes()
        shot[entry] = (info.st_ino, info.st_mode, info.st_size, body)
    return shot


def make_node(kind: str, path: Path) -> None:
    if kind == "character device":
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers, in a temporary folder
    elif kind == "FIFO":
        os.mkfifo(path)
    else:
        victim = path.parent / "victim.txt"
        victim.write_bytes(b"keep me")
        os.symlink(victim, path)


NODES = ["FIFO", "symbolic link"] + (["character device"] if hasattr(os, "geteuid") and os.geteuid() == 0 else [])


@pytest.mark.parametrize("node", NODES)
@pytest.mark.parametrize("name", sorted(WRITERS))
def test_an_output_onto_a_node_is_refused_untouched(corpus, tmp_path, capsys, name, node) -> None:
    out = tmp_path / "node.hrry"
    make_node(node, out)
    before = snapshot(tmp_path)
    status = cli.main(argv(name, corpus, out))
    err = capsys.readouterr().err
    assert status == 2, err
    assert node in err and str(out) in err and len(err.strip().splitlines()) == 1
    assert snapshot(tmp_path) == before  # the node, the link's target, and no temporary left


FROM_INPUT = {name: parts for name, parts in WRITERS.items() if "{c}" in parts[1] and not name.startswith(
    ("audit", "extract"))}
"""The writers of one output file from an input file: ``-o`` naming that input."""


@pytest.mark.parametrize("name", sorted(FROM_INPUT))
def test_an_output_onto_the_input_is_refused(corpus, tmp_path, capsys, name) -> None:
    source = Path(WRITERS[name][1].format(c=corpus))
    copy = tmp_path / source.name
    copy.write_bytes(source.read_bytes())
    parts = argv(name, corpus, copy)
    parts[1] = str(copy)
    before = snapshot(tmp_path)
    assert cli.main(parts) == 2
    err = capsys.readouterr().err
    assert "is the input" in err and str(copy) in err
    assert snapshot(tmp_path) == before


def test_an_output_onto_a_buffer_input_is_refused(corpus, capsys) -> None:
    buffer = corpus / "w.buf1.bin"
    before = buffer.read_bytes()
    assert cli.main(argv("dequantize descriptor", corpus, buffer)) == 2
    assert "is the input" in capsys.readouterr().err and buffer.read_bytes() == before


@pytest.mark.parametrize("name", ["encode", "dequantize container", "convert container", "quantize"])
def test_a_replaced_file_keeps_its_mode(corpus, tmp_path, capsys, name) -> None:
    out = tmp_path / ("out.onnx" if name == "convert container" else "out.hrry" if name == "quantize" else "out.bin")
    out.write_bytes(b"old")
    os.chmod(out, 0o600)
    assert cli.main(argv(name, corpus, out)) == 0, capsys.readouterr().err
    assert out.read_bytes() != b"old" and stat.S_IMODE(os.stat(out).st_mode) == 0o600
    fresh = tmp_path / ("new" + out.suffix)
    assert cli.main(argv(name, corpus, fresh)) == 0
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o666 & ~mask


def _staged(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if outputs.STALE.match(name)]


def test_a_staging_folder_left_by_sigkill_is_removed_by_the_next_run(corpus, tmp_path) -> None:
    """``convert -o DIR`` killed (SIGKILL, so that no clean-up runs) once its staging folder
    exists, at a point chosen by the code rather than by a clock; the next run removes it."""
    killed = ("import os, signal, sys\n"
              "from hurray_decl import cli\n"
              "from hurray_decl.cli import outputs\n"
              "staged = outputs.Batch.folder\n"
              "def folder(self, *args, **kwargs):\n"
              "    path = staged(self, *args, **kwargs)\n"
              "    (path / 'partial.bin').write_bytes(b'x')\n"
              "    os.kill(os.getpid(), signal.SIGKILL)\n"
              "outputs.Batch.folder = folder\n"
              "sys.exit(cli.main(sys.argv[1:]))\n")
    out = tmp_path / "tensors"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", killed, *argv("convert gguf", corpus, out)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == -9
    left = _staged(tmp_path)
    assert len(left) == 1 and (tmp_path / left[0] / "partial.bin").exists() and not out.exists()
    again = subprocess.run([sys.executable, "-m", "hurray_decl", *argv("convert gguf", corpus, out)], env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert _staged(tmp_path) == [] and out.is_dir() and json.loads((out / "manifest.json").read_text())


def test_a_live_runs_staging_folder_is_kept(tmp_path) -> None:
    """Only a gone process's staging folder is stale: one of a running process is left alone."""
    live = tmp_path / f".x.{outputs.TAG}-{outputs.host_tag()}-{os.getppid()}.part"
    live.mkdir()
    assert outputs.remove_stale(tmp_path) == [] and live.is_dir()
