"""The hex view in headless Chromium, checked through the DOM against the Python dump."""

from __future__ import annotations

import json

import pytest

from hurray_decl.dump.html import render_html
from hurray_decl.hurray import dump as hexdump
from hurray_decl.hurray.examples import bundled
from hurray_decl.rules import rule

from .test_html_dump import EXPECT, FILES, hostile_dump

INVALID = [name for name in FILES if EXPECT[name] is not None]
QUANTIZATION = ["0201000000000000010000000200000003000000", "03010000000000000600000001000000ffffffff03000000",
                "62010000", "0101000000000000000000000000000001"]
CLICKED = ["valid_per_block_affine_int4_f16.bin", "invalid_axis_out_of_range.bin"]  # with the mouse, all fields

HEX_BYTES = "() => [...document.querySelectorAll('#hex .b[data-o]')].map(e => [+e.dataset.o, e.textContent])"
ASCII = "() => [...document.querySelectorAll('#hex .a[data-o]')].map(e => +e.dataset.o)"
SELECTION = """() => ({
  rows: [...document.querySelectorAll('#tree .sel')].map(e => e.dataset.row === undefined ? -1 : +e.dataset.row),
  paths: [...document.querySelectorAll('#tree .sel')].map(e => e.dataset.path),
  bytes: [...document.querySelectorAll('#hex .b.sel')].map(e => +e.dataset.o),
  chars: [...document.querySelectorAll('#hex .a.sel')].map(e => +e.dataset.o),
  shown: [...document.querySelectorAll('#hex .b[data-o]')].map(e => +e.dataset.o)})"""
# Walk the tree with the keyboard, from the first item to the last, recording each step.
WALK = """(selection) => {
  const tree = document.getElementById('tree');
  tree.focus();
  const steps = [];
  for (let guard = 0; guard < 100000; guard++) {
    tree.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowDown', bubbles: true, cancelable: true}));
    const step = (0, eval)(selection)();
    const last = steps[steps.length - 1];
    if (!step.rows.length || (last && last.paths[0] === step.paths[0] && last.rows[0] === step.rows[0])) break;
    steps.push(step);
  }
  return steps; }"""


def example(name: str) -> tuple[bytes, hexdump.Dump]:
    data = (bundled() / name).read_bytes()
    return data, hexdump.dump(data)


def owning_row(dump: hexdump.Dump, offset: int) -> int:
    return next(i for i, r in enumerate(dump.rows) if r.offset <= offset < r.offset + r.size)


def failing_row(dump: hexdump.Dump) -> int:
    """The row the page must mark: the one holding the error's offset, else the last one."""
    offset = dump.error.offset
    rows = [i for i, r in enumerate(dump.rows) if r.offset <= offset < r.offset + r.size]
    return rows[0] if rows else len(dump.rows) - 1


def span(dump: hexdump.Dump, index: int) -> list[int]:
    return list(range(dump.rows[index].offset, dump.rows[index].offset + dump.rows[index].size))


def cases() -> list[tuple[str, bytes, hexdump.Dump]]:
    """Every bundled example, a few quantization payloads, the empty input, and (seeded) examples
    with random bytes changed, cut short or extended: whatever the reader makes of them."""
    import random

    out = [(name, *example(name)) for name in FILES]
    for text in QUANTIZATION:
        data = bytes.fromhex(text)
        out.append((f"quantization-{text[:8]}", data, hexdump.dump(data, kind="quantization")))
    out.append(("empty", b"", hexdump.dump(b"")))
    chance = random.Random(15)
    for i in range(12):
        data = bytearray(example(chance.choice(FILES))[0])
        for _ in range(chance.randint(1, 4)):
            data[chance.randrange(len(data))] = chance.randrange(256)
        data = bytes(data[:chance.randint(1, len(data))] if i % 3 == 1 else data + bytes(i % 3 * 7))
        out.append((f"mutant-{i}", data, hexdump.dump(data, permissive=i % 2 == 0)))
    return out


CASES = cases()


@pytest.mark.parametrize("name, data, dump", CASES, ids=[c[0] for c in CASES])
def test_every_byte_appears_exactly_once_and_every_field_selects_its_bytes(open_page, name, data, dump):
    view = open_page(render_html(dump, title=name), name=f"{name}.html").page
    shown = view.evaluate(HEX_BYTES)
    assert sorted(o for o, _ in shown) == list(range(len(data))), "each offset once, none missing"
    assert all(text == f"{data[o]:02X}" for o, text in shown)
    assert sorted(view.evaluate(ASCII)) == list(range(len(data)))

    steps = view.evaluate(WALK, SELECTION)
    leaves = [s["rows"][0] for s in steps if s["rows"][0] >= 0]
    assert leaves == list(range(len(dump.rows))), "the keyboard visits every field once, in byte order"
    for step in steps:
        assert len(step["rows"]) == 1
        if step["rows"][0] >= 0:
            row = dump.rows[step["rows"][0]]
            assert step["paths"] == [row.field]
            want = span(dump, step["rows"][0])
        else:  # a folded section: the bytes of every field under it
            prefix = step["paths"][0]
            inside = [r for r in dump.rows if r.field.startswith(prefix + ".") or r.field.startswith(prefix + "[")]
            assert inside, f"group {prefix} holds no field"
            want = [o for r in inside for o in range(r.offset, r.offset + r.size)]
            assert want == list(range(want[0], want[-1] + 1)), "a section's fields are contiguous"
        assert sorted(step["bytes"]) == [o for o in want if o in set(step["shown"])]
        assert sorted(step["chars"]) == sorted(step["bytes"])


@pytest.mark.parametrize("name", CLICKED)
def test_clicking_fields_and_bytes_links_both_ways(open_page, name):
    data, dump = example(name)
    view = open_page(render_html(dump, title=name), viewport={"width": 1400, "height": 2000}).page
    for index in range(len(dump.rows)):
        view.click(f'#tree [data-row="{index}"] .value')
        state = view.evaluate(SELECTION)
        assert state["rows"] == [index] and sorted(state["bytes"]) == span(dump, index)
    for offset in range(0, len(data), 4):
        view.click(f'#hex .b[data-o="{offset}"]')
        state = view.evaluate(SELECTION)
        assert state["rows"] == [owning_row(dump, offset)]
        assert sorted(state["bytes"]) == span(dump, owning_row(dump, offset))
    view.hover(f'#hex .a[data-o="{len(data) - 1}"]')
    hovered = view.evaluate("() => [...document.querySelectorAll('#tree .row.hov')].map(e => +e.dataset.row)")
    assert hovered == [owning_row(dump, len(data) - 1)]
    view.hover('#tree [data-row="0"] .name')
    assert view.evaluate("() => [...document.querySelectorAll('#hex .b.hov')].map(e => +e.dataset.o)") == span(dump, 0)


@pytest.mark.parametrize("name", INVALID)
def test_failing_field_is_marked_with_the_manifest_rule_and_in_sight(open_page, name):
    _, dump = example(name)
    code = EXPECT[name]
    view = open_page(render_html(dump, title=name)).page
    marked = view.evaluate("""() => [...document.querySelectorAll('#tree .row.fail')].map(e => ({
        row: +e.dataset.row, code: e.dataset.code, rule: e.querySelector('.rule').textContent}))""")
    assert marked == [{"row": failing_row(dump), "code": code, "rule": code}]
    errs = view.evaluate("() => [...document.querySelectorAll('#hex .b.err')].map(e => +e.dataset.o)")
    assert errs == span(dump, failing_row(dump))
    problem = view.evaluate("""() => { const p = document.getElementById('problem');
        return {hidden: p.hidden, code: p.querySelector('.code').textContent,
                message: p.querySelector('.message').textContent,
                rule: p.querySelector('.rule-text').textContent}; }""")
    assert problem == {"hidden": False, "code": code, "message": str(dump.error), "rule": rule(code).text}
    assert view.text_content("#verdict") == f"invalid {code}"
    assert in_sight(view, "#tree .row.fail", "#tree") and in_sight(view, "#hex .b.err", "#hex")


def in_sight(view, element: str, box: str) -> bool:
    return view.evaluate("""([element, box]) => {
        const e = document.querySelector(element).getBoundingClientRect();
        const b = document.querySelector(box).getBoundingClientRect();
        return e.top >= b.top && e.bottom <= b.bottom; }""", [element, box])


def test_valid_page_marks_nothing(open_page):
    _, dump = example("valid_row_major.bin")
    view = open_page(render_html(dump)).page
    assert view.text_content("#verdict") == "valid"
    assert view.evaluate("() => document.getElementById('problem').hidden")
    assert view.evaluate("() => document.querySelectorAll('.fail, .err, .holds-fail').length") == 0


def test_search_filters_by_path_and_by_value(open_page):
    _, dump = example("valid_per_block_affine_int4_f16.bin")
    view = open_page(render_html(dump)).page
    listed = "() => [...document.querySelectorAll('#tree [data-item]')].map(e => +e.dataset.row)"
    for query in ("BYTE_SIZE", "float16", "quantization."):
        view.press("body", "/")
        assert view.evaluate("() => document.activeElement.id") == "search"
        view.fill("#search", query)
        view.wait_for_function("q => document.getElementById('matches').textContent.endsWith(`\u201c${q}\u201d`)",
                               arg=query)
        want = [i for i, r in enumerate(dump.rows) if query.lower() in (r.field + "\n" + r.value).lower()]
        assert want and view.evaluate(listed) == want
        assert view.text_content("#matches") == f"{len(want)} of {len(dump.rows)} fields match \u201c{query}\u201d"
    view.press("#search", "Escape")
    assert len(view.evaluate(listed)) > len(dump.rows)  # the whole tree again, with its sections


def test_sections_fold_by_path_prefix(open_page):
    _, dump = example("valid_csf.bin")
    view = open_page(render_html(dump), viewport={"width": 1400, "height": 2000}).page
    paths = "() => [...document.querySelectorAll('#tree [data-item]')].map(e => e.dataset.path)"
    everything = view.evaluate(paths)
    assert "buffers" in everything and "buffers[3]" in everything and "layout" in everything
    view.click('#tree [data-path="buffers[3]"] .tog')
    folded = view.evaluate(paths)
    assert not [p for p in folded if p.startswith("buffers[3].")] and "buffers[4].byte_size" in folded
    view.keyboard.press("Enter")  # the folded section is selected: Enter unfolds it
    assert view.evaluate(paths) == everything
    view.click('#tree [data-path="buffers"] .name')
    view.keyboard.press("ArrowLeft")
    assert not [p for p in view.evaluate(paths) if p.startswith("buffers[")]
    view.keyboard.press("ArrowRight")
    view.click("#fold")
    assert view.evaluate(paths) == [p for p in everything if "." not in p and "[" not in p]
    view.click("#unfold")
    assert view.evaluate(paths) == everything


def test_keyboard_jumps_to_the_failing_field(open_page):
    _, dump = example("invalid_block_size_not_power_of_two.bin")
    view = open_page(render_html(dump)).page
    view.click('#tree [data-row="0"] .value')
    view.keyboard.press("End")
    assert view.evaluate(SELECTION)["rows"] == [len(dump.rows) - 1]
    view.keyboard.press("e")
    assert view.evaluate(SELECTION)["rows"] == [failing_row(dump)]
    view.keyboard.press("Home")
    assert view.evaluate(SELECTION)["rows"] == [0]


def test_a_long_value_is_cut_in_its_cell_and_found_by_search(open_page):
    payload = bytes(range(256)) * 4
    dump = hexdump.Dump([hexdump.Row(0, len(payload), payload.hex(" ").upper(), "payload",
                                     payload.hex(" ").upper())], None)
    view = open_page(render_html(dump)).page
    cell = view.text_content('#tree [data-row="0"] .value')
    assert len(cell) < 300 and cell.endswith("\u2026") and payload.hex(" ").upper().startswith(cell[:-1])
    view.fill("#search", "FD FE FF")  # bytes at the very end of the value
    view.wait_for_function("() => document.getElementById('matches').textContent.startsWith('1 of 1')")


def test_markup_in_a_dump_is_shown_as_text_and_fetches_nothing(open_page):
    opened = open_page(render_html(hostile_dump()))
    view = opened.page
    values = view.evaluate("() => [...document.querySelectorAll('#tree .value')].map(e => e.textContent)")
    assert values == [r.value for r in hostile_dump().rows]
    assert view.evaluate("() => document.querySelectorAll('img').length") == 0
    assert view.evaluate("() => performance.getEntriesByType('resource').length") == 0
    assert opened.requests == [opened.url]
    embedded = view.evaluate("() => JSON.parse(document.getElementById('hexdump-json').textContent)")
    assert embedded == json.loads(hexdump.render(hostile_dump(), "json"))


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_colours_follow_the_system_setting(open_page, scheme):
    from hurray_decl.dump.html import COLOURS

    view = open_page(render_html(example("valid_row_major.bin")[1]), color_scheme=scheme).page
    background = view.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert background == "rgb({}, {}, {})".format(*rgb(COLOURS[scheme]["bg"]))


def rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


# --- screenshots: the colours a reader sees -----------------------------------------------------

BOXES = """() => { const pane = document.getElementById('hex').getBoundingClientRect();
  return [...document.querySelectorAll('#hex .b[data-o]')].map(e => { const r = e.getBoundingClientRect();
    return [+e.dataset.o, r.left - pane.left, r.top - pane.top, r.width, r.height]; }); }"""


def share(image, box, colour: tuple[int, int, int]) -> float:
    """The share of a byte's box (1 px inset) painted exactly ``colour`` (within 3 per channel)."""
    _, x, y, w, h = box
    xs = range(int(x) + 1, min(image.width, int(x + w) - 1))
    ys = range(int(y) + 1, min(image.height, int(y + h) - 1))
    hits = sum(all(abs(a - b) <= 3 for a, b in zip(image.rgb(i, j), colour)) for j in ys for i in xs)
    return hits / max(1, len(xs) * len(ys))


def screenshot(view, tmp_path, name: str):
    from .png import decode

    path = tmp_path / f"{name}.png"
    view.locator("#hex").screenshot(path=str(path))
    return decode(path.read_bytes())


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_screenshot_paints_the_failing_bytes_in_the_error_colour(open_page, tmp_path, scheme):
    from hurray_decl.dump.html import COLOURS

    _, dump = example("invalid_block_size_not_power_of_two.bin")
    view = open_page(render_html(dump), color_scheme=scheme).page
    image = screenshot(view, tmp_path, f"invalid-{scheme}")
    failing = set(span(dump, failing_row(dump)))
    error = rgb(COLOURS[scheme]["error"])
    boxes = view.evaluate(BOXES)
    assert len(boxes) == len(dump.rows and range(dump.rows[-1].offset + dump.rows[-1].size))
    for box in boxes:
        if box[0] in failing:
            assert share(image, box, error) > 0.5, f"byte {box[0]} is not in the error colour"
        else:
            assert share(image, box, error) < 0.02, f"byte {box[0]} is painted in the error colour"


def test_screenshot_of_a_valid_dump_shows_no_error_and_the_selection(open_page, tmp_path):
    from hurray_decl.dump.html import COLOURS

    _, dump = example("valid_per_block_affine_int4_f16.bin")
    view = open_page(render_html(dump)).page
    error, selected = rgb(COLOURS["light"]["error"]), rgb(COLOURS["light"]["selected"])
    image = screenshot(view, tmp_path, "valid")
    boxes = view.evaluate(BOXES)
    assert all(share(image, box, error) < 0.02 for box in boxes)
    index = next(i for i, r in enumerate(dump.rows) if r.field == "quantization.block_size")
    view.click(f'#tree [data-row="{index}"] .value')
    view.mouse.move(0, 0)
    image = screenshot(view, tmp_path, "valid-selected")
    for box in boxes:
        painted = share(image, box, selected) > 0.5
        assert painted == (box[0] in span(dump, index)), f"byte {box[0]}"


# --- a dump of 100,000 rows ---------------------------------------------------------------------

LARGE_BLOCKS = 50_000  # two rows each
SCROLL = """async (positions) => {
  const frame = () => new Promise(resolve => requestAnimationFrame(() => resolve()));
  const hex = document.getElementById('hex'), tree = document.getElementById('tree');
  const out = [];
  for (const f of positions) {
    const start = performance.now();
    hex.scrollTop = f * (hex.scrollHeight - hex.clientHeight);
    tree.scrollTop = f * (tree.scrollHeight - tree.clientHeight);
    await frame(); await frame();
    out.push({ms: performance.now() - start, nodes: document.getElementsByTagName('*').length,
              bytes: [...hex.querySelectorAll('.b[data-o]')].map(e => [+e.dataset.o, e.textContent]),
              rows: [...tree.querySelectorAll('[data-row]')].map(e => +e.dataset.row)});
  }
  return out; }"""


def large_dump() -> tuple[bytes, hexdump.Dump]:
    import numpy as np

    from hurray_decl.errors import HurrayDeclError

    data = np.random.default_rng(15).integers(0, 256, size=10 * LARGE_BLOCKS, dtype=np.uint8).tobytes()
    rows = []
    for i in range(LARGE_BLOCKS):
        o = 10 * i
        rows.append(hexdump.Row(o, 2, data[o:o + 2].hex(" ").upper(), f"blocks[{i}].scale", f"{i / 7:.6g}"))
        rows.append(hexdump.Row(o + 2, 8, data[o + 2:o + 10].hex(" ").upper(), f"blocks[{i}].codes",
                                data[o + 2:o + 10].hex(" ").upper()))
    failing = rows[2 * LARGE_BLOCKS - 9]
    return data, hexdump.Dump(rows, HurrayDeclError("HQ-PB-03", "a synthetic failing field", offset=failing.offset + 3))


def chromium_memory() -> dict[str, tuple[int, int]]:
    """RSS and PSS in bytes of the Chromium processes this test run started, by process type
    (``browser``, ``renderer``, ``gpu-process``, ...), the largest process of each type."""
    import os
    from pathlib import Path

    parents = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                parents[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    mine, changed = {os.getpid()}, True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in mine and pid not in mine:
                mine.add(pid)
                changed = True
    found: dict[str, tuple[int, int]] = {}
    for pid in mine - {os.getpid()}:
        try:
            if "chrom" not in Path(f"/proc/{pid}/comm").read_text():
                continue
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").split()  # Chromium retitles
            kind = next((a[7:].decode() for a in args if a.startswith(b"--type=")), "browser")
            sizes = {line.split(":")[0]: int(line.split()[1]) * 1024
                     for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]}
        except OSError:
            continue
        if sizes["Pss"] > found.get(kind, (0, 0))[1]:
            found[kind] = (sizes["Rss"], sizes["Pss"])
    return found


def test_a_dump_of_100000_rows_opens_fast_and_scrolls(open_page, chromium):
    import random
    import time

    data, dump = large_dump()
    assert len(dump.rows) == 100_000
    page = render_html(dump, title="100,000 rows")
    start = time.perf_counter()
    opened = open_page(page, name="large.html")
    seconds = time.perf_counter() - start
    view = opened.page
    ready_ms = float(view.evaluate("() => document.documentElement.dataset.ready"))
    session = chromium.new_cdp_session(view)
    session.send("Performance.enable")
    metrics = {m["name"]: m["value"] for m in session.send("Performance.getMetrics")["metrics"]}
    memory = chromium_memory()
    rss, pss = memory["renderer"]
    print(f"\n100,000-row page ({len(page) / 1e6:.1f} MB of HTML, {len(data)} bytes of input): open {seconds:.2f} s "
          f"(goto to built view), built at {ready_ms:.0f} ms after navigation start; JS heap "
          f"{metrics['JSHeapUsedSize'] / 2**20:.0f} MiB used of {metrics['JSHeapTotalSize'] / 2**20:.0f} MiB; "
          f"DOM nodes {metrics['Nodes']:.0f}; the page's renderer process RSS {rss / 2**20:.0f} MiB, "
          f"PSS {pss / 2**20:.0f} MiB; largest process of each kind (RSS, PSS MiB): "
          + ", ".join(f"{k} {r / 2**20:.0f}/{p / 2**20:.0f}" for k, (r, p) in sorted(memory.items())))
    assert seconds < 10, "a generous bound: the figure is reported above"
    assert metrics["JSHeapUsedSize"] < 500 * 2**20 and pss < 500 * 2**20
    assert in_sight(view, "#tree .row.fail", "#tree") and in_sight(view, "#hex .b.err", "#hex")
    assert view.evaluate("() => +document.querySelector('#tree .row.fail').dataset.row") == failing_row(dump)

    from hurray_decl.dump.html import ROW_HEIGHTS

    spacer = view.evaluate("() => document.querySelector('#tree .spacer').offsetHeight")
    items = len(dump.rows) + LARGE_BLOCKS + 1  # a group per block, and "blocks"
    assert spacer < items * ROW_HEIGHTS["tree-row"], "the tree is taller than the spacer: its scroll is scaled"
    positions = [0.0, 1.0, 0.5] + [random.Random(15).random() for _ in range(12)]
    frames = view.evaluate(SCROLL, positions)
    for frame in frames:
        offsets = [o for o, _ in frame["bytes"]]
        assert offsets and offsets == list(range(offsets[0], offsets[0] + len(offsets))), "contiguous, each once"
        assert all(text == f"{data[o]:02X}" for o, text in frame["bytes"])
        assert frame["rows"] == list(range(frame["rows"][0], frame["rows"][0] + len(frame["rows"])))
        assert frame["nodes"] < 5000, "only the rows in sight are in the DOM"
    assert frames[0]["bytes"][0][0] == 0 and frames[1]["bytes"][-1][0] == len(data) - 1
    assert frames[1]["rows"][-1] == len(dump.rows) - 1
    slowest = max(f["ms"] for f in frames)
    print(f"scrolling: slowest jump {slowest:.0f} ms over {len(frames)} jumps (two frames each)")
    assert slowest < 1000


def test_audit_index_links_each_page_with_its_verdict(open_page, tmp_path):
    from hurray_decl.cli import main

    assert main(["audit", "--format", "html", "-o", str(tmp_path)]) == 0
    name = "invalid_scale_index_aliases_data.bin"
    target = (tmp_path / f"{name}.html").as_uri()
    view = open_page((tmp_path / "index.html").read_text(), name="index.html", follows=(target,),
                     wait=False).page
    listed = view.evaluate("""() => [...document.querySelectorAll('section[data-kind="descriptor"] tbody tr')]
        .map(r => [r.dataset.file, r.children[1].textContent, r.children[2].textContent,
                   r.querySelector('a').getAttribute('href')])""")
    assert listed == [[f, "valid" if EXPECT[f] is None else "invalid", EXPECT[f] or "", f"{f}.html"] for f in FILES]
    onnx_light = view.evaluate("""() => [...document.querySelectorAll('section[data-kind="onnx-light"] tbody tr a')]
        .map(a => a.getAttribute('href'))""")
    assert len(onnx_light) == 102 and all(link.startswith("onnx-light/") for link in onnx_light)
    view.click(f'a[href="{name}.html"]')
    view.wait_for_selector("html[data-ready]")
    assert view.url == target
    assert view.evaluate("() => document.querySelector('#tree .row.fail').dataset.code") == EXPECT[name]


def test_an_error_without_an_offset_is_shown_but_marks_no_field(open_page):
    from hurray_decl.errors import HurrayDeclError

    _, valid = example("valid_row_major.bin")
    dump = hexdump.Dump(valid.rows, HurrayDeclError("HT-HDR-08", "no byte position"))
    view = open_page(render_html(dump)).page
    assert view.text_content("#verdict") == "invalid HT-HDR-08"
    assert view.evaluate("() => document.querySelectorAll('.fail, .err, .holds-fail').length") == 0
    assert view.evaluate("() => [document.getElementById('problem').hidden, "
                         "document.querySelector('#problem button').hidden]") == [False, True]
    assert view.text_content("#problem .rule-text") == rule("HT-HDR-08").text


def test_offsets_and_sizes_of_a_large_file_are_shown_whole(open_page):
    """A field of 9,830,400 bytes and one at byte 12,345,678: the tree's offset and size cells show
    every digit (their columns as wide as the longest), never an ellipsis ("9830\u2026")."""
    rows = [hexdump.Row(0, 8, "48 52 52 59 46 49 4C 45", "magic", "HRRYFILE"),
            hexdump.Row(64, 9_830_400, "00 00", "tensors[0].data", "(bytes)"),
            hexdump.Row(12_345_678, 4, "00 00 00 00", "tensors[1].crc", "0")]
    view = open_page(render_html(hexdump.Dump(rows, None), title="large offsets")).page
    cells = view.evaluate("""() => [...document.querySelectorAll('#tree [data-item] .num')].map(e => (
        {text: e.textContent, fits: e.scrollWidth <= e.clientWidth}))""")
    texts = [cell["text"] for cell in cells]
    assert {"9830400", "12345678"} <= set(texts)
    assert all(cell["fits"] for cell in cells), cells
