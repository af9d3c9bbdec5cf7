"""``validate``, ``inspect``, ``decode`` and ``dequantize`` give the same verdict and the same rule
code for every input of the bundled corpora (Hurray descriptors, onnx-light values, tensors and
models) and of the shared vectors (descriptors, containers, streams): one input layer decides the
kind, one reader per kind judges it, whichever command asks.

``dequantize`` may stop earlier for a valid input when it needs more than the input (buffer files
for a bare descriptor, ``--name`` for a model of several values: exit 2); it never calls a valid
input invalid or an invalid one valid, and never names another rule.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.paths import CONFORMANCE, REPO
from tests.test_cli_harness import run_in_process

CORPORA = {
    "hurray examples": REPO / "hurray_decl" / "hurray" / "examples",
    "onnx-light examples": REPO / "hurray_decl" / "onnx_light" / "examples",
    "shared descriptors": CONFORMANCE / "descriptors",
    "shared containers": CONFORMANCE / "files",
    "shared streams": CONFORMANCE / "streams",
}
SKIPPED = {"manifest.json", "make_vectors.py", "README.md"}
CODE = re.compile(r"invalid: \[([A-Z0-9-]+)\]")


def inputs() -> list[Path]:
    return sorted(p for folder in CORPORA.values() for p in folder.iterdir()
                  if p.is_file() and p.name not in SKIPPED)


def code_in(text: str) -> str | None:
    found = CODE.findall(text)
    return found[-1] if found else None


def verdicts(path: Path, out: Path) -> dict[str, tuple[int, str | None]]:
    """command -> (exit status, the rule code it names or None)."""
    found: dict[str, tuple[int, str | None]] = {}
    status, stdout, stderr = run_in_process(["validate", str(path), "--format", "json"], None)
    assert "Traceback" not in stdout + stderr
    document = json.loads(stdout) if status in (0, 1) else None
    found["validate"] = (status, (document or {}).get("error", {}) and document["error"]["code"])
    assert document is None or (document["file"] == str(path) and document["verdict"] ==
                                ("valid" if status == 0 else "invalid")), document
    status, stdout, stderr = run_in_process(["inspect", str(path)], None)
    found["inspect"] = (status, code_in(stdout) if status == 1 else None)
    status, stdout, stderr = run_in_process(["decode", str(path)], None)
    code = None
    if status == 1:
        text = stdout.strip()
        try:
            last = json.loads(text)
        except json.JSONDecodeError:  # a stream: one line per item, the refusal last
            last = json.loads(text.splitlines()[-1])
        code = last["error"]["code"]
        assert last["verdict"] == "invalid" and set(last["error"]) == {"code", "message", "path", "offset"}
    found["decode"] = (status, code)
    target = out / "x.npy"
    argv = ["dequantize", str(path), "-o", str(target)]
    if path.suffix == ".stream" or str(found["validate"][1]).startswith("HS-"):
        argv += ["--index", "0"]
    status, stdout, stderr = run_in_process(argv, None)
    found["dequantize"] = (status, code_in(stderr) if status == 1 else None)
    target.unlink(missing_ok=True)
    return found


@pytest.mark.parametrize("corpus", CORPORA)
def test_every_command_gives_the_same_verdict(corpus, tmp_path):
    disagreements = []
    folder = CORPORA[corpus]
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name not in SKIPPED)
    assert files
    for path in files:
        found = verdicts(path, tmp_path)
        status, code = found["validate"]
        assert status in (0, 1), (path.name, found)
        for command in ("inspect", "decode"):
            if found[command] != (status, code):
                disagreements.append(f"{path.name}: validate {found['validate']}, {command} {found[command]}")
        dq_status, dq_code = found["dequantize"]
        if (dq_status, dq_code) != (status, code) and not (dq_status == 2 and status == 0):
            disagreements.append(f"{path.name}: validate {found['validate']}, dequantize {found['dequantize']}")
        assert not list(tmp_path.iterdir())
    assert not disagreements, "\n".join(disagreements)
