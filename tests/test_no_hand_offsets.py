"""No absolute descriptor offsets written by hand, in the package or the tests (issue #11).

Where a field of a tensor or quantization descriptor (or of a container) sits is the
declaration's to say: code asks it (``hurray_decl.hurray.tensor.fields``: ``with_field(data,
"buffers.0.byte_size", v)``; tests: ``tests/hurray/tensor_support.py`` ``at()``,
``patch_field()``; ``field_positions``, ``trace_tensor_descriptor``, ``field_offsets`` of a
section's Struct; a container's ``Patch.header()``, ``kv_entries()``, ``descriptor_field()``).
This test greps every
``.py`` file under ``hurray_decl/`` and ``tests/`` for the ways an offset gets written out
instead, and fails on any line not in the short allow-list below, each entry with its reason.

Not scanned: the ``onnx_light`` folders (another format: protobuf values, no Hurray descriptor),
the copied conformance corpus (``tests/conformance/``) and this file. Offsets into buffer
*contents* (element bytes) are not descriptor offsets; the one test file made of them is allowed
by name.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.paths import REPO, suite_sources

_HEADER_BOUNDS = r"(?:6|10|14|20|36|44|45|61)"  # ends of descriptor_length, flags, type_tag, the header ...

PATTERNS: dict[str, re.Pattern[str]] = {
    # patch(data, 14, ...), _patch(data, 6, ...), patch(data, len(data) - 16, ...)
    "byte patch at a number": re.compile(r"\b_?patch\(\s*[\w.\[\]]+\s*,\s*(?:\d|len\()"),
    # raises_rule(..., offset=6), RuleViolation(..., offset=10): an expected or reported offset
    "offset given as a number": re.compile(r"(?<![\w.])offset=\s*\d"),
    # 20 + 8 * rank + 8, layout_start(2), HEADER_LENGTH + 8 * k, 4 + 1 + 1 + 4
    "header widths summed": re.compile(
        r"\b20 \+ 8\b|\+ 8 \* (?:\w+\.)?rank\b|\bHEADER_LENGTH \+ 8\b|\blayout_start\b|\b4 \+ 1 \+ 1 \+ 4\b"),
    # a container: Patch.put(28, ...), p.u(12, 4), kv_offset + 4 (the count's width)
    "container field at a number": re.compile(r"\.put\(\s*\d|\bp\.u\(\s*\d|\b(?:kv|index)_offset \+ [248]\b"),
    # data[6:10], data[:6] + ... + data[10:], data[14], BASE[44]
    "header bytes sliced": re.compile(
        rf"(?<!names)\[\s*{_HEADER_BOUNDS}\s*:|(?<!names)\[[^\[\]]*:\s*{_HEADER_BOUNDS}\s*\]"
        r"|\b(?:data|raw|out|body|base|BASE|view|preamble|grown|HEAD\w*)\[\s*(?:4|5|10|14|15|16|44)\s*\]"),
}

# (file, pattern, a substring of the line or None for every line of that file, reason)
ALLOWED: list[tuple[str, str, str | None, str]] = [
    ("tests/hurray/test_tensor_data.py", "offset given as a number", None,
     "offsets into buffer contents (validate_buffers), element by element: no descriptor bytes"),
    ("tests/hurray/test_tensor_buffers.py", "offset given as a number", 'raises_rule("HQ-PC-10", offset=12 + 4)',
     "offset into the shared scale/zero-point buffer's contents, not the descriptor"),
    ("tests/hurray/test_tensor_buffers.py", "offset given as a number", 'raises_rule("HQ-PC-09", offset=8)',
     "offset into the scale buffer's contents, not the descriptor"),
    ("tests/html/test_html_dump.py", "offset given as a number", 'HurrayDeclError("HQ-PB-03"',
     "a made-up error for an HTML escaping test; no descriptor is read"),
    ("tests/hurray/test_descriptor_errors.py", "offset given as a number", 'path=path, offset=3)',
     "a made-up error's own offset, which locate must keep; no descriptor field is meant"),
    ("tests/hurray/test_tensor_object.py", "header bytes sliced", None,
     "windows of a tensor's values (NumPy slices of the logical array), not descriptor bytes"),
    ("hurray_decl/hurray/container/reader.py", "offset given as a number", 'offset=0, actual=f"{size} bytes"',
     "a file too short to hold any field is refused at its first byte, which no declaration names"),
    ("hurray_decl/convert/gguf_file.py", "offset given as a number", 'path="gguf -> magic", offset=0',
     "a GGUF file's magic, at its first byte: no Hurray descriptor is read"),
    ("hurray_decl/convert/metadata.py", "header bytes sliced", "[6:-1]",
     'the element type inside a GGUF type name "ARRAY[...]" (a string, not bytes)'),
    ("hurray_decl/convert/model_quantize.py", "header bytes sliced", "tensors[:20]", "the first 20 names of a list"),
    ("tests/convert/run_gguf_mutants.py", "header bytes sliced", "failed[:20]", "the first 20 failures of a list"),
    ("tests/hurray/test_fuzz_harness.py", "header bytes sliced", "inputs[:20]", "the first 20 inputs of a list"),
    ("tests/hurray/test_quantize_parts.py", "header bytes sliced", "[:6]!r", "the first 6 bytes of two outputs shown"),
    ("tests/hurray/test_container_scale.py", "container field at a number", "kv_offset + 4",
     "the first KV entry follows the section's 4-byte count (the test checks the reader's recorded positions)"),
    ("tests/test_cli_harness.py", "header bytes sliced", "header[6:10] = (0xFFFFFFFF)",
     "a hostile command line's input: descriptor_length claimed as 4 GiB in a hand-made header"),
    ("hurray_decl/cli/diff.py", "offset given as a number", "offset=0, length=None",
     "a side's window: the whole input (--offset's and --length's defaults), not a field's position"),
    ("hurray_decl/cli/detection.py", "offset given as a number", "resolved.update(offset=0, length=None)",
     "a spent window: the handler reads the bytes handed on from their start"),
    ("hurray_decl/hurray/entries.py", "offset given as a number", "offset=8 * ",
     "entries of a sparse tensor's 8-byte index buffers (their contents), not descriptor bytes"),
    ("tests/convert/test_gguf_file.py", "header bytes sliced", "kv[key][:10]", "the first 10 values of a KV array"),
    ("tests/convert/test_gguf_types.py", "header bytes sliced", 'blocks["m"][1::6]',
     "every sixth GGUF block's minimum (a structured NumPy array of blocks)"),
    ("tests/hurray/test_stream.py", "offset given as a number", 'raises_rule("HS-FRM-09", offset=109 + at',
     "a byte of a frame's buffer, after its descriptor, where the buffer-content rule refuses it"),
    ("tests/hurray/test_windows_without_dense.py", "header bytes sliced", None,
     "windows of a tensor's values (NumPy slices of the logical array), not descriptor bytes"),
    ("tests/hurray/test_windows_without_dense.py", "offset given as a number", None,
     "offsets of values in .npy-like output files (np.memmap, np.fromfile), not descriptor bytes"),
    ("tests/test_cli_kinds.py", "offset given as a number", "offset=0, length=None",
     "a command line's window defaults in a hand-made Namespace"),
    ("tests/test_cli_verdicts.py", "header bytes sliced", "disagreements[:20]", "the first 20 findings of a list"),
]


def _scanned() -> list[Path]:
    files = sorted((REPO / "hurray_decl").rglob("*.py")) + suite_sources()
    return [f for f in files if "onnx_light" not in f.parts and f != Path(__file__).resolve()]


def hand_offsets(files: list[Path], root: Path = REPO) -> list[tuple[str, int, str, str]]:
    """(file, line number, pattern name, line) of every line writing an offset out."""
    found = []
    for path in files:
        name = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for pattern, regex in PATTERNS.items():
                if regex.search(line):
                    found.append((name, number, pattern, line.strip()))
    return found


def _allowed(hit: tuple[str, int, str, str]) -> tuple[str, str, str | None, str] | None:
    name, _, pattern, line = hit
    for entry in ALLOWED:
        if entry[0] == name and entry[1] == pattern and (entry[2] is None or entry[2] in line):
            return entry
    return None


def test_no_absolute_descriptor_offsets_by_hand():
    hits = hand_offsets(_scanned())
    new = [f"{name}:{number}: {pattern}: {line}" for name, number, pattern, line in hits if _allowed(
        (name, number, pattern, line)) is None]
    assert not new, "ask the declaration where a field is (see this test's docstring):\n" + "\n".join(new)


def test_every_allowance_is_still_needed():
    """An entry that matches nothing is stale (its file was fixed): remove it."""
    hits = hand_offsets(_scanned())
    used = {id(_allowed(hit)) for hit in hits}
    stale = [entry[:3] for entry in ALLOWED if id(entry) not in used]
    assert not stale, f"stale allow-list entries: {stale}"


@pytest.mark.parametrize("line, pattern", [
    ("    read_tensor_descriptor(patch(BASE, 14, u8(0x47)))", "byte patch at a number"),
    ("    return _patch(data, 6, _u32(len(data)))", "byte patch at a number"),
    ("    read_tensor_descriptor(patch(data, len(data) - 16, u8(2)))", "byte patch at a number"),
    ('    with raises_rule("HT-HDR-09", offset=6):', "offset given as a number"),
    ('    raise RuleViolation("HT-LAY-76", "x", path="descriptor -> flags", offset=10)', "offset given as a number"),
    ("    return 20 + 8 * rank + 8", "header widths summed"),
    ("    start = layout_start(2)", "header widths summed"),
    ('    r.positions[f"descriptor -> shape -> {k}"] = HEADER_LENGTH + 8 * k', "header widths summed"),
    ("PREAMBLE_LENGTH = 4 + 1 + 1 + 4", "header widths summed"),
    ("    length = int.from_bytes(data[6:10], 'little')", "header bytes sliced"),
    ("    return out[:6] + u32(len(out)) + out[10:]", "header bytes sliced"),
    ("    data[5] = 1", "header bytes sliced"),
    ("    assert BASE[44] == 1", "header bytes sliced"),
    ("    data = bytes(p.put(28, 7, 8).data)", "container field at a number"),
    ("    p.put(p.header(\"file_flags\"), p.u(12, 4) | 1, 4)", "container field at a number"),
    ("    position = p.c.trailer.kv_offset + 4", "container field at a number"),
])
def test_each_pattern_catches_what_it_names(line, pattern):
    assert PATTERNS[pattern].search(line)


@pytest.mark.parametrize("line", [
    '    with raises_rule("HT-HDR-09", offset=at(BASE, "descriptor_length")):',
    '    data = patch_field(BASE, "type_tag", 0x47)',
    "    roundtrip(dense(byte_offset=16, sizes=(64,)))",
    '    shown = ", ".join(names[:20])',
    "    first_descriptor_offset=128",
    '    p.put(p.header("tensor_count_hint"), 7, 8)',
    "    assert c.trailer.index_offset == c.trailer.kv_offset + c.trailer.kv_length",
])
def test_asking_the_declaration_is_not_flagged(line):
    assert not any(regex.search(line) for regex in PATTERNS.values())


def test_a_reintroduced_hand_patch_is_caught(tmp_path):
    """The scan itself, over a copy of a rewritten test with one hand-written patch put back."""
    original = REPO / "tests" / "hurray" / "test_tensor_framing.py"
    assert hand_offsets([original]) == []
    broken = tmp_path / "test_tensor_framing.py"
    broken.write_text(original.read_text(encoding="utf-8")
                      + "\n\ndef test_again():\n    read_tensor_descriptor(patch(BASE, 14, u8(0x47)))\n",
                      encoding="utf-8")
    assert [hit[2:] for hit in hand_offsets([broken], tmp_path)] == [
        ("byte patch at a number", "read_tensor_descriptor(patch(BASE, 14, u8(0x47)))")]
