"""The HTML page as text: the embedded JSON is the json dump, nothing is fetched, the CLI hooks."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, strategies as st

from hurray_decl.cli import main
from hurray_decl.dump.html import CSP, render_html
from hurray_decl.errors import ARGUMENT, ArgumentError, HurrayDeclError
from hurray_decl.hurray import dump as hexdump
from hurray_decl.hurray.examples import bundled
from hurray_decl.rules import rule

FILES = sorted(p.name for p in bundled().glob("*.bin"))
EXPECT = {e["file"]: e["expect"] for e in json.loads((bundled() / "manifest.json").read_text())["descriptors"]}


def embedded(page: str, element: str = "hexdump-json") -> str:
    """The text of a JSON script element, with the page's one escape (``<`` as ``\\u003c``) undone."""
    text = re.search(rf'<script type="application/json" id="{element}">(.*?)</script>', page, re.DOTALL)[1]
    assert "<" not in text
    return text.replace("\\u003c", "<")


@pytest.mark.parametrize("name", FILES)
def test_page_embeds_exactly_the_json_dump(name):
    dump = hexdump.dump((bundled() / name).read_bytes())
    page = render_html(dump, title=name)
    assert embedded(page) == hexdump.render(dump, "json")
    assert page == hexdump.render(dump, "html").replace("hurray-decl hex dump", name)
    rules = json.loads(embedded(page, "hexdump-rules"))
    if EXPECT[name] is None:
        assert rules == {}
    else:
        assert rules == {EXPECT[name]: {"text": rule(EXPECT[name]).text, "source": rule(EXPECT[name]).source}}


def hostile_dump() -> hexdump.Dump:
    rows = [hexdump.Row(0, 2, "3C 2F", "name</script>", '</script><img src="http://example.invalid/x.png">'),
            hexdump.Row(2, 1, "00", "tail", "<!-- x")]
    return hexdump.Dump(rows, HurrayDeclError("HQ-PB-03", "a </script> in a message", offset=2))


def test_markup_in_values_cannot_end_the_script_element():
    dump = hostile_dump()
    page = render_html(dump, title="<b>title</b>")
    assert embedded(page) == hexdump.render(dump, "json")
    assert "<title>&lt;b&gt;title&lt;/b&gt;</title>" in page


def test_page_references_nothing_outside_itself():
    page = render_html(hexdump.dump((bundled() / FILES[0]).read_bytes()))
    assert f'content="{CSP}"' in page and "default-src 'none'" in CSP
    assert not re.search(r"""(src|href)=["'](?!data:)""", page), "the page links a resource"
    assert not re.search(r"https?://", page.replace("https://json-schema.org", "")), "the page names a URL"
    assert "@import" not in page and "url(" not in page


def test_inspect_prints_the_page(capsys):
    data = "03010000000000000600000001000000ffffffff03000000"
    assert main(["inspect", "--quantization", "--format", "html", data]) == 1
    page = capsys.readouterr().out
    dump = hexdump.dump(bytes.fromhex(data), kind="quantization")
    dump.about.update(file=data, kind="quantization")  # the command line names the input and its kind
    assert embedded(page) == hexdump.render(dump, "json")
    assert f"<title>hurray-decl inspect {data}</title>" in page
    assert hexdump.hexdump(bytes.fromhex(data), kind="quantization", format="html") == render_html(
        hexdump.dump(bytes.fromhex(data), kind="quantization"))


def test_audit_writes_an_index_and_one_page_per_file(tmp_path, capsys):
    """The Hurray corpus's pages beside the index, the onnx-light corpus's in onnx-light/ (its own
    test: tests/test_cli_audit.py), one index for both."""
    out = tmp_path / "pages"
    assert main(["audit", "--format", "html", "-o", str(out)]) == 0
    assert f"{len(FILES) + 102} pages" in capsys.readouterr().out
    index = (out / "index.html").read_text()
    rows = re.findall(r'<tr data-file="([^"]+)" data-verdict="(\w+)"><td><a href="([^"]+)">.*?</a></td>'
                      r"<td>\w+</td><td>([^<]*)</td>", index)
    hurray_rows = [r for r in rows if not r[2].startswith("onnx-light/")]
    assert sorted(r[0] for r in hurray_rows) == FILES and len(rows) == len(FILES) + 102
    for file, verdict, link, code in hurray_rows:
        assert verdict == ("valid" if EXPECT[file] is None else "invalid") and code == (EXPECT[file] or "")
        page = (out / link).read_text()
        assert embedded(page) == hexdump.render(hexdump.dump((bundled() / file).read_bytes()), "json")
    assert sorted(p.name for p in out.iterdir()) == sorted([f"{f}.html" for f in FILES] + ["index.html", "onnx-light"])


def test_audit_html_needs_a_folder(tmp_path, capsys):
    assert main(["audit", "--format", "html"]) == 2
    assert "-o DIR" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["audit", "--format", "html", "-o", str(blocker)]) == 3
    assert "not a folder" in capsys.readouterr().err
    assert blocker.read_text() == "x"


@given(st.binary(max_size=300), st.sampled_from(["tensor", "quantization"]), st.booleans())
def test_any_bytes_make_a_page_embedding_their_json_dump(data, kind, permissive):
    dump = hexdump.dump(data, kind=kind, permissive=permissive)
    assert embedded(render_html(dump)) == hexdump.render(dump, "json")


def test_unusable_arguments_are_refused():
    with pytest.raises(ArgumentError) as info:
        render_html(b"\x00")
    assert info.value.code == ARGUMENT and "render_html(dump=...)" in str(info.value)
    with pytest.raises(ArgumentError):
        render_html(hexdump.dump(b""), title=3)


def test_browser_tests_skip_outside_ci_and_fail_in_ci(monkeypatch, tmp_path):
    from . import conftest

    monkeypatch.setattr(conftest, "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium is not installed"):
        conftest.require_browser()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="chromium is not installed"):
        conftest.require_browser()
