"""hurray-decl fuzz (the external-reader harness) and the atheris fuzz target's smoke run.

The long atheris run is documented in hurray_decl/hurray/fuzz_target.py; this runs a few thousand
executions only.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from hurray_decl import cli
from hurray_decl.hurray import fuzz
from hurray_decl.hurray.fuzz import (
    ACCEPT,
    EITHER,
    PRIVATE,
    PRIVATE_ACCEPTED,
    PRIVATE_REFUSED,
    REJECT,
    VALID,
    draw_cases,
    reader_command,
)
from hurray_decl.hurray.strategies import MUTANTS
from tests.helpers import fresh_process

STRICT_READER = (f"{shlex.quote(sys.executable)} -c \"import sys, hurray_decl; "
                 f"hurray_decl.read_tensor_descriptor(open(sys.argv[1], 'rb').read())\" {{file}}")


def test_reader_command_substitutes_the_file():
    assert reader_command("check --strict {file}", "/tmp/a b.bin") == ["check", "--strict", "/tmp/a b.bin"]
    assert reader_command("check 'two words' x={file}", "f") == ["check", "two words", "x=f"]
    assert reader_command("check", "f") == ["check", "f"]


def test_cases_are_reproducible_and_spread_over_the_rules():
    first = draw_cases(40, seed=5)
    assert first == draw_cases(40, seed=5)
    assert sum(c.rule == VALID for c in first) == 10 and sum(c.rule == PRIVATE for c in first) == 4
    assert all((c.expected == ACCEPT) == (c.rule == VALID) for c in first)
    assert all((c.expected == EITHER) == (c.rule == PRIVATE) for c in first)
    assert len({c.rule for c in first}) == 28  # 10 valid, 4 private, then 26 rules with one mutant each
    only = draw_cases(5, seed=1, rules=["HT-HDR-04"])
    assert {(c.rule, c.expected) for c in only} == {("HT-HDR-04", REJECT)}


def test_accept_everything_reader_disagrees_on_every_mutant(tmp_path):
    bad, by_rule, bad_by_rule = fuzz.fuzz("true {file}", 24, 3, out=tmp_path, jobs=2, progress=None)
    mutants = sum(n for rule, n in by_rule.items() if rule not in (VALID, PRIVATE_ACCEPTED))
    assert len(bad) == mutants and bad_by_rule.get(VALID, 0) == 0 and by_rule[PRIVATE_ACCEPTED] == 2
    assert {d.kind for d in bad} == {"accepted invalid"}
    for d in bad:
        assert Path(d.file).is_file() and d.rule in MUTANTS and d.seed == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(Path(d.file).name for d in bad)


def test_exit_status_and_report(tmp_path, capsys):
    status = cli.main(["fuzz", "--reader", "true {file}", "--count", "8", "--seed", "1", "--out", str(tmp_path / "out"),
                        "--jobs", "2", "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert status == 1 and "disagreements" in out and "DISAGREE case" in out
    assert (tmp_path / "r.json").is_file()
    assert cli.main(["fuzz", "--reader", "false {file}", "--count", "4", "--seed", "1", "--rule", "HT-HDR-04",
                      "--out", str(tmp_path / "none")]) == 0
    assert not (tmp_path / "none").exists()  # nothing to keep
    assert cli.main(["fuzz", "--reader", "true {file}", "--count", "2", "--rule", "HT-HDR-99"]) == 2


def test_reject_everything_reader_disagrees_on_valid_cases(tmp_path):
    bad, by_rule, _ = fuzz.fuzz("false {file}", 12, 4, out=tmp_path, jobs=2, progress=None)
    assert len(bad) == by_rule[VALID] == 3 and {d.kind for d in bad} == {"rejected valid"}


def test_slow_reader_is_a_timeout(tmp_path):
    bad, _, _ = fuzz.fuzz("sh -c 'sleep 5' {file}", 2, 0, out=tmp_path, timeout=0.3, jobs=2, progress=None)
    assert [d.kind for d in bad] == ["timeout", "timeout"]


def test_our_reader_agrees(tmp_path):
    bad, by_rule, _ = fuzz.fuzz(STRICT_READER, 8, 11, out=tmp_path, jobs=2, progress=None)
    assert not bad, [(d.rule, d.output) for d in bad]
    assert sum(by_rule.values()) == 8


def test_atheris_smoke_run(tmp_path):
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    env = dict(os.environ, HURRAY_FUZZ_SEEDS="10")
    command = [sys.executable, "-m", "hurray_decl.hurray.fuzz_target", "-runs=3000", "-max_len=512", "-timeout=1",
               "-rss_limit_mb=1024", f"-artifact_prefix={tmp_path}/", str(corpus)]
    done = subprocess.run(fresh_process(command), capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Done 3000 runs" in done.stderr
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("timeout-*"))


def test_a_slow_call_is_a_finding_whether_it_returns_or_refuses():
    """within() checks the time after the body in both cases (a negative limit: always too slow)."""
    from hurray_decl.errors import RuleViolation
    from hurray_decl.fuzz_harness import SlowInput, within

    with pytest.raises(SlowInput, match="read took"):
        with within(-1.0, "read", b"\x00\x01"):
            pass
    with pytest.raises(SlowInput, match="on 2 bytes"):
        with within(-1.0, "read", b"\x00\x01"):
            raise RuleViolation("HT-HDR-08", "refused")
    with pytest.raises(RuleViolation):  # within the limit, the refusal itself comes through
        with within(60.0, "read", b"\x00\x01"):
            raise RuleViolation("HT-HDR-08", "refused")


def test_the_target_reads_an_input_in_one_mode_and_a_sample_in_both():
    """One input in SAMPLE, chosen by its bytes, is read strictly and permissively; the others in
    one mode each, both modes taken about equally often; the choice is the same on a replay."""
    from hurray_decl.hurray import fuzz_target

    inputs = [i.to_bytes(4, "little") * 5 for i in range(800)]
    chosen = [fuzz_target.modes_of(data) for data in inputs]
    assert chosen == [fuzz_target.modes_of(data) for data in inputs]
    counts = {modes: chosen.count(modes) for modes in set(chosen)}
    assert set(counts) == {(False,), (True,), (False, True)}
    assert 60 <= counts[(False, True)] <= 140 and min(counts[(False,)], counts[(True,)]) >= 280
    assert all(fuzz_target.modes_of(data, every=1) == (False, True) for data in inputs[:20])


def _valid_descriptors(sampled: bool) -> list[bytes]:
    from hurray_decl.errors import HurrayDeclError
    from hurray_decl.fuzz_harness import sampled as is_sampled
    from hurray_decl.hurray import fuzz_target
    from hurray_decl.hurray.tensor import read_tensor_descriptor

    found = []
    for data in fuzz_target.seed_inputs(0):
        if data[:8] != b"HRRYFILE" and is_sampled(data, fuzz_target.SAMPLE) == sampled:
            try:
                read_tensor_descriptor(data)
            except HurrayDeclError:  # a seed that is no valid descriptor is not wanted here
                continue
            found.append(data)
    return found


def test_the_target_reads_and_writes_back_in_the_modes_it_chose(monkeypatch):
    from hurray_decl.hurray import fuzz_target

    calls: list[bool] = []
    read = fuzz_target.read_tensor_descriptor

    def recording(data, *, permissive=False):
        calls.append(permissive)
        return read(data, permissive=permissive)

    monkeypatch.setattr(fuzz_target, "read_tensor_descriptor", recording)
    for sampled, count in ((True, 2), (False, 1)):
        data = _valid_descriptors(sampled)[0]
        calls.clear()
        fuzz_target.check_one(data)
        assert calls == list(fuzz_target.modes_of(data)) and len(calls) == count
    both = [_valid_descriptors(sampled)[0] for sampled in (True, False)]
    monkeypatch.setattr(fuzz_target, "write_tensor_descriptor", lambda d, permissive: b"")
    for data in both:  # the write-back is compared on every input
        with pytest.raises(fuzz_target.RoundTripMismatch, match="tensor descriptor"):
            fuzz_target.check_one(data)


def test_a_sampled_input_refused_only_in_permissive_mode_is_a_finding(monkeypatch):
    from hurray_decl.errors import RuleViolation
    from hurray_decl.hurray import fuzz_target

    read = fuzz_target.read_tensor_descriptor

    def strict_only(data, *, permissive=False):
        if permissive:
            raise RuleViolation("HT-HDR-16", "refused in permissive mode only")
        return read(data, permissive=permissive)

    monkeypatch.setattr(fuzz_target, "read_tensor_descriptor", strict_only)
    data = _valid_descriptors(False)[0]
    with pytest.raises(fuzz_target.ModeDisagreement, match="accepted strictly"):
        fuzz_target.check_one(data, every=1)  # every input sampled
    if fuzz_target.modes_of(data) == (False,):
        fuzz_target.check_one(data)  # read strictly only: nothing to compare


@pytest.mark.parametrize("value, every", [(None, 8), ("1", 1), ("32", 32)])
def test_the_sampling_is_set_by_the_environment(monkeypatch, value, every):
    from hurray_decl.fuzz_harness import SAMPLE_VARIABLE, sample_every

    if value is None:
        monkeypatch.delenv(SAMPLE_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(SAMPLE_VARIABLE, value)
    assert sample_every(8) == every


@pytest.mark.parametrize("value", ["0", "-3", "often"])
def test_a_bad_sampling_stops_the_run(monkeypatch, value):
    from hurray_decl.fuzz_harness import SAMPLE_VARIABLE, sample_every

    monkeypatch.setenv(SAMPLE_VARIABLE, value)
    with pytest.raises(SystemExit, match="HURRAY_FUZZ_SAMPLE"):
        sample_every(8)


PYHURRAY_READER = (f"{shlex.quote(sys.executable)} -c \"import sys, hurray; "
                   f"hurray.Descriptor.decode(open(sys.argv[1], 'rb').read()).quantization\" {{file}}")
"""pyhurray reading a descriptor whole, its quantization descriptor included."""


@pytest.mark.parametrize("reader, verdict", [
    (PYHURRAY_READER, PRIVATE_REFUSED),  # the reference binding has no agreement: the tags are unknown (HQ-EXT-03)
    (f"{shlex.quote(sys.executable)} -m hurray_decl validate {{file}}", PRIVATE_ACCEPTED),  # this package has one
])
def test_private_scheme_cases_are_what_the_rules_expect(tmp_path, capsys, reader, verdict):
    if reader is PYHURRAY_READER:
        pytest.importorskip("hurray")
    status = cli.main(["fuzz", "--reader", reader, "--count", "6", "--seed", "2", "--rule", PRIVATE, "--jobs", "2",
                       "--out", str(tmp_path / "out"), "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "0 disagreements" in out and "HQ-EXT-03 expects" in out and not (tmp_path / "out").exists()
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["by_rule"] == {verdict: {"cases": 6, "disagreements": 0}}


def test_private_cases_hold_both_project_schemes():
    from hurray_decl.hurray.tensor import read_tensor_descriptor

    tags = {read_tensor_descriptor(data).quantization.scheme_tag for data in fuzz.private_descriptors(30, 1)}
    assert tags == {0xF0, 0xF1}
