"""The stream fuzz kit: every HS reader rule has a mutant generator (or is an acceptance rule
with a generator of valid streams, or a property of reading checked elsewhere), and a strict
reader refuses each mutant with its rule after the items it promises."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray.stream import read_stream
from hurray_decl.hurray.stream.fuzz_target import check_one
from hurray_decl.hurray.stream.strategies import (
    STREAM_ACCEPTS,
    STREAM_MUTANTS,
    STREAM_PROPERTIES,
    StreamCase,
    streams,
    write,
)
from hurray_decl.rules import all_rules
from tests.helpers import covers


def reader_rules() -> list[str]:
    return sorted(r.id for r in all_rules().values() if r.id.startswith("HS-") and r.role in ("reader", "both"))


def test_every_hs_reader_rule_has_a_generator_or_a_reason():
    tables = (set(STREAM_MUTANTS), set(STREAM_ACCEPTS), set(STREAM_PROPERTIES))
    assert not (tables[0] & tables[1]) and not (tables[0] & tables[2]) and not (tables[1] & tables[2])
    assert set(reader_rules()) == tables[0] | tables[1] | tables[2]


def refused(case: StreamCase) -> HurrayDeclError:
    items = []
    with pytest.raises(HurrayDeclError) as info:
        for item in read_stream(case.data, **case.options):
            items.append(item)
    assert info.value.code == case.rule, info.value
    assert len(items) == case.before
    assert info.value.offset is not None and 0 <= info.value.offset <= len(case.data)
    return info.value


@covers("HS-FRM-04", "HS-FRM-05", "HS-FRM-06", "HS-FRM-07", "HS-FRM-08", "HS-FRM-09", "HS-FRM-12", "HS-VER-02",
        "HS-CMP-02", "HS-CMP-03", "HS-CMP-04", "HS-SYNC-01")
@pytest.mark.parametrize("rule", sorted(STREAM_MUTANTS))
def test_each_mutant_is_refused_with_its_rule(rule):
    @given(STREAM_MUTANTS[rule]())
    def check(case):
        refused(case)
        check_one(case.data)  # the fuzz oracle holds on it too

    check()


@pytest.mark.parametrize("rule", sorted(STREAM_ACCEPTS))
def test_each_acceptance_generator_is_accepted(rule):
    @given(STREAM_ACCEPTS[rule]())
    def check(data):
        reader = read_stream(data)
        list(reader)
        assert reader.position == len(data)
        check_one(data)

    check()


@given(streams())
def test_valid_streams_read_back_as_written(stream):
    data, items = stream
    assert write(list(read_stream(data))) == data
    assert len(list(read_stream(data))) == len(items)


@given(streams(), st.data())
def test_a_stream_cut_anywhere_is_refused_or_ends_at_a_boundary(stream, data):
    raw, _ = stream
    cut = data.draw(st.integers(0, len(raw)))
    reader = read_stream(raw[:cut])
    try:
        list(reader)
    except HurrayDeclError as err:
        assert err.code in ("HS-FRM-04", "HS-CMP-02")
    else:
        assert reader.position == cut
