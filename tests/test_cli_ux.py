"""The command line as a new user meets it: each case here is a surprise the command line used
to give (an option ignored, a name cut, a Python error no one catches) and what it gives now."""

from __future__ import annotations

import pytest

from hurray_decl import cli
from tests.helpers import dump_verdict
from tests.paths import FILES, STREAMS

WIDTH = 100


@pytest.mark.parametrize("path", [FILES / "i08-crc-flag-clear-nonzero.hrry", FILES / "i05-index-descriptor-length.hrry",
                                  STREAMS / "i09-descriptor-length-plus-8.stream"], ids=lambda p: p.name)
def test_every_line_of_inspect_fits_100_columns_the_verdict_too(path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert cli.main(["inspect", str(path)]) == 1
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= WIDTH
    verdict = dump_verdict(out)
    assert verdict.startswith("invalid: [") and len(verdict) > WIDTH  # a long verdict, wrapped, nothing lost
