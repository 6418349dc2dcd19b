"""Browser tests: Playwright driving Debian's Chromium (headless) against one `kgrag serve` for the session.

`make test` installs Chromium when it is missing (scripts/browser.sh). Every browser test uses the
`server` and `browser` fixtures below: the server is started (and the corpus ingested) once. While working
on the app, start one yourself (`uv run python -m tests.browser.server`) and pass the line it prints
(`KGRAG_TEST_BROWSER_SERVER='URL SECRET'`) to pytest's environment to skip the start.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

from kgrag_query_api.auth import TokenVerifier
from tests.browser.pages import TIMINGS
from tests.browser.server import Server, start_server, stop_server

CHROMIUM = os.environ.get("KGRAG_TEST_CHROMIUM", "/usr/bin/chromium")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.browser)
            # Whichever browser test runs first also pays for the session's server (ingest, then start), which
            # on a loaded machine can take minutes; start_server has its own deadlines against a hang.
            item.add_marker(pytest.mark.timeout(600))


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    reuse = os.environ.get("KGRAG_TEST_BROWSER_SERVER")  # "URL SECRET": a server you started (tests/browser/server.py)
    if reuse:
        url, secret = reuse.split()
        yield Server(url, TokenVerifier(secret, "kgrag-local", "kgrag", "HS256"), 0.0)
        return
    base = tmp_path_factory.mktemp("browser-server")
    running, proc = start_server(base / "data", base / "serve.log")
    try:
        yield running
    finally:
        stop_server(proc)


# Module scope, not session: while sync_playwright is open its event loop runs on this thread, so every later
# test in the same process that starts one of its own (anyio.run, asyncio.run) would fail.
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
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
    # A script error or a blocked script/style (the CSP) breaks the app silently: every test fails on one.
    broken: list[str] = []
    opened.on("pageerror", lambda err: broken.append(f"uncaught: {err}"))
    opened.on(
        "console",
        lambda msg: broken.append(msg.text) if "Content Security Policy" in msg.text else None,
    )
    try:
        yield opened
    finally:
        context.close()
    assert not broken, broken


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TIMINGS:
        terminalreporter.section("web app page timings (ms)")
        for name, values in TIMINGS.items():
            terminalreporter.write_line(f"{name}: " + ", ".join(f"{k} {v}" for k, v in values.items()))
