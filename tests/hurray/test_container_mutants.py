"""Acceptance: each rule-labelled container mutant is refused with exactly its code."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray.container import open_container, validate_container
from hurray_decl.hurray.container.strategies import MUTANTS, NOT_MUTATED, invalid_containers
from hurray_decl.rules import all_rules

# Each HF reader rule with a mutant, and the code a reader refuses it with. Written out here so
# that the list is checked against the strategy module's table, not derived from it.
EXPECTED = {
    "HF-HDR-03": "HF-HDR-03", "HF-HDR-04": "HF-HDR-04", "HF-HDR-05": "HF-HDR-05", "HF-HDR-08": "HF-HDR-08",
    "HF-HDR-09": "HF-HDR-09", "HF-HDR-10": "HF-HDR-10", "HF-HDR-11": "HF-HDR-11", "HF-HDR-12": "HF-HDR-12",
    "HF-HDR-13": "HF-HDR-13", "HF-HDR-14": "HF-HDR-14", "HF-HDR-15": "HF-HDR-15", "HF-HDR-16": "HF-HDR-16",
    "HF-HDR-18": "HF-HDR-18",
    "HF-IDX-02": "HF-IDX-02", "HF-IDX-03": "HF-IDX-03", "HF-IDX-04": "HF-IDX-04", "HF-IDX-05": "HF-IDX-05",
    "HF-IDX-06": "HF-IDX-06", "HF-IDX-07": "HF-IDX-07", "HF-IDX-09": "HF-IDX-09", "HF-IDX-10": "HF-IDX-10",
    "HF-IDX-11": "HF-IDX-11", "HF-IDX-12": "HF-IDX-12", "HF-IDX-13": "HF-IDX-13", "HF-IDX-14": "HF-IDX-14",
    "HF-IDX-15": "HF-IDX-15", "HF-IDX-17": "HF-DATA-03", "HF-IDX-18": "HF-IDX-18",
    "HF-META-02": "HF-META-02", "HF-META-03": "HF-META-03", "HF-META-05": "HF-META-05", "HF-META-06": "HF-META-06",
    "HF-META-07": "HF-META-07", "HF-META-08": "HF-META-08", "HF-META-09": "HF-META-09", "HF-META-10": "HF-META-10",
    "HF-META-11": "HF-META-11", "HF-META-13": "HF-META-13", "HF-META-14": "HF-META-14", "HF-META-15": "HF-META-15",
    "HF-META-16": "HF-META-16", "HF-META-17": "HF-META-17", "HF-META-18": "HF-META-18", "HF-META-20": "HF-META-20",
    "HF-DATA-02": "HF-DATA-02", "HF-DATA-03": "HF-DATA-03", "HF-DATA-04": "HT-HDR-04", "HF-DATA-05": "HF-DATA-05",
    "HF-DATA-07": "HF-DATA-07", "HF-DATA-08": "HF-DATA-03", "HF-DATA-10": "HF-DATA-10", "HF-DATA-11": "HF-DATA-11",
    "HF-DATA-12": "HF-DATA-05", "HF-DATA-13": "HF-DATA-13", "HF-DATA-15": "HF-DATA-15", "HF-DATA-16": "HF-DATA-16",
    "HF-DATA-17": "HF-DATA-17", "HF-DATA-20": "HF-DATA-20", "HF-DATA-21": "HF-DATA-21",
}
O_LEVEL = {"HF-HDR-03", "HF-HDR-04", "HF-HDR-05", "HF-HDR-08", "HF-HDR-09", "HF-HDR-10", "HF-HDR-11", "HF-HDR-12",
           "HF-HDR-13", "HF-HDR-14", "HF-HDR-18", "HF-IDX-02", "HF-IDX-03", "HF-IDX-04", "HF-IDX-05", "HF-IDX-09",
           "HF-IDX-10", "HF-IDX-11", "HF-IDX-12", "HF-IDX-13", "HF-IDX-14", "HF-IDX-15", "HF-META-02", "HF-META-03",
           "HF-META-05", "HF-META-06", "HF-META-07", "HF-META-08", "HF-META-09", "HF-META-10", "HF-META-11",
           "HF-META-13", "HF-META-14", "HF-META-15", "HF-META-16", "HF-META-17", "HF-META-18", "HF-DATA-20",
           "HF-DATA-21"}
"""Mutants that open_container alone refuses; the others pass it and fail later (T or V)."""


def test_the_table_is_the_strategy_modules():
    assert {rule: m.code for rule, m in MUTANTS.items()} == EXPECTED


def test_every_hf_reader_rule_has_a_mutant_or_a_reason():
    readers = {r.id for r in all_rules().values() if r.id.startswith("HF-") and r.role in ("reader", "both")}
    assert readers == set(MUTANTS) | set(NOT_MUTATED) and not set(MUTANTS) & set(NOT_MUTATED)


@pytest.mark.parametrize("rule", sorted(EXPECTED))
def test_each_mutant_is_refused_with_exactly_its_code(rule):
    @settings(max_examples=8)
    @given(mutant=invalid_containers(rule))
    def check(mutant):
        data, labelled, code = mutant
        assert labelled == rule
        with pytest.raises(HurrayDeclError) as info:
            validate_container(data)
        assert info.value.code == code, str(info.value)
        assert info.value.offset is not None and 0 <= info.value.offset <= len(data)
        if rule in O_LEVEL:
            with pytest.raises(HurrayDeclError):
                open_container(data)
        elif rule != "HF-DATA-17":
            open_container(data)  # only a whole-file or per-tensor check finds it

    check()
