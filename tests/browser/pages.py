"""What browser tests do on a page: sign in, record timings, write screenshots for docs/web-app.md."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.server import Server

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "img"


def sign_in(page: Page, server: Server, token: str) -> None:
    """Through the sign-in page, as a person would."""
    page.goto(f"{server.url}/ui/signin")
    page.get_by_label("Bearer token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{server.url}/ui")


def ask_streamed(page: Page, question: str) -> None:
    """Ask on the ask page and wait for the streamed answer (`POST /v1/ask` answered as an event stream)."""
    page.get_by_label("Question or search terms").fill(question)
    with page.expect_response(lambda r: r.url.endswith("/v1/ask")) as asked:
        page.get_by_role("button", name="Ask", exact=True).click()
    assert asked.value.headers["content-type"].startswith("text/event-stream")
    expect(page.locator("#answer-status")).to_have_text("Done.", timeout=60_000)


def rate_and_open_trace(page: Page) -> None:
    """On an answered ask page: **Helpful** is recorded (`POST /v1/feedback`), then **Why this answer** opens
    the answer's trace."""
    page.get_by_role("button", name="Helpful", exact=True).click()
    expect(page.locator("#answer-feedback")).to_contain_text("feedback recorded (5/5)")
    page.get_by_role("link", name="Why this answer").click()
    page.wait_for_url("**/ui/traces/**")
    expect(page.locator("#trace")).to_contain_text("ask")


def screenshot(page: Page, name: str) -> Path:
    """docs/img/ui-<name>.png: the pages docs/web-app.md shows."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"ui-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def tap_node(page: Page, node_id: str) -> None:
    """Tap a node of the drawn graph (cytoscape's event, as a click on it). Fired from a timer: a navigation
    started inside page.evaluate itself held the evaluate for about 19 s."""
    page.evaluate(f"setTimeout(() => window.kgragGraph.getElementById({node_id!r}).emit('tap'), 0)")


TIMINGS: dict[str, dict[str, float]] = {}
_NAVIGATION = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const out = {server_ms: nav.responseStart - nav.requestStart, loaded_ms: nav.loadEventEnd - nav.startTime};
  for (const r of performance.getEntriesByType("resource")) {
    if (r.name.includes("/ui/fragments/")) {
      const key = "fragment " + new URL(r.name).pathname.split("/")[3];
      out[key + " server_ms"] = r.responseStart - r.requestStart;
      out[key + " ms"] = r.duration;
    }
  }
  return out;
}"""


def record_timing(page: Page, name: str) -> None:
    """The page's navigation and fragment timings (Navigation/Resource Timing), for the summary; measured,
    never asserted (speed belongs in benchmarks)."""
    page.wait_for_load_state("load")
    TIMINGS[name] = {k: round(float(v), 1) for k, v in page.evaluate(_NAVIGATION).items()}


_UNNAMED = """() => [
  ...[...document.querySelectorAll("input:not([type=hidden]), select, textarea")]
    .filter((e) => !e.labels.length && !e.getAttribute("aria-label")).map((e) => e.outerHTML),
  ...[...document.querySelectorAll("button, a[href]")]
    .filter((e) => !e.textContent.trim() && !e.getAttribute("aria-label")).map((e) => e.outerHTML),
]"""


def unnamed_controls(page: Page) -> list[str]:
    """Form fields without a label and buttons or links without a name: what a screen reader cannot announce."""
    return [str(html) for html in page.evaluate(_UNNAMED)]
