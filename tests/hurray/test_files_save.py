"""``hurray_decl.save`` writes as a plain ``open`` would: a new file gets 0o666 less the umask (not
the 0o600 of a private temporary), the file is complete once it has its name, and a failed save
leaves neither the file nor a temporary."""

from __future__ import annotations

import os

import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl.errors import ArgumentError


@pytest.fixture
def mask():
    def use(value: int) -> int:
        os.umask(value)
        return value

    saved = os.umask(0)
    os.umask(saved)
    yield use
    os.umask(saved)


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077, 0o002])
def test_saved_files_take_the_umask(tmp_path, mask, umask):
    mask(umask)
    path = tmp_path / "m.hrry"
    hd.save(path, {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}, kv={"producer": "test"})
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.hrry"]
    assert np.array_equal(hd.load(path)["w"].numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_saved_files_are_those_of_plain_open(tmp_path, mask):
    mask(0o027)
    with open(tmp_path / "plain", "wb"):
        pass
    hd.save(tmp_path / "saved.hrry", {"b": np.zeros(3, np.int8)})
    assert (tmp_path / "saved.hrry").stat().st_mode & 0o777 == (tmp_path / "plain").stat().st_mode & 0o777


def test_a_failed_save_leaves_nothing(tmp_path, mask):
    mask(0o022)
    with pytest.raises(ArgumentError, match="cannot write into"):
        hd.save(tmp_path / "missing" / "m.hrry", {"w": np.zeros(2, np.float32)})
    with pytest.raises(ArgumentError):
        hd.save(tmp_path / "m.hrry", {"w": object()})
    assert not list(tmp_path.iterdir())
