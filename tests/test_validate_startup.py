"""``validate`` starts fast: it reads a descriptor without NumPy, ml_dtypes, the writer or the
buffer validation, which load on first use (acceptance 6 of issue #14; the timing itself is
measured by hand as a ratio to ``python -c "import numpy"``, never by a test)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import DESCRIPTORS, REPO as ROOT
from tests.test_typing import type_checking_imports

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
NOT_FOR_VALIDATE = ("numpy", "ml_dtypes", "onnx", "google.protobuf", "hypothesis", "gguf", "hurray_decl.rules",
                    "hurray_decl.hurray.tensor.writer", "hurray_decl.hurray.tensor.validate",
                    "hurray_decl.hurray.tensor.access", "hurray_decl.hurray.numerics", "hurray_decl.hurray.dump",
                    "hurray_decl.onnx_light", "hurray_decl.convert")


def hurray_inputs() -> list[Path]:
    """Every bundled example that is a Hurray descriptor (its magic is right: a wrong magic makes
    ``validate`` try the onnx-light reader, which needs NumPy), valid and invalid, every scheme."""
    from hurray_decl.hurray.tensor.header import MAGIC

    files = sorted((ROOT / "hurray_decl" / "hurray" / "examples").glob("*.bin"))
    return [f for f in files if f.read_bytes().startswith(MAGIC)] + [DESCRIPTORS / "row_major_f32_3x4.bin"]


def run(code: str) -> tuple[list[str], set[str]]:
    """The printed lines (but the last) and the modules a fresh interpreter holds after ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], env=ENV, capture_output=True, text=True, check=True)
    *lines, modules = done.stdout.splitlines()
    return lines, set(json.loads(modules))


def heavy(loaded: set[str]) -> set[str]:
    return {m for m in loaded for h in NOT_FOR_VALIDATE if m == h or m.startswith(h + ".")}


def test_validate_of_every_hurray_example_loads_no_numpy_writer_or_rules():
    files = hurray_inputs()
    assert {f.name.split("_")[0] for f in files} >= {"valid", "invalid"} and len(files) > 30
    lines, loaded = run("from hurray_decl import cli\n"
                        f"for f in {[str(f) for f in files]!r}:\n"
                        "    print(cli.main(['validate', f]))")
    codes = [line for line in lines if line in ("0", "1")]
    assert codes == ["1" if f.name.startswith("invalid") else "0" for f in files]  # every verdict given
    assert {"hurray_decl.hurray.tensor.reader", "hurray_decl.hurray.schemes.mxfp",
            "hurray_decl.hurray.schemes.nf4"} <= loaded
    assert heavy(loaded) == set()


def test_numpy_and_ml_dtypes_load_on_first_use():
    lines, loaded = run(
        "from hurray_decl.hurray.tables import storage\n"
        "from hurray_decl.lazy_modules import numpy as np\n"
        "import sys\n"
        "print('numpy' in sys.modules, 'ml_dtypes' in sys.modules, sorted(storage.NARROW_FLOATS))\n"
        "print(np.float32(1.5) * 2, storage.NARROW_FLOATS['float8_e8m0'].__name__)")
    assert lines == [
        "False False ['bfloat16', 'float4_e2m1', 'float6_e2m3', 'float6_e3m2', 'float8_e4m3', 'float8_e5m2', "
        "'float8_e8m0']",
        "3.0 float8_e8m0fnu"]
    assert {"numpy", "ml_dtypes"} <= loaded


def test_lazy_module_is_the_module_and_names_missing_attributes():
    import ml_dtypes
    import numpy

    from hurray_decl import lazy_modules
    from hurray_decl.hurray.tables import storage

    assert lazy_modules.numpy.ndarray is numpy.ndarray and lazy_modules.numpy.uint8 is numpy.uint8
    assert dict(storage.NARROW_FLOATS) == {"float8_e4m3": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
                                           "float8_e8m0": ml_dtypes.float8_e8m0fnu,
                                           "float4_e2m1": ml_dtypes.float4_e2m1fn,
                                           "float6_e2m3": ml_dtypes.float6_e2m3fn,
                                           "float6_e3m2": ml_dtypes.float6_e3m2fn, "bfloat16": ml_dtypes.bfloat16}
    assert "int8" not in storage.NARROW_FLOATS and len(storage.NARROW_FLOATS) == 7
    with pytest.raises(AttributeError, match="no_such_name"):
        lazy_modules.numpy.no_such_name
    assert "imported on first use" in repr(lazy_modules.ml_dtypes)


def test_tensor_names_load_lazily_and_are_their_modules_attributes():
    _, loaded = run("import hurray_decl.hurray.tensor")
    assert {m for m in loaded if m.startswith("hurray_decl.hurray.tensor.")} == set()
    import hurray_decl.hurray.tensor as tensor

    for name, (module_name, _) in type_checking_imports(Path(str(tensor.__file__))).items():
        module = importlib.import_module(module_name)
        assert module_name.startswith("hurray_decl.hurray.tensor."), name
        assert getattr(tensor, name) is getattr(module, name), name
    assert set(tensor.__all__) <= set(dir(tensor))
    with pytest.raises(AttributeError):
        tensor.no_such_name
