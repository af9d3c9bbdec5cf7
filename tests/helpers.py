"""Assertions shared by the test suite.

The RULES.md coverage test (tests/test_rules_coverage.py) finds, in the test sources, every
``raises_rule("ID")`` and ``covers("ID")`` call: a rule counts as tested when one of them names it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from hurray_decl.errors import HurrayDeclError


@contextlib.contextmanager
def raises_rule(code: str, *, offset: int | None = None, path: str | None = None) -> Iterator[pytest.ExceptionInfo]:
    """Expect a HurrayDeclError with exactly ``code`` (and, when given, offset and path end)."""
    with pytest.raises(HurrayDeclError) as info:
        yield info
    err = info.value
    assert err.code == code, f"expected {code}, got {err.code}: {err}"
    if offset is not None:
        assert err.offset == offset, f"expected offset {offset}, got {err.offset}: {err}"
    if path is not None:
        assert err.path.endswith(path), f"expected path ending {path!r}, got {err.path!r}"


def covers(*codes: str):
    """Mark a test as the acceptance or exact-value test of rules that refuse nothing."""
    return pytest.mark.rules(*codes)
