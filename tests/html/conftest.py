"""Headless Chromium (Debian's /usr/bin/chromium) driven by Playwright, for the HTML hex view tests.

Outside CI the browser tests skip, naming what is missing, when the system browser is absent;
in CI (``CI=true``) they fail instead, so a broken setup is never reported as a pass.
Every page a test opens is watched: a request for anything but the page itself fails the test.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 1000}


def require_browser() -> None:
    if CHROMIUM.is_file():
        return
    reason = f"Debian's chromium is not installed ({CHROMIUM}): apt-get install -y chromium (.ci/run does)"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A browser context with a fresh profile, shared by the session."""
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM),
            headless=True, args=FLAGS, viewport=VIEWPORT)
        yield context
        context.close()


@dataclass
class Opened:
    page: Any
    url: str
    allowed: set[str] = field(default_factory=set)  # the page itself, and pages a test follows links to
    requests: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@pytest.fixture
def open_page(chromium: Any, tmp_path: Path) -> Iterator[Callable[..., Opened]]:
    """Write an HTML text to a file and open it from file://; wait until the view is built."""
    opened: list[Opened] = []

    def aborted(route: Any) -> None:  # the request listener below records it; only the page itself loads
        if any(route.request.url in page.allowed for page in opened):
            route.continue_()
        else:
            route.abort()

    chromium.route("**/*", aborted)

    def open_(text: str, name: str = "page.html", viewport: dict | None = None, color_scheme: str = "light",
              wait: bool = True, follows: tuple[str, ...] = ()) -> Opened:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        page = chromium.new_page()
        result = Opened(page, path.as_uri(), {path.as_uri(), *follows})
        opened.append(result)
        page.on("request", lambda request: result.requests.append(request.url))
        page.on("pageerror", lambda err: result.problems.append(f"script error: {err}"))
        page.on("console", lambda message: result.problems.append(f"console {message.type}: {message.text}")
                if message.type in ("error", "warning") else None)
        page.set_viewport_size(viewport or VIEWPORT)
        page.emulate_media(color_scheme=color_scheme)
        page.goto(result.url)
        if wait:
            page.wait_for_selector("html[data-ready]", timeout=30_000)
        return result

    yield open_
    chromium.unroute("**/*", aborted)
    for result in opened:
        others = [url for url in result.requests if url not in result.allowed]
        assert not others, f"{result.url} made requests: {others}"
        assert not result.problems, f"{result.url}: {result.problems}"
        result.page.close()
