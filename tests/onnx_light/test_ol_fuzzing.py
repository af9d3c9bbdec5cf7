"""The onnx-light fuzzing kit: strategies, rule-labelled mutants, the external-reader harness and
the atheris target's smoke run.

``OL_MUTANTS_PER_RULE`` (default 20) sets how many seeded mutants per reader rule are checked;
the long run uses 200.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import replace
from types import SimpleNamespace

import pytest
from hypothesis import given, settings

from hurray_decl import cli
from hurray_decl.cli.fuzz import draw_onnx_light_cases as draw_cases
from hurray_decl.hurray.fuzz import ACCEPT, REJECT, VALID, fuzz
from hurray_decl.onnx_light import dequantize_value
from hurray_decl.onnx_light.dump import dump
from hurray_decl.onnx_light.inputs import MODEL, check, detect_kind, items, parse
from hurray_decl.onnx_light.mutants import EXCLUDED, MUTANTS, RandomSource
from hurray_decl.onnx_light.strategies import compact_models, encoded_values, mutants, ort_values, valid_inputs
from hurray_decl.rules import all_rules
from tests.helpers import fresh_process, raises_rule

PER_RULE = int(os.environ.get("OL_MUTANTS_PER_RULE", "20"))
READER_RULES = sorted(r.id for r in all_rules().values() if r.id.startswith("OL-") and r.role == "reader")
OUR_READER = f"{shlex.quote(sys.executable)} -m hurray_decl.cli validate {{file}}"


def test_every_reader_rule_has_a_mutant_or_an_exclusion():
    assert set(MUTANTS) | set(EXCLUDED) == set(READER_RULES), (
        "without a mutant or an exclusion: " + ", ".join(sorted(set(READER_RULES) - set(MUTANTS) - set(EXCLUDED))))
    assert not set(MUTANTS) & set(EXCLUDED)
    assert all(len(reason) > 30 for reason in EXCLUDED.values())
    assert set(MUTANTS) <= set(all_rules())


@pytest.mark.parametrize("rule", sorted(MUTANTS))
def test_each_mutant_is_refused_with_exactly_its_code(rule):
    for seed in range(PER_RULE):
        case = MUTANTS[rule].build(RandomSource(seed))
        assert case.rule == rule and detect_kind(case.data) == case.kind
        with raises_rule(rule):
            check(parse(case.data, case.kind), case.kind)


@settings(max_examples=60)
@given(mutants())
def test_drawn_mutants_are_refused_and_their_field_is_marked(case):
    with raises_rule(case.rule):
        check(parse(case.data, case.kind), case.kind)
    result = dump(case.data, kind=case.kind)
    assert result.error is not None and result.error.code == case.rule
    row = next(r for r in result.rows if r.offset <= result.error.offset < r.offset + r.size)
    assert row.field.startswith(case.field), (row.field, case.field)


@settings(max_examples=40)
@given(encoded_values())
def test_drawn_values_of_every_profile_decode(value):
    decoded = dequantize_value(value)
    assert decoded.shape == tuple(d.dim_value for d in value.logical_type.tensor_type.shape.dim)
    assert dump(value.SerializeToString()).error is None


@settings(max_examples=20)
@given(ort_values())
def test_drawn_ort_values_decode(value):
    assert dump(value.SerializeToString()).error is None
    assert dequantize_value(value).ndim == 2


@settings(max_examples=15)
@given(compact_models())
def test_drawn_compact_models_are_valid(model):
    check(model, MODEL)
    (item,) = [i for i in items(model, MODEL) if i.value.HasField("parameter_ref")]
    assert dequantize_value(item.value, model).size >= 1


@settings(max_examples=30)
@given(valid_inputs())
def test_drawn_inputs_are_valid_and_detected(case):
    assert detect_kind(case.data) == case.kind
    check(parse(case.data, case.kind), case.kind)


# --- the external-reader harness ------------------------------------------------------------------

def test_cases_are_reproducible_and_spread_over_the_rules():
    first = draw_cases(60, seed=5)
    assert first == draw_cases(60, seed=5)
    assert sum(c.rule == VALID for c in first) == 15
    assert all((c.expected == ACCEPT) == (c.rule == VALID) for c in first)
    assert len({c.rule for c in first if c.rule != VALID}) == min(45, len(MUTANTS))
    only = draw_cases(4, seed=1, rules=["OL-WIRE-30"])
    assert {(c.rule, c.expected) for c in only} == {("OL-WIRE-30", REJECT)}
    with pytest.raises(ValueError):
        draw_cases(2, 1, rules=["OL-WIRE-99"])


def test_accept_everything_reader_disagrees_on_every_mutant(tmp_path):
    bad, by_rule, _ = fuzz("true {file}", 16, 3, out=tmp_path, jobs=2, progress=None, draw=draw_cases)
    assert len(bad) == sum(n for rule, n in by_rule.items() if rule != VALID) and bad
    assert {d.kind for d in bad} == {"accepted invalid"}


def test_our_reader_agrees_through_the_command_line(tmp_path, capsys):
    status = cli.main(["fuzz", "--kind", "onnx-light", "--reader", OUR_READER, "--count", "6", "--seed", "4",
                       "--jobs", "2", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "6 cases, seed 4: 0 disagreements" in out


def test_atheris_smoke_run(tmp_path):
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    env = dict(os.environ, HURRAY_FUZZ_SEEDS="2")
    command = [sys.executable, "-m", "hurray_decl.onnx_light.fuzz_target", "-runs=300", "-max_len=2048",
               "-timeout=10", "-rss_limit_mb=2048", f"-artifact_prefix={tmp_path}/", str(corpus)]
    done = subprocess.run(fresh_process(command), capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Done 300 runs" in done.stderr
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("timeout-*"))


FOUND_BY_ATHERIS = {
    "dims with a 0 among claims past NumPy's index range: reshape raised ValueError": (
        "CAo6aRIRb25ueGxfaWdodF92YWx1ZXPCPlMSAiAHGg4KDAgLEggKAggCCgIICSI6AAAAAAAAAABAAAAAAAAAAAAAAAAAAADg"
        "P9ATIiAi4AAAAAAAAABAAAAAAAAAAAAAAAAAAAD0vwNOADoBd0IECgAQFUIJCgVhaS5ydBABwj67BBKVBAoWCghyZXNlcnZl"
        "ZBIKCggIAhIECgIIAQoZCgtwZXJtdXRhdGlvbhIKCggIBxIECgIIAAoZCgdmb3J3YXJkEg4KDAgLEggKAggACgIIAAoZCgdp"
        "bnZlcnNlEg4KDAgLEggKAggACgIIAAodCg9vdXRsaWVyX2luZGljZXMSCgoICAcSBAoCCAAKHAoOb3V0bGllcl92YWx1ZXMS"
        "CgoICAsSBAoCCAAK7AIKBmJsb2NrcxLhAsI+3QIS2gIKDgoFY291bnQiBRAHOgECCmtra2tra2tra2tra2tra2tra2tra2tr"
        "a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2uiAQoFcnVuXzASmAHC"
        "PpQBCpEBCowBwj6IARKFAQodCgpwYXJhbWV0ZXJzIg8ICRAHOgkMAAQBAQABAAoKDwoFc2NhbGUSBgoECAsSAAoUCgp6ZXJv"
        "X3BvaW50EgYKBAgLEgAKEAoGb2Zmc2V0EgYKBAgLEgAKFgoIY29kZWJvb2sSCgoICAsSBAoCCAAKEwoFY29kZXMSCgoICAIS"
        "BAoCCAYQAQqiAQoFcnVuXzESmAHCPpQBCpEBCowBwj6IARKFAQodCgpwYXJhbWV0ZXJzIg8ICRAHOgkGAAQBAQABAAoKDwoF"
        "c2NhbGUSBgoECAsSAAoUCgp6ZXJvX3BvaW50EgYKBAgLEgAKEAoGb2Zmc2V0EgYKBAgLEgAKFgoIY29kZWJvb2sSCgoICAsS"
        "BAoCCAAKEwoFY29kZXMSCgoICAISBAoCCAMQATofb25ueF9saWdodC5xdWFudGl6YXRpb24udjEvc3BxclAA"
    ),
    "an encoded value without raw_data failing late: the dump asked for raw_data[-1]": (
        "Ep0BEmoKFgoKcGFyYW1ldGVycyIICAIQBzoCBCAKFwoBQhISChAIAhIMCgIIAQoCCAIKAggQChgKBnNjYWxlcxIOCgwIChII"
        "CgIIAQoCCAIKHQoLemVyb19wb2ludHMSDgoMCAoSCAoCCAEKAggCOi9vbm54X2xpZ2h0LnF1YW50aXphdGlvbi52Mi9vcnRf"
        "bWF0bXVsbmJpdHNfaW50NBoOCgwIChIICgIIKAoCCAHyIiiAaANGgIZTYmU2AEAAgkN2RSMTFQAAAAAAAAAAAAAAAAC4ADwA"
        "QQBB"
    ),
    "a codebook layout with vector_size 0 dumped before validation: ZeroDivisionError": (
        "EsAEEpUEChYKCHJlc2VydmVkEgoKCAgCEgQKAggBChkKC3Blcm11dGF0aW9uEgoKCAgHEgQKAggAChkKB2ZvcndhcmQSDgoM"
        "CAsSCAoCCAAKAggAChkKB2ludmVyc2USDgoMCAsSCAoCCAAKAggACh0KD291dGxpZXJfaW5kaWNlcxIKCggIBxIECgIIAAoc"
        "Cg5vdXRsaWVyX3ZhbHVlcxIKCggICxIECgIIAArsAgoGYmxvY2tzEuECwj7dAhLaAgoOCgVjb3VudCIFEAc6AQQKogEKBXJ1"
        "bl8wEpgBwj6UAQqRAQqMAcI+iAEShQEKHQoKcGFyYW1ldGVycyIPCAkQBzoJAgEAAAAAAAAJCg8KBXNjYWxlEgYKBAgLEgAK"
        "FAoKemVyb19wb2ludBIGCgQICxIAChAKBm9mZnNldBIGCgQICxIAChYKCGNvZGVib29rEgoKCAgLEgQKAggAChMKBWNvZGVz"
        "EgoKCAgCEgQKAggBEAMKogEKBXJ1bl8zEpgBwj6UAQqRAQqMAcI+iAEShQEKHQoKcGFyYW1ldGVycyIPCAkQBzoJAQAHAAEA"
        "AQAKCg8KBXNjYWxlEgYKBAgLEgAKFAoKemVyb19wb2ludBIGCgQICxIAChAKBm9mZnNldBIGCgQICxIAChYKCGNvZGVib29r"
        "EgoKCAgLEgQKAggAChMKBWNvZGVzEgoKCAgCEgQKAggBEAE6Jm9ubnhfbGlnaHQucXVhbnRpemF0aW9uLnYxL21hdG11bG5i"
        "aXRzGgoKCAgQEgQKAggHImUAAAAAAAAAAEAAAAAAAAAYQAAAAAAAAOA/mAAAAAAAANA/AAAAAAAAHEAAAAAAAAAAAPAAAAAA"
        "AADwPwAAAAAAACpAAAAAAAAA9L+fAAAAAAAA4D8AAAAAAABGQAAAAAAAAOA/NCoRCghsb2NhdGlvbhIFdy5iaW4="
    ),
    "a graph field onnx reads as a damaged sparse_initializer: the check's onnx re-parse raised DecodeError": (
        "CAo6wwcSEW9ubnhfbGlnaHRfdmFsdWVzKtYDCJYDEAJCNm9ubnhfbGlnaHQucXVhbnRpemF0aW9uLnBhcmFtZXRlcnM6Y29t"
        "bW9uL3N0b3JhZ2VfdHlwZUqWAxLwAgoWCghyZXNlcnZlZBIKCggIAhIECgIIAQoZCgtwZXJtdXRhdGlvbhIKCggIBxIECgII"
        "AAoZCgdmdWFudGl6YXRpb24ucGFyYW1ldGVyczpjb21tb24SRgoMc3RvcmFnZV90eXBlEjZvbm54X2xpZ2h0LnF1YW50aXph"
        "dGlvbi5wYXJhbWV0ZXJzOmNvbW1vbi9zdG9yYWdlX3R5cGUSRgoMbG9naWNhbF90eXBlEjZvbm54X2xpZ2h0LnF1YW50aXph"
        "dGlvbi5wYXJhbS0tLS0tLS2HLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0t"
        "LS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0ECAsaAAoQCgZvZmZzZXQSBgoECAsSAAoWCghjb2RlYm9vaxIKCggI"
        "CxIECgIIAgoTCgVjb29uL2xvZ2ljYWxfdHlwZUoKCggIARIECgIICSo8CAEQAUIwb25u/////////6txdWFudGl6YXRpb24u"
        "cGFyYW1ldGVyczpjb21tb24vc2NhbGVzSgQAAABAcvcBCilvbm54X2xpZ2h0LnF1YW50aXphdGlvbi5wYXJhbWV0ZXJzOmNv"
        "bW1vbhJGCgxzdG9yYWdlX3R5cGUSNm9ubnhfbGlnaHQucXVhbnRpemF0aW9uLnBhcmFtZXRlcnM6Y29tbW9uL3N0b3JhZ2Vf"
        "dHlwZRJGCgxsb2dpY2FsX3R5cGUSNm9ubnhfbGlnaHQucXVhbnRpemR0W2lvbi5wYXJhbS0tLS0tLS0tLS0tLS0tLS0tLS0t"
        "LS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0t"
        "LS0tLS0tLWV0ZXJzOmNvbW1vbi9sb2dpY2FsX3R5cGUSOgoGc2NhbGVzEjBvbm5ueF9saWdodC5xdWFudGl6YXRpb24ucGFy"
        "YW1ldGVyczpjb21tb24vc2NhbGVzwj5SEjoSFQoTCgVsb2NhbBIKCggIAhIECgIIAzohb25ueF9saWdodC5xdZWRi5Z6YXRp"
        "b24uc2hhcmVkLnYxGgoKCAgBEgQKAggJIgMA9QA6AXdKAEIECgAQFUIJCgVhaS5ydBAB"
    ),
}
"""Inputs the 10-minute atheris run found (base64), each once a foreign exception."""


@pytest.mark.parametrize("finding", FOUND_BY_ATHERIS)
def test_atheris_findings_are_refused_with_rules(finding):
    """The fuzz target's own oracle (only rule errors escape, the dump covers every byte and agrees
    with the verdict) holds on each input the long run found, each dumped (``every=1``)."""
    import base64

    from hurray_decl.onnx_light.fuzz_target import check_one

    check_one(base64.b64decode("".join(FOUND_BY_ATHERIS[finding])), every=1)


def test_a_model_onnx_cannot_reparse_is_checked_as_without_onnx(tmp_path, capsys):
    """The model whose graph field 15 onnx reads as a damaged sparse_initializer: the check falls
    back to the package's own types (as without onnx), and the command line gives its verdict."""
    import base64

    from hurray_decl.cli import main

    key = next(k for k in FOUND_BY_ATHERIS if "sparse_initializer" in k)
    path = tmp_path / "model.onnx"
    path.write_bytes(base64.b64decode("".join(FOUND_BY_ATHERIS[key])))
    assert main(["validate", "--kind", "model", str(path)]) == 0
    assert capsys.readouterr().out.strip() == "valid: onnx-light model (0 encoded values)"


def test_the_target_dumps_a_sample_of_the_inputs_chosen_by_their_bytes(monkeypatch):
    """One input in SAMPLE is dumped (once per kind), the same ones on a replay; every one with ``every=1``."""
    import random

    from hurray_decl.fuzz_harness import sampled
    from hurray_decl.onnx_light import fuzz_target

    dumped: list[bytes] = []
    monkeypatch.setattr(fuzz_target, "check_dump", lambda data, kind, refused: dumped.append(data))
    draw = random.Random(7)
    inputs = [draw.randbytes(draw.randrange(1, 40)) for _ in range(160)]
    for data in inputs:
        fuzz_target.check_one(data)
    expected = [data for data in inputs if sampled(data, fuzz_target.SAMPLE)]
    assert 8 <= len(expected) <= 40
    assert dumped == [data for data in expected for _ in fuzz_target.KINDS]
    dumped.clear()
    fuzz_target.check_one(inputs[0], every=1)
    assert dumped == [inputs[0]] * len(fuzz_target.KINDS)


def test_a_sampled_dump_that_disagrees_is_a_finding(monkeypatch):
    from hurray_decl.onnx_light import fuzz_target
    from hurray_decl.onnx_light.corpus import bundled

    data = min((p.read_bytes() for p in bundled().iterdir() if p.suffix == ".pb"), key=len)

    empty = SimpleNamespace(rows=(), error=None)
    monkeypatch.setattr(fuzz_target, "dump", lambda data, kind: empty)
    with pytest.raises(fuzz_target.DumpMismatch, match="covers 0 of"):
        fuzz_target.check_one(data, every=1)


@pytest.mark.parametrize("change, message", [
    (lambda rows: rows, None),
    (lambda rows: rows[:1] + rows[2:], "row .* does not continue at byte 1"),                 # a gap
    (lambda rows: rows[:2] + [replace(rows[2], offset=rows[2].offset - 1)] + rows[3:],
     "row .* does not continue at byte 2"),                                                 # an overlap
    (lambda rows: rows[:1] + [replace(rows[1], hex="FF" + rows[1].hex[2:])] + rows[2:],
     "row .*hex='FF.* does not continue at byte 1"),                                        # other bytes
    (lambda rows: rows[:1] + [replace(rows[1], field="")] + rows[2:], "row .* does not continue at byte 1"),
    (lambda rows: [*rows[:1], replace(rows[1], size=0, hex=""), *rows[1:]], "does not continue at byte 1"),
    (lambda rows: rows[:-1], "covers 3 of 4 bytes"),                                        # the end left out
    (lambda rows: [*rows, replace(rows[-1], offset=4)], "does not continue at byte 4"),     # past the end
    (lambda rows: [], "covers 0 of 4 bytes"),
])
def test_a_dump_that_does_not_cover_the_bytes_in_order_is_a_finding(monkeypatch, change, message):
    """The dump check reads the rows by columns: a gap, an overlap, a row showing other bytes, an
    unnamed or empty row, the end left out or rows past it are each caught, at the first such row."""
    from hurray_decl.dump.rows import Dump, Row
    from hurray_decl.onnx_light import fuzz_target

    data = bytes([1, 2, 3, 4])
    rows = [Row(i, 1, f"{b:02X}", f"f{i}", "") for i, b in enumerate(data)]
    monkeypatch.setattr(fuzz_target, "dump", lambda data, kind: Dump(change(rows), None))
    if message is None:
        fuzz_target.check_dump(data, "value", None)
        return
    with pytest.raises(fuzz_target.DumpMismatch, match=message):
        fuzz_target.check_dump(data, "value", None)


def test_a_model_onnx_cannot_reparse_has_no_text_format():
    """The same model as text: ONNX's schema cannot read it, so the text is refused (OL-SHR-36)
    rather than DecodeError escaping."""
    import base64

    from hurray_decl.errors import HurrayDeclError
    from hurray_decl.onnx_light.inputs import MODEL, parse
    from hurray_decl.onnx_light.model import model_to_textproto

    key = next(k for k in FOUND_BY_ATHERIS if "sparse_initializer" in k)
    with pytest.raises(HurrayDeclError) as caught:
        model_to_textproto(parse(base64.b64decode("".join(FOUND_BY_ATHERIS[key])), MODEL))
    assert caught.value.code == "OL-SHR-36" and caught.value.path == "model (a field ONNX cannot read)"
