"""Ask in the web app, see the answer stream in with its citations, open a citation at the quoted bytes."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.pages import ask_streamed, rate_and_open_trace, record_timing, screenshot, sign_in, unnamed_controls
from tests.browser.server import Server

QUESTION = "Who is the current on-call owner of Atlas?"


def test_a_streamed_cited_answer_opens_its_source_at_the_quoted_bytes(page: Page, server: Server) -> None:
    sign_in(page, server, server.token("sam.ortiz", groups=("engineering",)))
    expect(page.locator("#who")).to_contain_text("sam.ortiz")
    record_timing(page, "first page /ui")
    ask_streamed(page, QUESTION)
    sentences = page.locator("#answer-text .sentence")
    assert sentences.count() >= 1
    expect(page.locator("#answer-meta")).to_contain_text("confidence:")
    expect(page.locator("#answer-meta")).to_contain_text("Route:")
    expect(page.get_by_role("link", name="Why this answer")).to_be_visible()
    expect(page.get_by_role("button", name="Helpful", exact=True)).to_be_visible()
    assert unnamed_controls(page) == []
    screenshot(page, "ask")

    first = page.locator("#answer-text .cite").first
    cited_id = first.inner_text().strip("[]")
    quote = page.locator(f"#citation-{cited_id} q").inner_text()
    assert "Kenji Watanabe" in page.locator("#answer-text").inner_text()
    first.click()
    page.wait_for_url("**/ui/documents/**")
    mark = page.locator("mark#cited")
    expect(mark).to_be_visible()
    # The span is in UTF-8 bytes; the corpus quotes 'José Núñez', so a character-offset cut would be shifted
    assert mark.inner_text() == quote
    expect(page.locator("#doc-title")).not_to_be_empty()
    expect(page.locator(".facts")).to_contain_text("Version")
    assert unnamed_controls(page) == []
    page.evaluate("document.body.append(document.createElement('input'))")  # the check's positive control
    assert len(unnamed_controls(page)) == 1
    record_timing(page, "source page /ui/documents")
    screenshot(page, "source")


def test_feedback_on_an_answer_is_recorded(page: Page, server: Server) -> None:
    """On a phone-sized screen, with the keyboard: Enter asks, the page fits the screen's width."""
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, server, server.token("sam.ortiz", groups=("engineering",)))
    page.get_by_label("Question or search terms").fill(QUESTION)
    page.get_by_label("Question or search terms").press("Enter")
    expect(page.locator("#answer-status")).to_have_text("Done.", timeout=60_000)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(page, "ask-phone")
    rate_and_open_trace(page)
    screenshot(page, "trace")
