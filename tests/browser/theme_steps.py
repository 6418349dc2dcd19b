"""The themes pages as a reader sees them, the same on both runtimes."""

from __future__ import annotations

import httpx
from playwright.sync_api import Locator, Page, expect

from tests.browser.server import Server

# Listing the caller's communities checks every member's visibility: seconds on a loaded machine.
THEMES_MS = 30_000


def themes_page(page: Page, server: Server) -> str:
    """The themes list, once loaded; the page's HTML."""
    page.goto(f"{server.url}/ui/themes")
    expect(page.locator("#themes")).not_to_contain_text("Loading", timeout=THEMES_MS)
    return page.content()


def open_first_theme(page: Page, named: str | None = None) -> Locator:
    """From the themes list, the first theme (whose title names `named`): a summary citing its sources, and
    members. (A theme none of whose current claims the caller may quote has no summary.)"""
    page.locator("ul.themes a", has_text=named).first.click()
    page.wait_for_url("**/ui/themes/com_*")
    theme = page.locator("article.theme")
    expect(theme.locator("ol.citations li").first).to_be_visible(timeout=THEMES_MS)
    expect(theme.locator("ul.members li").first).to_be_visible()
    expect(theme).not_to_contain_text("No summary yet")
    return theme


def open_theme(page: Page, server: Server, community_id: str) -> None:
    """A theme's page, once it shows members or the API's refusal (COMMUNITY_NOT_FOUND, nothing else)."""
    page.goto(f"{server.url}/ui/themes/{community_id}")
    expect(page.locator("article.theme ul.members li, .error").first).to_be_visible(timeout=THEMES_MS)
    if page.locator(".error").count():
        expect(page.locator(".error")).to_contain_text("COMMUNITY_NOT_FOUND")


def community_of(server: Server, entity_id: str) -> str:
    """The top-level community an entity is a member of, as the admin sees it."""
    answer = httpx.get(
        f"{server.url}/v1/communities",
        params={"level": 0, "limit": 200},
        headers={"Authorization": f"Bearer {server.admin}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    found = [c for c in answer.json()["communities"] if entity_id in {m["entity_id"] for m in c["members"]}]
    assert len(found) == 1, f"{entity_id} is in {len(found)} top-level communities"
    return str(found[0]["community_id"])
