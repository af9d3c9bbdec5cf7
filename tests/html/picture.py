"""Make the README's picture of the hex view: ``python -m tests.html.picture docs/hexview.png``.

A real screenshot from the same headless Chromium the browser tests use, of the page that
``hurray-decl inspect --format html`` writes for a bundled invalid example.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from hurray_decl.dump.html import render_html
from hurray_decl.hurray import dump as hexdump
from hurray_decl.hurray.examples import bundled

from .conftest import CHROMIUM, FLAGS

EXAMPLE = "invalid_block_size_not_power_of_two.bin"


def main(target: str) -> None:
    from playwright.sync_api import sync_playwright

    dump = hexdump.dump((bundled() / EXAMPLE).read_bytes())
    with tempfile.TemporaryDirectory() as work, sync_playwright() as playwright:
        page_file = Path(work) / "page.html"
        page_file.write_text(render_html(dump, title=f"hurray-decl inspect {EXAMPLE}"), encoding="utf-8")
        context = playwright.chromium.launch_persistent_context(
            str(Path(work) / "profile"), executable_path=str(CHROMIUM), headless=True, args=FLAGS,
            viewport={"width": 1280, "height": 720})
        page = context.new_page()
        page.goto(page_file.as_uri())
        page.wait_for_selector("html[data-ready]")
        page.hover('#hex .b[data-o="20"]')  # the pointer on shape[0]: its bytes and its row light up
        page.screenshot(path=target)
        context.close()
    print(f"wrote {target}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/hexview.png")
