"""The public strategies checked against our own reader: valid descriptors are accepted and
round-trip byte-exactly, their buffers pass validate_buffers, and every mutant is refused with
exactly the rule it is labelled with; every reader rule has a generator or a stated reason.

Mutants per rule: 20 in CI; acceptance 1 (200 out of 200 per rule) is the long run::

    HURRAY_MUTANTS_PER_RULE=200 pytest tests/hurray/test_fuzz_strategies.py -k mutants

(about 10-15 minutes on 2 cores).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from hurray_decl import read_tensor_descriptor, validate_buffers, write_tensor_descriptor
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray.strategies import (
    DATA_MUTANTS,
    DATA_NOT_GENERATED,
    MUTANTS,
    NOT_REFUSABLE,
    buffers_for,
    data_rules,
    invalid_buffers,
    invalid_tensor_descriptors,
    reader_rules,
    tensor_descriptors,
)
from hurray_decl.rules import all_rules

MUTANTS_PER_RULE = int(os.environ.get("HURRAY_MUTANTS_PER_RULE", "20"))


def quick(examples: int) -> settings:
    return settings(max_examples=examples, suppress_health_check=list(HealthCheck), deadline=None)


def test_every_reader_rule_has_a_generator_or_a_reason():
    rules = set(reader_rules())
    assert rules, "no reader rules parsed from RULES.md"
    without = sorted(rules - set(MUTANTS) - set(NOT_REFUSABLE))
    assert not without, f"reader rules with neither a mutant generator nor a reason: {without}"
    assert set(MUTANTS) <= rules, f"generators for rules that are not reader rules: {sorted(set(MUTANTS) - rules)}"
    assert set(NOT_REFUSABLE) <= rules and not set(NOT_REFUSABLE) & set(MUTANTS)
    assert all(reason.strip() for reason in NOT_REFUSABLE.values())


def test_excluded_by_role_not_by_list():
    """Writer and codec rules never appear: the selection is by role, area and needs."""
    table = all_rules()
    for rule in reader_rules():
        row = table[rule]
        assert row.role in ("reader", "both") and "data" not in row.needs
        assert rule.split("-")[0] in ("HQ", "HT", "HE")
    codec = [r.id for r in table.values() if r.role in ("codec", "writer") and r.id.split("-")[0] in ("HQ", "HT", "HE")]
    assert codec and not set(codec) & set(reader_rules())


def test_every_data_rule_has_a_generator_or_a_reason():
    rules = set(data_rules())
    assert not sorted(rules - set(DATA_MUTANTS) - set(DATA_NOT_GENERATED))
    assert set(DATA_MUTANTS) <= rules and not set(DATA_MUTANTS) & set(DATA_NOT_GENERATED)


@quick(150)
@given(tensor_descriptors())
def test_valid_descriptors_are_accepted_and_round_trip(d):
    data = write_tensor_descriptor(d)
    back = read_tensor_descriptor(data)
    assert write_tensor_descriptor(back) == data
    assert back.replace(descriptor_length=None) == d.replace(descriptor_length=None)


@quick(100)
@given(tensor_descriptors().flatmap(lambda d: buffers_for(d).map(lambda b: (d, b))))
def test_buffers_for_satisfies_the_data_rules(case):
    d, contents = case
    assert len(contents) == len(d.buffers)
    validate_buffers(read_tensor_descriptor(write_tensor_descriptor(d)), contents)


@pytest.mark.parametrize("rule", sorted(MUTANTS))
def test_mutants_are_refused_with_their_rule(rule):
    @quick(MUTANTS_PER_RULE)
    @given(invalid_tensor_descriptors(rule))
    def check(case):
        data, label = case
        assert label == rule
        with pytest.raises(HurrayDeclError) as info:
            read_tensor_descriptor(data)
        assert info.value.code == rule, f"{rule} mutant refused as {info.value.code}: {info.value}"

    check()


@pytest.mark.parametrize("rule", sorted(DATA_MUTANTS))
def test_data_mutants_are_refused_with_their_rule(rule):
    @quick(max(10, MUTANTS_PER_RULE // 2))
    @given(invalid_buffers(rule))
    def check(case):
        data, contents, label = case
        d = read_tensor_descriptor(data)  # the descriptor itself is valid
        with pytest.raises(HurrayDeclError) as info:
            validate_buffers(d, contents)
        assert info.value.code == label == rule, f"{rule} mutant refused as {info.value.code}: {info.value}"

    check()


def test_unknown_rule_is_refused():
    with pytest.raises(KeyError):
        invalid_tensor_descriptors("HT-HDR-99")
