"""Browser tests: Playwright driving Debian's Chromium (headless) against one `kgrag serve` for the session.

`make test` installs Chromium when it is missing (scripts/browser.sh). Every browser test uses the
`server` and `browser` fixtures below: the server is started (and the corpus ingested) once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

from tests.browser.server import Server, start_server, stop_server

CHROMIUM = os.environ.get("KGRAG_TEST_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "img"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("browser-server")
    running, proc = start_server(base / "data", base / "serve.log")
    try:
        yield running
    finally:
        stop_server(proc)


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"No Chromium at {CHROMIUM}: run scripts/browser.sh (apt-get install chromium).")
    # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start
    launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
    try:
        yield launched
    finally:
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    opened = context.new_page()
    try:
        yield opened
    finally:
        context.close()


def sign_in(page: Page, server: Server, token: str) -> None:
    """Through the sign-in page, as a person would."""
    page.goto(f"{server.url}/ui/signin")
    page.get_by_label("Bearer token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{server.url}/ui")


def screenshot(page: Page, name: str) -> Path:
    """docs/img/ui-<name>.png: the pages docs/web-app.md shows."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"ui-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
