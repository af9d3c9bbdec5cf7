"""The command line as a new user meets it: each case here is a surprise the command line used
to give (an option ignored, a name cut, a Python error no one catches) and what it gives now."""

from __future__ import annotations

import errno
from pathlib import Path

import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl import cli
from hurray_decl.errors import ARGUMENT, HurrayDeclError
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


# ------------------------------------------------------------------ options that do not apply, argument errors


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("ux")
    np.save(folder / "a.npy", np.linspace(-1, 1, 4096, dtype=np.float32).reshape(64, 64))
    assert cli.main(["quantize", str(folder / "a.npy"), "-o", str(folder / "a.hrry")]) == 0
    return {"npy": folder / "a.npy", "hrry": folder / "a.hrry", "folder": folder}


def refused(argv: list[str], capsys, *words: str) -> str:
    """Run ``argv``: exit 2, one line naming ``words``; returns that line."""
    status = cli.main(argv)
    err = capsys.readouterr().err
    assert status == 2, err
    assert len(err.strip().splitlines()) == 1 and all(word in err for word in words), err
    return err


def test_scale_type_without_to_ort_is_refused(inputs, tmp_path, capsys) -> None:
    out = tmp_path / "m.onnx"
    refused(["convert", str(inputs["hrry"]), "--to", "onnx-light", "--scale-type", "float16", "-o", str(out)], capsys,
            "--scale-type", "--to ort")
    assert not out.exists()
    assert cli.main(["convert", str(inputs["hrry"]), "--to", "ort", "--scale-type", "float32", "-o", str(out)]) == 0


@pytest.mark.parametrize("scheme", ["per_tensor_affine", "per_channel_affine"])
def test_block_size_with_a_scheme_without_blocks_is_refused(inputs, tmp_path, capsys, scheme) -> None:
    out = tmp_path / "q.hrry"
    refused(["quantize", str(inputs["npy"]), "--scheme", scheme, "--block-size", "32", "-o", str(out)], capsys,
            "--block-size", scheme)
    assert not out.exists()


def test_axis_with_a_per_tensor_scheme_is_refused(inputs, tmp_path, capsys) -> None:
    refused(["quantize", str(inputs["npy"]), "--scheme", "per_tensor_affine", "--axis", "0", "-o",
             str(tmp_path / "q.hrry")], capsys, "--axis")


@pytest.mark.parametrize("storage", ["float99", "float16"])
def test_a_storage_the_scheme_does_not_store_is_a_usage_error(inputs, tmp_path, capsys, storage) -> None:
    """--storage float99 used to exit 1 ("1 skipped; nothing written"), as if the input were invalid."""
    out = tmp_path / "q.hrry"
    refused(["quantize", str(inputs["npy"]), "--storage", storage, "-o", str(out)], capsys, "--storage", storage,
            "int4")
    assert not out.exists()


def test_audit_o_of_the_text_format_is_refused(tmp_path, capsys) -> None:
    refused(["audit", "-o", str(tmp_path / "pages")], capsys, "-o", "--format html")
    assert not (tmp_path / "pages").exists()


# ------------------------------------------------------------------ extract, --region


def test_extract_makes_its_folder_as_convert_does(inputs, tmp_path, capsys) -> None:
    out = tmp_path / "new"
    assert cli.main(["extract", str(inputs["hrry"]), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["a.buffer0.bin", "a.buffer1.bin", "a.descriptor.bin"]
    assert [p.name for p in tmp_path.iterdir()] == ["new"]  # no staging folder left
    capsys.readouterr()
    assert cli.main(["extract", str(inputs["hrry"]), "-o", str(tmp_path / "missing" / "new")]) == 3
    assert "no such folder" in capsys.readouterr().err


def test_a_refused_extract_leaves_no_folder(tmp_path, capsys) -> None:
    out = tmp_path / "new"
    assert cli.main(["extract", str(FILES / "i07-crc-mismatch.hrry"), "-o", str(out)]) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("region, words", [("0:100,0:10", "100 is past dimension 0"), ("64", "64 is past"),
                                           ("...,70", "70 is past dimension 1"), ("0,0,0", "3 indices"),
                                           ("0:8:0", "step of 0")])
def test_a_region_past_the_shape_is_a_usage_error(inputs, tmp_path, capsys, region, words) -> None:
    """NumPy clips a slice past the end: the region used to be cut silently."""
    out = tmp_path / "r.npy"
    refused(["dequantize", str(inputs["hrry"]), f"--region={region}", "-o", str(out)], capsys, "--region", words)
    assert not out.exists()
    assert cli.main(["dequantize", str(inputs["hrry"]), "--region=0:64,-3:", "-o", str(out)]) == 0
    assert np.load(out).shape == (64, 3)


# ------------------------------------------------------------------ rule, -V


def test_rule_ids_are_read_whatever_their_case(capsys) -> None:
    assert cli.main(["rule", "hq-pb-03", "Hq-Pb-03"]) == 0
    out = capsys.readouterr().out
    assert out.count("HQ-PB-03 (") == 2
    refused(["rule", "hq-pb-99"], capsys, "hq-pb-99")


def test_dash_v_prints_the_version(capsys) -> None:
    from hurray_decl import __version__

    with pytest.raises(SystemExit) as stop:
        cli.build_parser().parse_args(["-V"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"hurray-decl {__version__}"
    assert cli.main(["-V"]) == 0


# ------------------------------------------------------------------ Python errors users catch


def test_a_missing_file_is_a_file_not_found_error_keeping_its_code(tmp_path) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        hd.load(tmp_path / "missing.hrry")
    err = caught.value
    assert isinstance(err, HurrayDeclError) and err.code == ARGUMENT and err.path == "path"
    assert err.errno == errno.ENOENT and err.filename == str(tmp_path / "missing.hrry")
    assert str(err).startswith("[ARGUMENT] path: cannot open ")
    with pytest.raises(IsADirectoryError) as folder:
        hd.open(tmp_path)
    assert folder.value.code == ARGUMENT and isinstance(folder.value, ValueError)  # as before: a ValueError too


def test_a_missing_name_is_a_key_error_keeping_its_code(inputs) -> None:
    f = hd.open(inputs["hrry"])
    with pytest.raises(KeyError) as caught:
        f["nope"]
    err = caught.value
    assert isinstance(err, HurrayDeclError) and err.code == ARGUMENT and err.actual == "nope"
    assert str(err).startswith("[ARGUMENT] name: no tensor of that name") and "expected a" in str(err)
    with pytest.raises(KeyError):
        hd.load(inputs["hrry"], names=["a", "nope"])


def test_file_get_is_dict_get(inputs) -> None:
    f = hd.open(inputs["hrry"])
    assert f.get("nope") is None and f.get("nope", 7) == 7
    assert f.get("a").name == "a" and f.get("a").shape == f["a"].shape
