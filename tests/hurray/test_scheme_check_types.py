"""Every scheme's checks name what they see of the tensor: ``check_tensor`` a
:class:`~hurray_decl.hurray.checks.TensorChecks`, ``check_data`` and the kernel plan a
:class:`~hurray_decl.hurray.checks.DataChecks` (never ``Any``); mypy checks the contexts
against the protocols where the checks are called."""

from __future__ import annotations

import inspect

import pytest

from hurray_decl.hurray.quantization import SCHEMES

WANTED = {"check_tensor": ("tensor", "TensorChecks"), "check_data": ("data", "DataChecks"),
          "kernel": ("params", "DataChecks")}


@pytest.mark.parametrize("row", list(SCHEMES), ids=lambda row: row.name)
def test_scheme_checks_are_typed_by_the_protocols(row):
    seen = 0
    for attribute, (parameter, protocol) in WANTED.items():
        function = getattr(row, attribute)
        if function is None:
            continue
        annotation = inspect.signature(function).parameters[parameter].annotation
        assert annotation == protocol, (row.name, attribute, annotation)
        seen += 1
    assert seen >= 2, row.name  # every built-in scheme has a kernel and a tensor check at least
