"""The tensor hex dump checked row by row against tables written here, independently of the
package: a small reader below follows the field tables of DIGEST §§ 3 and 5 (offset, size, name
as the spec writes it) and knows nothing of the Construct declarations. Every conformance
descriptor and bundled example, and arbitrary valid descriptors from the public strategies, must
dump exactly those rows; every rule-labelled mutant carries the failing-field marker on the
field its error names, and on no other row. The dump is also traced while other threads parse,
and must come out as it does alone.
"""

from __future__ import annotations

import json
import math
import re
import struct
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hurray_decl import read_tensor_descriptor, write_tensor_descriptor
from hurray_decl.dump.rows import failing_row, marked
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray.dump import dump, render
from hurray_decl.hurray.quantization import decode_quantization
from hurray_decl.hurray.strategies import MUTANTS, tensor_descriptors
from tests.paths import DESCRIPTORS, REPO

VECTORS = sorted(DESCRIPTORS.glob("*.bin"))
EXAMPLES = sorted((REPO / "hurray_decl" / "hurray" / "examples").glob("*.bin"))
INPUTS = VECTORS + EXAMPLES
UNDECODED = "(undecoded)"
BEYOND = "(after descriptor_length)"

# Names of code values, as DIGEST § 5.4 / § 5.6 / § 2.2 tables give them (the dump's spelling).
NAMES: dict[str, dict[int, str]] = {
    "device_tag": {0x00: "CPU", 0x01: "CUDA"},
    "sync_mode": {0x00: "producer-synced", 0x01: "event", 0x02: "consumer-stream"},
    "memory_class": {0x00: "STANDARD", 0x01: "HOST_PINNED", 0x02: "UNIFIED", 0x03: "PEER"},
    "layout_tag": {0x01: "row-major", 0x02: "column-major", 0x03: "strided", 0x04: "tiled", 0x05: "Morton",
                   0x06: "COO", 0x07: "CSR", 0x08: "CSC", 0x09: "CSF", 0x0A: "block-paged",
                   0x0B: "composite head", 0x40: "Hilbert curve"},
    "scheme_tag": {0x01: "per-tensor affine", 0x02: "per-channel affine", 0x03: "per-block affine",
                   0x04: "NF4", 0x05: "MXFP"},
    "type_tag": {0x01: "float16", 0x03: "float32", 0x10: "int8", 0x48: "int4"},
}


class _Short(Exception):
    """The input ends inside a field."""


class SpecReader:
    """Reads a descriptor field by field from the spec's tables; records (path, offset, size, value)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.rows: list[tuple[str, int, int, Any]] = []

    def take(self, path: str, size: int) -> bytes:
        if self.pos + size > len(self.data):
            raise _Short
        raw = self.data[self.pos:self.pos + size]
        if size:
            self.rows.append((path, self.pos, size, raw))
        self.pos += size
        return raw

    def uint(self, path: str, size: int, signed: bool = False) -> int:
        value = int.from_bytes(self.take(path, size), "little", signed=signed)
        self._value(value)
        return value

    def real(self, path: str, size: int) -> float:
        value = struct.unpack("<f" if size == 4 else "<d", self.take(path, size))[0]
        self._value(value)
        return value

    def _value(self, value: Any) -> None:
        path, offset, size, _ = self.rows[-1]
        self.rows[-1] = (path, offset, size, value)

    def descriptor(self) -> None:
        self.take("magic", 4)
        self.uint("version_major", 1)
        self.uint("version_minor", 1)
        self.length = self.uint("descriptor_length", 4)
        flags = self.uint("flags", 4)
        self.uint("type_tag", 1)
        layout = self.uint("layout_tag", 1)
        rank = self.uint("rank", 4)
        for k in range(rank):
            self.uint(f"shape[{k}]", 8)
        self.uint("byte_offset", 8)
        self.layout(layout, rank, "layout")
        for i in range(self.uint("buffer_count", 1)):
            b = f"buffers[{i}]"
            self.uint(f"{b}.byte_size", 8)
            self.uint(f"{b}.alignment", 4)
            self.uint(f"{b}.device_tag", 1)
            self.uint(f"{b}.sync_mode", 1)
            self.uint(f"{b}.memory_class", 1)
            self.take(f"{b}._reserved", 1)
        if flags & 1:
            self.quantization(self.uint("quantization_length", 4))
        if flags & 2:
            for name in ("parent_shape", "shard_offset"):
                for k in range(rank):
                    self.uint(f"shard.{name}[{k}]", 8)
        if flags & 8:  # statistics come before the extension type on the wire (§ 5.1)
            s = "statistics"
            self.uint(f"{s}.computed_mask", 4)
            self.take(f"{s}._reserved", 4)
            self.uint(f"{s}.nnz", 8)
            for name in ("sparsity_ratio", "value_min", "value_max", "value_abs_max", "value_mean", "value_stddev"):
                self.real(f"{s}.{name}", 8)
            for name in ("nm_n", "nm_m", "has_nan", "has_inf"):
                self.uint(f"{s}.{name}", 1)
            self.take(f"{s}._reserved2", 4)
        if flags & 4:
            e = "extension_type"
            self.uint(f"{e}.bit_width", 4)
            for name in ("packing_factor", "is_float", "is_signed", "sign_bits", "exponent_bits", "mantissa_bits"):
                self.uint(f"{e}.{name}", 1)
            self.take(f"{e}._reserved", 2)
            self.uint(f"{e}.exponent_bias", 4)
            self.uint(f"{e}.has_nan", 1)
            self.uint(f"{e}.has_inf", 1)
            self.take(f"{e}._reserved2", 2)
        if flags & 16:
            self.uint("composite_member.member_role", 1)
            self.take("composite_member._reserved", 15)

    def layout(self, tag: int, rank: int, at: str) -> None:
        def each(name: str, size: int, signed: bool = False) -> None:
            for k in range(rank):
                self.uint(f"{at}.{name}[{k}]", size, signed)

        if tag == 0x03:
            each("strides", 8, signed=True)
        elif tag == 0x04:
            each("tile_shape", 8)
            outer = self.uint(f"{at}.outer_layout", 1)
            inner = self.uint(f"{at}.inner_layout", 1)
            self.take(f"{at}._reserved", 2)
            if outer == 0x03:
                each("outer_strides", 8, signed=True)
            if inner == 0x03:
                each("inner_strides", 8, signed=True)
            if inner == 0x04:
                self.layout(0x04, rank, f"{at}.nested")
        elif tag == 0x05:
            each("morton_bits", 4)
        elif tag in (0x06, 0x07, 0x08, 0x09):
            self.uint(f"{at}.nnz", 8)
            if tag == 0x06:
                self.uint(f"{at}.is_sorted", 1)
            if tag == 0x09:
                each("mode_order", 4)
            self.take(f"{at}._reserved", 7 if tag == 0x06 else 8)
        elif tag == 0x0A:
            for name, size in (("page_size", 4), ("num_pages", 8), ("paged_axis", 4), ("num_seqs", 4),
                               ("kv_role", 1), ("layer_index", 4), ("block_table_index_type", 1)):
                self.uint(f"{at}.{name}", size)
            self.take(f"{at}._reserved", 6)
        elif tag == 0x0B:
            self.uint(f"{at}.composition_rule", 1)
            self.uint(f"{at}.combine_op", 1)
            self.take(f"{at}._reserved", 2)
            self.uint(f"{at}.member_count", 4)
        elif tag == 0x40:
            self.uint(f"{at}.hilbert_order", 4)
            self.uint(f"{at}.hilbert_rank", 4)
        elif 0xF0 <= tag <= 0xFE:
            self.uint(f"{at}.extension_layout_id", 8)
            self.take(f"{at}.extension_data", self.uint(f"{at}.extension_data_length", 4))

    def quantization(self, length: int) -> None:
        start = self.pos
        q = "quantization"
        scheme = self.uint(f"{q}.scheme_tag", 1)
        self.uint(f"{q}.scheme_version", 1)
        self.uint(f"{q}.flags", 2)
        if scheme == 0x01:
            self.real(f"{q}.scale", 4)
            self.uint(f"{q}.zero_point", 4, signed=True)
            self.take(f"{q}._reserved", 4)
        else:
            self.uint(f"{q}.axis", 4)
            if scheme != 0x02:
                self.uint(f"{q}.block_size", 4)
            self.uint(f"{q}.scale_buffer_index", 4)
            if scheme in (0x02, 0x03):
                self.uint(f"{q}.zero_point_buffer_index", 4)
                self.uint(f"{q}.scale_type_tag", 1)
                self.take(f"{q}._reserved", 3)
        self.take(f"{q}.padding", length - (self.pos - start))


def spec_rows(data: bytes) -> tuple[list[tuple[str, int, int, Any]], int]:
    """The spec's rows for ``data`` (as many as fit), and where the descriptor ends."""
    reader = SpecReader(data)
    try:
        reader.descriptor()
    except _Short:
        pass
    return reader.rows, getattr(reader, "length", len(data))


def raw_rows(data: bytes, start: int, end: int, label: str) -> list[tuple[str, int, int, str]]:
    """Bytes no field covers: rows of at most 16, with no value."""
    return [(label, p, min(16, end - p), "") for p in range(start, end, 16)]


def same_value(field: str, expected: Any, shown: str) -> bool:
    """Whether the dump's text ``shown`` states ``expected``."""
    if isinstance(expected, str):
        return shown == expected
    if isinstance(expected, bytes):
        return shown == (expected.hex(" ").upper() or "(empty)")
    if isinstance(expected, float):
        return (math.isnan(expected) and shown == "nan") or (float(shown) == expected and shown == repr(expected)) \
            or (math.isinf(expected) and shown == str(expected))
    name = re.sub(r"\[\d+\]", "", field).rsplit(".", 1)[-1]
    if name.endswith("_buffer_index") and expected == 0xFFFFFFFF:
        return shown == "none (0xFFFFFFFF)"
    if name in NAMES and expected in NAMES[name]:
        return shown == f"0x{expected:02X} ({NAMES[name][expected]})"
    head = shown.split(" ", 1)[0]
    return int(head, 0) == expected and (head.startswith("0x") or head == str(expected))


def assert_rows(data: bytes, expected: list[tuple[str, int, int, Any]]) -> None:
    rows = dump(data).rows
    assert len(rows) == len(expected), ([r.field for r in rows], [e[0] for e in expected])
    for row, (path, offset, size, value) in zip(rows, expected):
        assert (row.field, row.offset, row.size) == (path, offset, size), (row, path, offset, size)
        assert row.hex == data[offset:offset + size].hex(" ").upper()
        assert same_value(path, value, row.value), (row, value)


def valid_expected(data: bytes) -> list[tuple[str, int, int, Any]]:
    rows, length = spec_rows(data)
    end = rows[-1][1] + rows[-1][2]
    return rows + raw_rows(data, end, min(length, len(data)), UNDECODED) + raw_rows(data, length, len(data), BEYOND)


@pytest.mark.parametrize("path", INPUTS, ids=[p.name for p in INPUTS])
def test_every_vector_and_example_dumps_the_spec_rows(path):
    data = path.read_bytes()
    d = dump(data)
    if d.error is None:
        assert_rows(data, valid_expected(data))
        return
    # Invalid: the spec's rows run to the failing field (or the end of the record that holds it,
    # a buffer handle or the quantization payload, which is read whole); the rest is undecoded.
    rows, _ = spec_rows(data)
    failing = [i for i, (_, o, n, _) in enumerate(rows) if o <= d.error.offset < o + n]
    record = lambda i: rows[i][0].rsplit(".", 1)[0] if "." in rows[i][0] else rows[i][0]  # noqa: E731
    if failing:
        first = failing[0]
        ends = {first}
        last = first
        while last + 1 < len(rows) and record(last + 1) == record(first):
            last += 1
        ends.add(last)
    else:  # the input ends inside a field: every whole field is named, the marker on the last
        ends = {len(rows) - 1}
    candidates = [rows[:e + 1] + raw_rows(data, rows[e][1] + rows[e][2], len(data), UNDECODED) for e in sorted(ends)]
    ours = [(r.field, r.offset, r.size) for r in d.rows]
    matching = [c for c in candidates if [(p, o, n) for p, o, n, _ in c] == ours]
    assert matching, (ours, [[(p, o, n) for p, o, n, _ in c] for c in candidates])
    assert_rows(data, matching[0])
    marked = [d.rows[i].field for i in marked_rows(d)]
    assert marked == [rows[failing[0]][0] if failing else rows[-1][0]]


def marked_rows(d) -> list[int]:
    """Indexes of the rows the renderers mark as failing (the streamed marker agrees with
    ``failing_row``), checked to be what the text shows."""
    flags = [failing for _, failing in marked(d)]
    picked = [i for i, failing in enumerate(flags) if failing]
    assert picked == ([] if failing_row(d.rows, d.error.offset) is None else [failing_row(d.rows, d.error.offset)])
    assert (f"<-- {d.error.code}" in render(d, "text")) == bool(picked)
    return picked


@settings(max_examples=60, suppress_health_check=list(HealthCheck), deadline=None)
@given(tensor_descriptors())
def test_valid_descriptors_from_the_strategies_dump_the_spec_rows(d):
    data = write_tensor_descriptor(d)
    assert_rows(data, valid_expected(data))


def _error_field(err: HurrayDeclError) -> str:
    """The error's path (``descriptor -> buffers -> 0 -> sync_mode``) as a dump field name."""
    out = ""
    for part in err.path.split(" -> ")[1:]:
        part = re.sub(r"^reserved(\d*)$", r"_reserved\1", part)
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out


MUTANT_RULES = sorted(MUTANTS)


@pytest.mark.parametrize("rule", MUTANT_RULES)
@settings(max_examples=2, suppress_health_check=list(HealthCheck), deadline=None)
@given(data=st.data())
def test_mutants_mark_the_failing_field_and_nothing_else(rule, data):
    raw = data.draw(MUTANTS[rule](), label="mutant")
    d = dump(raw)
    assert d.error is not None and d.error.code == rule
    marked = marked_rows(d)
    assert len(marked) == 1, render(d, "text")
    row = d.rows[marked[0]]
    covers = row.offset <= d.error.offset < row.offset + row.size
    named = _error_field(d.error)
    if covers:
        # The marked row is the field the error names, or a field inside the section it names
        # (an error inside nested tiling names the level's field, not how deep it sits).
        nested = re.sub(r"(\.nested)+", ".nested", row.field)
        assert any(f == named or f.startswith((named + ".", named + "[")) for f in (row.field, nested)), \
            (row, d.error.path, d.error.offset)
        assert row.field != UNDECODED
        others = [r for i, r in enumerate(d.rows) if i != marked[0] and r.offset <= d.error.offset < r.offset + r.size]
        assert not others
    else:  # a field or payload cut short: the marker sits on the last row before the error's byte
        assert row.offset + row.size == d.error.offset, (row, d.error)
        assert not [r for r in d.rows if r.offset <= d.error.offset < r.offset + r.size and r.field != UNDECODED]
        assert all(r.offset + r.size > d.error.offset for r in d.rows[marked[0] + 1:])


def _payload(data: bytes) -> bytes | None:
    rows, _ = spec_rows(data)
    quantization = [(o, n) for p, o, n, _ in rows if p.startswith("quantization.")]
    if not quantization:
        return None
    return data[quantization[0][0]:quantization[-1][0] + quantization[-1][1]]


def test_dumps_under_parsing_threads_match_a_single_threaded_run():
    inputs = [p.read_bytes() for p in INPUTS]
    payloads = [q for q in map(_payload, inputs) if q is not None]
    expected = [json.dumps(dump(x, permissive=p).to_json()) for x in inputs for p in (False, True)]
    stop = threading.Event()
    results: list[list[str]] = []
    failures: list[BaseException] = []

    def dumper() -> None:
        try:
            for _ in range(3):
                results.append([json.dumps(dump(x, permissive=p).to_json()) for x in inputs for p in (False, True)])
        except BaseException as exc:  # reported by the test below
            failures.append(exc)

    def parser() -> None:
        try:
            while not stop.is_set():
                for x in inputs:
                    try:
                        read_tensor_descriptor(x)
                    except HurrayDeclError:
                        pass
                for q in payloads:
                    try:
                        decode_quantization(q)
                    except HurrayDeclError:
                        pass
        except BaseException as exc:  # reported by the test below
            failures.append(exc)

    parsers = [threading.Thread(target=parser) for _ in range(8)]
    dumpers = [threading.Thread(target=dumper) for _ in range(8)]
    for t in parsers + dumpers:
        t.start()
    for t in dumpers:
        t.join()
    stop.set()
    for t in parsers:
        t.join()
    assert not failures, failures
    assert len(results) == 24
    wrong = sum(got != want for run in results for got, want in zip(run, expected))
    assert wrong == 0, f"{wrong} of {24 * len(expected)} dumps differ from the single-threaded run"


def test_tracing_leaves_the_declaration_and_construct_untouched():
    import construct as cs

    from hurray_decl.hurray.tensor.header import HEADER

    method = cs.Construct.__dict__["_parsereport"]
    dump(INPUTS[0].read_bytes())
    assert cs.Construct.__dict__["_parsereport"] is method
    assert "_parsereport" not in vars(HEADER) and HEADER.parse(INPUTS[0].read_bytes()[:HEADER.sizeof()]).rank >= 0
