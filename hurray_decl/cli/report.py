"""The report of a conversion or a quantization: one :class:`Row` per tensor (and per refused KV
entry), printed a line each with a summary line, or with ``--json`` as one document whose tensors
are :func:`hurray_decl.cli.outputs.tensor_record`\\ s (the same keys for every command)."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STATUSES = ("quantized", "converted", "kept", "skipped")
SKIPPED = STATUSES[-1]


@dataclass
class Row:
    """One tensor of a report: quantized (with its errors), converted, kept as it is, or skipped
    (its rule ``code``, the ``reason``, and the options that would convert it)."""

    name: str
    source: str
    """Its type in the source: a GGML type, an element type, ``hurray``, ``kv`` for a KV entry."""
    shape: tuple[int, ...]
    status: str  # one of STATUSES
    method: str = ""
    error: Any = None  # model_quantize.ErrorReport
    byte_size: int = 0
    code: str | None = None
    reason: str = ""
    converts_with: tuple[str, ...] = ()

    @property
    def converted(self) -> bool:
        return self.status != SKIPPED

    def text(self, typed_shape: bool = False) -> str:
        """The row as a line: status, name, type, shape (with ``typed_shape``, the type and the shape
        as one column, ``float32 [64, 64]``), then the method and errors, or why it was skipped."""
        head = f"{self.status:9}  {self.name}  {self.source}{' ' if typed_shape else '  '}{list(self.shape)}"
        if not self.converted:
            hint = f" (converts with {', '.join(self.converts_with)})" if self.converts_with else ""
            return f"{head}  {self.code}: {self.reason}{hint}"
        if self.error is None:
            return f"{head}  {self.method}".rstrip()
        e = self.error
        snr = "exact" if e.snr_db is None else f"{e.snr_db:.1f} dB"
        return (f"{head}  {self.method}  max|err| {e.max_abs_error:.4g}  rmse {e.rmse:.4g}  snr {snr}  "
                f"{self.byte_size} B")

    def record(self) -> dict[str, Any]:
        from hurray_decl.cli.outputs import tensor_record

        e = self.error
        errors = (None, None, None) if e is None else (e.max_abs_error, e.rmse, _json_number(e.snr_db))
        return tensor_record(self.name, self.source, self.shape, self.status, method=self.method,
                             byte_size=self.byte_size, errors=errors, code=self.code, reason=self.reason,
                             converts_with=self.converts_with)


def _json_number(value: float | None) -> float | str | None:
    """A float for JSON: the SNR of a zero source with an error is minus infinity, written as text."""
    return value if value is None or math.isfinite(value) else str(value)


def missing_tensors(rows: Sequence[Row]) -> list[Row]:
    """The rows of the tensors (not KV entries) that did not convert."""
    return [r for r in rows if not r.converted and r.source != "kv"]


def report(rows: Sequence[Row], source: Path, target: str, written: str | None, as_json: bool) -> None:
    """The report of ``quantize`` and of the safetensors sides of ``convert``: the rows, then the
    counts and what was written."""
    counts = {s: sum(r.status == s for r in rows) for s in STATUSES}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n or s == SKIPPED)
    if as_json:
        print(json.dumps({"source": str(source), "to": target, "output": written,
                          "tensors": [r.record() for r in rows]}, indent=2))
        return
    for row in rows:
        print(row.text(typed_shape=True))
    print(f"{summary}; wrote {written}" if written else f"{summary}; nothing written")


def report_conversion(rows: Sequence[Row], written: str | None, args: argparse.Namespace) -> None:
    """The report of ``convert``: the rows, then one summary line; or, with ``--json``, one
    document. A refused tensor without ``--partial`` means nothing was written; with it, the
    output is partial and says so (``partial``, ``missing``)."""
    done = sum(r.converted for r in rows)
    missing = missing_tensors(rows)
    summary = f"{done} converted, {len(rows) - done} skipped"
    plural = "s" if len(missing) > 1 else ""
    if written is None:
        outcome = "nothing written"
        if missing and done and not args.partial:
            outcome += f": {len(missing)} tensor{plural} did not convert (--partial writes the others)"
    elif missing:
        outcome = (f"wrote {written}, a partial model: {len(missing)} tensor{plural} missing "
                   f"({', '.join(r.name for r in missing[:8])}{', ...' if len(missing) > 8 else ''})")
    else:
        outcome = f"wrote {written}"
    if args.json:
        print(json.dumps({"source": str(args.input), "to": args.to, "output": written,
                          "partial": bool(written and missing), "missing": [r.name for r in missing],
                          "tensors": [r.record() for r in rows]}, indent=2))
        return
    for row in rows:
        print(row.text())
    print(f"{summary}; {outcome}")
