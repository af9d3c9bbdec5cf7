"""onnx-light on the ``hurray-decl`` command line.

:func:`register` adds ``hurray-decl profiles`` (the 43-profile table, from the catalogue) and
teaches ``inspect``, ``validate``, ``decode``, ``dequantize`` and ``audit`` to read onnx-light
inputs: an ``EncodedValueProto`` file, a ``TensorProto`` file or an ONNX model (every encoded
initializer, nested graphs included, or the one ``--name`` picks). The input kind is detected
from the bytes (``--kind`` forces one); Hurray inputs (``HRRY`` descriptors, ``HRRYFILE``
containers) go on to the Hurray handlers unchanged. ``audit`` without a folder audits the
bundled onnx-light corpus beside the Hurray one. (``hurray-decl fuzz --kind onnx-light`` is
:mod:`hurray_decl.cli.fuzz`'s.)

Exit codes: 0 valid or done, 1 invalid input (the rule code is printed), 2 usage error, 3 file
or environment error (an output that cannot be written, a decoder failing with something other
than a rule error).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any

from hurray_decl.cli.common import Style, UsageError, colour_verdicts
from hurray_decl.cli.corpus import RENDERERS, audit
from hurray_decl.cli.kinds import FORCED, Kind
from hurray_decl.errors import HurrayDeclError

__all__ = ["KIND_CHOICES", "audit_folder", "profile_table", "register"]

INVALID = 1
AUTO, HURRAY, STREAM = Kind.AUTO, Kind.HURRAY, Kind.STREAM
KIND_CHOICES = FORCED
"""``--kind``: detect from the bytes, an onnx-light kind, the Hurray handlers, or a Hurray stream
(:data:`hurray_decl.cli.kinds.FORCED`)."""
DECODER_FAILURES = (TypeError, ValueError, UnicodeDecodeError, OverflowError, KeyError, IndexError)
"""What a decoder bug surfaces as: an audit reports it as a crash verdict (elsewhere it is an
internal error, reported in one line by :func:`hurray_decl.cli.main`)."""


def _checked(args: argparse.Namespace) -> tuple[str, Any]:
    """(kind, parsed message) of a valid onnx-light input (the values ``--name`` picks), or the
    refusal with the offset ``inspect`` marks (:func:`hurray_decl.onnx_light.dump.check_input`)."""
    from hurray_decl.cli.detection import detect
    from hurray_decl.cli.inputs import window_data
    from hurray_decl.onnx_light.dump import check_input

    return check_input(window_data(args), kind=detect(args).kind, name=getattr(args, "name", None))


# --- commands ------------------------------------------------------------------------------------

def cmd_inspect(args: argparse.Namespace) -> int:
    from hurray_decl.cli.detection import detect
    from hurray_decl.cli.inputs import window_data
    from hurray_decl.cli.outputs import about
    from hurray_decl.dump.render import render
    from hurray_decl.onnx_light.dump import dump

    result = dump(bytes(window_data(args)), kind=detect(args).kind, name=args.name)
    result.about.update(about(args, detect(args).kind))
    if args.format == "html":
        from hurray_decl.cli.html import print_page

        return print_page(result, args)
    text = render(result, args.format)
    print(text if args.format == "json" else colour_verdicts(text, Style(sys.stdout)))
    return INVALID if result.error is not None else 0


def cmd_validate(args: argparse.Namespace) -> int:
    from hurray_decl.cli import outputs
    from hurray_decl.cli.detection import detect

    def check() -> str:
        from hurray_decl.onnx_light.inputs import items

        kind, message = _checked(args)
        count = len(items(message, kind)) if kind != Kind.TENSOR else 0
        return f"onnx-light {kind} ({count} encoded value{'s' * (count != 1)})" if kind == Kind.MODEL \
            else f"onnx-light {kind}"

    return outputs.report_verdict(args, detect(args).kind, check)


def plan_json(plan) -> dict[str, Any]:
    """A decoded plan as JSON-ready data: profile, runs (header and block parameters) and the extras."""
    names = [f.name for f in dataclass_fields(type(plan.runs[0].layout))] if plan.runs else []
    return {
        "format": plan.format.wire_name,
        "runs": [{"layout": dict(zip(names, run.layout.header())),
                  "blocks": [{"scale": b.scale, "zero_point": b.zero_point, "offset": b.offset,
                              "codebook": list(b.codebook)} for b in run.blocks]} for run in plan.runs],
        "matrix_shape": list(plan.matrix_shape),
        "permutation": list(plan.permutation),
        "transform_size": plan.transform_size,
        "forward": list(plan.forward),
        "inverse": list(plan.inverse),
        "outliers": list(plan.outliers),
    }


def cmd_decode(args: argparse.Namespace) -> int:
    from hurray_decl.cli import outputs

    try:
        kind, message = _checked(args)
        from hurray_decl.onnx_light import decode_plan
        from hurray_decl.onnx_light.inputs import items
        from hurray_decl.onnx_light.tensors import tensor_to_array
        from hurray_decl.onnx_light.wire import logical_shape

        if kind == Kind.TENSOR:
            values = tensor_to_array(message)
            out: dict[str, Any] = {"kind": kind, "name": message.name, "dtype": str(values.dtype),
                                   "shape": list(values.shape), "values": values.astype("float64").ravel().tolist()}
        else:
            decoded = []
            for item in items(message, kind, args.name):
                dtype, shape = logical_shape(item.value.logical_type, "value -> logical_type")
                decoded.append({"name": item.name, "path": item.path, "logical_dtype": dtype, "shape": list(shape),
                                "parameter_ref": item.value.parameter_ref or None,
                                "plan": plan_json(decode_plan(item.value, item.model))})
            out = {"kind": kind, "values": decoded}
    except HurrayDeclError as err:
        from hurray_decl.cli.detection import detect

        return outputs.report_error(args, detect(args).kind, err)
    print(json.dumps(out, indent=2))
    return 0


def cmd_dequantize(args: argparse.Namespace) -> int:
    """Refusals are HurrayDeclErrors: main() prints their rule (exit 1), no file having been created."""
    import ml_dtypes

    from hurray_decl.cli import outputs
    from hurray_decl.onnx_light.inputs import array_of, items
    from hurray_decl.onnx_light.tensors import tensor_to_array

    if args.buffers:
        raise UsageError("an onnx-light input carries its payload: give no buffer files")
    outputs.target(args.output)
    kind, message = _checked(args)  # the whole input's verdict (or the --name values'), before the output exists
    if kind == Kind.TENSOR:
        array = tensor_to_array(message)
    else:
        found = items(message, kind, args.name)
        if len(found) != 1:
            names = ", ".join(item.name or "(unnamed)" for item in found) or "none"
            raise UsageError(f"the model holds {len(found)} encoded values ({names}): pick one with --name")
        array = array_of(found[0])
    note = ""
    if array.dtype == ml_dtypes.bfloat16:  # .npy has no bfloat16: widen exactly
        array, note = array.astype("float32"), " (bfloat16 widened exactly to float32)"
    outputs.write_npy(args.output, array)
    print(f"wrote {array.dtype} {list(array.shape)} to {args.output}{note}")
    return 0


def audit_folder(folder: Path) -> dict[str, Any]:
    """Verdicts for every onnx-light file of ``folder``, compared with its manifest when there is one."""
    from hurray_decl.onnx_light.corpus import MANIFEST, read_manifest
    from hurray_decl.onnx_light.dump import check_input
    from hurray_decl.onnx_light.inputs import detect_kind

    expected = read_manifest(folder)
    report = []
    for path in sorted(p for p in folder.iterdir() if p.is_file() and p.name != MANIFEST):
        data = path.read_bytes()
        entry: dict[str, Any] = {"file": path.name, "verdict": "valid", "code": None, "offset": None, "message": ""}
        kind = expected.get(path.name, {}).get("kind") or detect_kind(data)
        entry["kind"] = kind
        try:
            check_input(data, kind=kind)
        except HurrayDeclError as err:
            entry.update(verdict="invalid", code=err.code, offset=err.offset, message=str(err))
        except DECODER_FAILURES as exc:
            entry.update(verdict="crash", code=type(exc).__name__, message=str(exc))
        if path.name in expected:
            entry["expected"] = expected[path.name].get("expect")
            entry["agrees"] = entry["expected"] == entry["code"]
        report.append(entry)
    counts = {"files": len(report), "valid": sum(e["verdict"] == "valid" for e in report)}
    counts["invalid"] = counts["files"] - counts["valid"]
    counts.update(missing=0, unchecked=0, unlisted=sum("expected" not in e for e in report) if expected else 0)
    counts["disagreements"] = sum(e.get("agrees") is False for e in report)
    return {"folder": str(folder), "kind": Kind.ONNX_LIGHT, "manifest": bool(expected), "summary": counts,
            "descriptors": report}


def _is_onnx_light_folder(folder: Path) -> bool:
    from hurray_decl.onnx_light.corpus import MANIFEST
    from hurray_decl.onnx_light.inputs import CONTAINER, HURRAY as HURRAY_KIND, detect_kind

    manifest = folder / MANIFEST
    if manifest.is_file():
        try:
            return "values" in json.loads(manifest.read_text(encoding="utf-8"))
        except (ValueError, TypeError):  # not a manifest of ours: the Hurray audit reports it
            return False
    files = [p for p in folder.iterdir() if p.is_file()]
    return bool(files) and all(detect_kind(p.read_bytes()[:4096]) not in (HURRAY_KIND, CONTAINER) for p in files)


def cmd_audit(args: argparse.Namespace, hurray) -> int:
    if args.folder:
        folder = Path(args.folder)
        if not folder.is_dir() or args.kind == HURRAY or (args.kind == AUTO and not _is_onnx_light_folder(folder)):
            return hurray(args)
        result = audit_folder(folder)
        if args.format not in RENDERERS:  # the pages
            from hurray_decl.cli.html import write_audit

            return write_audit(result, folder, args)
        print(RENDERERS[args.format](result, Style(sys.stdout)))
        return INVALID if result["summary"]["disagreements"] else 0
    # The default run: the bundled Hurray corpus, then the bundled onnx-light corpus.
    from hurray_decl.hurray.examples import bundled as hurray_corpus
    from hurray_decl.onnx_light.corpus import bundled

    results = [audit(hurray_corpus(), args), audit_folder(bundled())]
    if args.format not in RENDERERS:  # the pages of both corpora, one index
        from hurray_decl.cli.html import write_audit

        return write_audit(results[0], hurray_corpus(), args, more=[(results[1], bundled())])
    style = Style(sys.stdout)
    if args.format == "json":
        combined = dict(results[0], onnx_light=results[1])
        print(json.dumps(combined, indent=2))
    else:
        print("\n\n".join(RENDERERS[args.format](result, style) for result in results))
    return INVALID if any(r["summary"]["disagreements"] for r in results) else 0


def profile_table() -> list[dict[str, Any]]:
    """One row per profile, in enum order, from the catalogue (DIGEST.md § 2.3)."""
    from hurray_decl.onnx_light.profiles import PROFILES, QuantizationMethod

    rows = []
    for fmt, row in PROFILES.items():
        rows.append({
            "#": int(fmt), "profile": fmt.wire_name, "method": QuantizationMethod(row.method).name.lower(),
            "bits": row.bits, "signed": row.signed, "books": row.books, "entries": row.entries, "vector": row.vector,
            "base3": row.base3, "cast": row.cast_type, "zero_point": row.zero_point,
            "table": row.table or ("learned" if row.learned else ""), "transform": "required" if row.needs_transform
            else "", "layout": "portable" if fmt.portable else "ORT MatMulNBits",
        })
    return rows


def cmd_profiles(args: argparse.Namespace) -> int:
    rows = profile_table()
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return 0
    header = list(rows[0])
    cells = [[str(v) for v in row.values()] for row in rows]
    if args.format == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(c or " " for c in row) + " |" for row in cells]
    else:
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip(), "  ".join("-" * w for w in widths)]
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    print("\n".join(lines))
    return 0


WRAPPED: dict[str, Callable[[argparse.Namespace], int]] = {
    "inspect": cmd_inspect, "validate": cmd_validate, "decode": cmd_decode, "dequantize": cmd_dequantize,
}
"""The Hurray commands that also read onnx-light inputs, and their onnx-light handlers."""


def register(subparsers) -> None:
    """Add ``profiles`` and the onnx-light options and handlers of the commands in :data:`WRAPPED`
    (call it after the Hurray commands are added)."""
    profiles = subparsers.add_parser("profiles", help="print the 43 onnx-light quantization profiles",
                                     description="Print the onnx-light profile catalogue: one row per profile, "
                                                 "in enum order, with its block layout and defaults.")
    profiles.add_argument("--format", choices=("text", "markdown", "json"), default="text",
                          help="output format (default: text)")
    profiles.set_defaults(run=cmd_profiles)
    from hurray_decl.cli.detection import handles
    from hurray_decl.cli.kinds import ONNX_LIGHT

    for name in ("inspect", "validate", "decode", "dequantize", "audit"):
        parser = subparsers.choices.get(name)
        if parser is None:
            continue
        if name == "audit":
            parser.set_defaults(run=functools.partial(cmd_audit, hurray=parser.get_default("run")))
            continue
        handles(subparsers, name, dict.fromkeys(ONNX_LIGHT, WRAPPED[name]))
