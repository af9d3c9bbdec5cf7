"""The README's generated table and code blocks stay true: every block runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hurray_decl.hurray.quantization import scheme_table

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```$", README, flags=re.S | re.M)

NOT_RUN = {
    "pip install -e . && hurray-decl audit": "installs the package",
    "[ -x /usr/bin/chromium ] || { apt-get update && apt-get install -y chromium; }": "installs packages and runs "
                                                                                       "the suite",
}
"""Shell blocks the test does not run (by their first line), with the reason; every other block runs."""


def blocks(language: str) -> list[str]:
    return [code for lang, code in BLOCKS if lang == language]


def test_scheme_table_is_current():
    table = README.split("<!-- schemes -->\n", 1)[1].split("\n<!-- /schemes -->", 1)[0]
    assert table == scheme_table(), "README scheme table is stale: paste `hurray-decl schemes`"


def test_every_block_is_run_or_excused():
    assert {lang for lang, _ in BLOCKS} <= {"python", "sh"}
    skipped = [code.splitlines()[0] for code in blocks("sh") if code.splitlines()[0] in NOT_RUN]
    assert sorted(skipped) == sorted(NOT_RUN), "a block listed in NOT_RUN is gone from the README"
    assert blocks("python") and len(blocks("sh")) > len(NOT_RUN)


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_python_block_runs_as_written(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks("python")[index], f"README.md python block {index}", "exec"), {})


def example_inputs(folder: Path) -> None:
    """The files the shell blocks name as their inputs, made as a user would have them: a tensor
    descriptor, a float array and a GGUF model (written by gguf's own writer)."""
    import gguf
    import numpy as np

    from hurray_decl import quantize, write_tensor_descriptor

    rng = np.random.default_rng(7)
    descriptor = quantize(rng.standard_normal((8, 64)), "per_block_affine", block_size=32, storage="int4").descriptor
    (folder / "tensor.bin").write_bytes(write_tensor_descriptor(descriptor))
    np.save(folder / "weights.npy", rng.standard_normal((64, 128)).astype(np.float32))
    writer = gguf.GGUFWriter(str(folder / "model.gguf"), "readme")
    weights = rng.standard_normal((64, 128)).astype(np.float32)
    writer.add_tensor("w", gguf.quants.quantize(weights, gguf.GGMLQuantizationType.Q4_0),
                      raw_dtype=gguf.GGMLQuantizationType.Q4_0)
    writer.add_tensor("bias", weights[0].copy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.mark.parametrize("code", [c for c in blocks("sh") if c.splitlines()[0] not in NOT_RUN])
def test_shell_block_runs_as_written(code, tmp_path):
    """``hurray-decl`` is this worktree's command line (a shim running ``python -m hurray_decl``),
    run in a folder holding the inputs the blocks name (:func:`example_inputs`)."""
    example_inputs(tmp_path)
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "hurray-decl").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m hurray_decl "$@"\n')
    (shim / "hurray-decl").chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
           "NO_COLOR": "1"}
    done = subprocess.run(["bash", "-e", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_ci_runs_the_readme_test_command_then_prints_its_wall_time(tmp_path):
    """``.ci/run`` holds the README's test command line for line, then mypy and ruff; its exit trap
    prints the wall time, which a shell run of the trap alone shows (no suite is run here)."""
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    command = next(code for code in blocks("sh") if code.startswith("[ -x /usr/bin/chromium ]")).splitlines()
    at = script.index(command[0])
    assert script[at:at + len(command)] == command
    assert script[at + len(command):] == ["mypy", "ruff check"]
    trap = next(line for line in script if line.startswith("trap "))
    assert script.index(trap) < at
    shown = subprocess.run(["bash", "-c", f"SECONDS=125; {trap}; exit 3"], capture_output=True, text=True)
    minutes, seconds, total = map(int, re.fullmatch(r"\.ci/run: wall time (\d+)m(\d+)s \((\d+) s\)\n",
                                                    shown.stdout).groups())
    assert shown.returncode == 3 and 60 * minutes + seconds == total >= 125 and seconds < 60
