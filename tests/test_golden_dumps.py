"""Golden dumps: the text, Markdown and JSON dump of one input of each kind (tensor descriptor,
quantization payload, container, onnx-light value), valid and invalid, compared byte for byte
with the files in ``tests/golden/``.

A change to any row, value column, label, verdict line or number of the dumps fails here. When the
change is intended, regenerate the files (an explicit opt-in, never automatic) and review the diff::

    HURRAY_DECL_REGENERATE_GOLDEN=1 python -m pytest -q tests/test_golden_dumps.py
    git diff tests/golden/

A regenerating run writes the files and skips every case, so it never passes as a check.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from hurray_decl.dump.render import render
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray import dump as hurray_dump
from hurray_decl.hurray.container import validate_container
from hurray_decl.hurray.container.dump import container_dump
from hurray_decl.hurray.tensor.fields import with_field
from hurray_decl.onnx_light import dump as onnx_light_dump
from hurray_decl.onnx_light.corpus import bundled
from tests.hurray.tensor_support import CONFORMANCE, vector

GOLDEN = Path(__file__).resolve().parent / "golden"
REGENERATE = os.environ.get("HURRAY_DECL_REGENERATE_GOLDEN") == "1"
FORMATS = {"text": "txt", "markdown": "md", "json": "json"}

PER_CHANNEL = bytes.fromhex("0201000000000000010000000200000003000000")
"""The worked example of the per-channel affine spec text: a 20-byte payload."""


Case = Callable[[], tuple[bytes, Callable[[bytes, str], str]]]
"""A case: its input bytes and how to dump them in a format."""


def _descriptor(name: str, *, permissive: bool = False) -> Case:
    return lambda: (vector(name), lambda data, fmt: hurray_dump.hexdump(data, format=fmt, permissive=permissive))


def _tensor(build: Callable[[], bytes], permissive: bool = False) -> Case:
    return lambda: (build(), lambda data, fmt: hurray_dump.hexdump(data, format=fmt, permissive=permissive))


def _payload(data: bytes, permissive: bool = False) -> Case:
    return lambda: (data, lambda d, fmt: hurray_dump.hexdump(d, kind="quantization", format=fmt,
                                                            permissive=permissive))


def _container(name: str) -> Case:
    return lambda: ((CONFORMANCE / "files" / name).read_bytes(), lambda d, fmt: render(container_dump(d), fmt))


def _onnx_light(name: str) -> Case:
    return lambda: ((bundled() / name).read_bytes(), lambda d, fmt: onnx_light_dump.hexdump(d, format=fmt))


CASES = {
    # tensor descriptors
    "descriptor-quantized": _descriptor("quant_per_block_int4_128x128.bin"),
    "descriptor-sharded-with-bytes-after": _tensor(lambda: vector("sharded_f32_8x4.bin") + b"\xAA\xBB\xCC"),
    "descriptor-unassigned-type-permissive": _tensor(
        lambda: with_field(vector("row_major_f32_3x4.bin"), "type_tag", 0x05), permissive=True),
    "descriptor-invalid-one-byte-short": _tensor(lambda: vector("quant_per_block_int4_128x128.bin")[:-1]),
    "descriptor-invalid-length-past-input": _tensor(
        lambda: with_field(vector("row_major_f32_3x4.bin"), "descriptor_length", 62)),
    "descriptor-invalid-bytes-after-sections": _tensor(
        lambda: with_field(vector("row_major_f32_3x4.bin") + b"\x00", "descriptor_length", 62)),
    "descriptor-invalid-reserved-flag": _tensor(
        lambda: with_field(vector("row_major_f32_3x4.bin"), "flags", 0x8000_0000)),
    # bare quantization payloads
    "payload-per-channel": _payload(PER_CHANNEL),
    "payload-with-writer-padding": _payload(PER_CHANNEL + bytes(4)),
    "payload-opaque-permissive": _payload(bytes([0xF0, 0x01, 0x34, 0x12, 0x09, 0x08]), permissive=True),
    "payload-invalid-reserved-byte": _payload(PER_CHANNEL[:-1] + b"\x01"),
    # containers
    "container-basic": _container("basic.hrry"),
    "container-invalid-data-offset": _container("i09-data-offset-off-by-8.hrry"),
    # onnx-light values
    "onnx-light-ort-int4": _onnx_light("valid_ort_matmulnbits_int4_implicit.pb"),
    "onnx-light-invalid-OL-ORT-28": _onnx_light("invalid_OL-ORT-28.pb"),
}


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("case", list(CASES))
def test_dump_matches_its_golden_file(case: str, fmt: str) -> None:
    data, dump = CASES[case]()
    text = dump(data, fmt)
    path = GOLDEN / f"{case}.{FORMATS[fmt]}"
    if REGENERATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        pytest.skip(f"regenerated {path.name}")
    assert path.is_file(), f"no golden file {path.name}: regenerate (see this module's docstring)"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{case} ({fmt}) differs from tests/golden/{path.name}"


def test_container_refusals_match_their_golden_file() -> None:
    """Each invalid shared container's refusal, as a user reads it: code, path, offset, message,
    actual and expected, one line per file."""
    lines = []
    for path in sorted((CONFORMANCE / "files").glob("i*.hrry")):
        try:
            validate_container(path.read_bytes())
        except HurrayDeclError as err:
            lines.append(f"{path.name}: {err}")
        else:
            lines.append(f"{path.name}: valid")
    text = "\n".join(lines) + "\n"
    golden = GOLDEN / "container-refusals.txt"
    if REGENERATE:
        golden.write_text(text, encoding="utf-8", newline="\n")
        pytest.skip(f"regenerated {golden.name}")
    assert text == golden.read_text(encoding="utf-8")


def test_every_golden_file_belongs_to_a_case() -> None:
    names = {f"{case}.{ext}" for case in CASES for ext in FORMATS.values()} | {"container-refusals.txt"}
    assert sorted(p.name for p in GOLDEN.iterdir()) == sorted(names)


def test_the_cases_cover_each_kind_valid_and_invalid() -> None:
    kinds = {"descriptor", "payload", "container", "onnx-light"}
    for kind in kinds:
        assert any(c.startswith(kind) and "invalid" not in c for c in CASES), kind
        assert any(c.startswith(kind) and "invalid" in c for c in CASES), kind
