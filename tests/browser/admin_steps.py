"""What an admin does in the browser, the same on both runtimes: split a merge, merge by hand, preview a
re-extraction. Each step checks what the page answers."""

from __future__ import annotations

import re

from playwright.sync_api import Locator, Page, expect

from tests.browser.server import Server


def split_merge_of(page: Page, server: Server, entity_id: str) -> str:
    """Split the automatic merge that made `entity_id`, on the merge log; its merge id."""
    page.goto(f"{server.url}/ui/admin/merges")
    row = page.locator("tr", has=page.locator(f"a[href='/ui/entities/{entity_id}']")).first
    expect(row).to_contain_text("auto")
    merge_id = str(row.get_attribute("data-merge"))
    row.get_by_role("button", name="Split").click()
    expect(page.locator(".notice")).to_contain_text("are separate again")
    return merge_id


def merge_by_hand(page: Page, entity_ids: list[str], reason: str) -> Locator:
    """Merge on the merge log's form; the log's newest row, which must show the override and its reason."""
    page.get_by_label("Entity ids").fill(" ".join(entity_ids))
    page.get_by_label("Reason").fill(reason)
    page.get_by_role("button", name="Merge", exact=True).click()
    expect(page.locator(".notice")).to_contain_text("Merged as mrg_")
    newest = page.locator("#merges tbody tr").first
    expect(newest).to_contain_text("override")
    expect(newest).to_contain_text(reason)
    return newest


def preview_reextraction(page: Page, server: Server, *, source: str, at_least: int) -> Locator:
    """A dry run of a re-extraction of one source: at least `at_least` chunks in scope, a time estimate, and
    the button that would run it."""
    page.goto(f"{server.url}/ui/admin/extraction")
    page.get_by_label("Extractor version").fill("ui-preview")
    page.get_by_label("Sources (optional)").fill(source)
    page.get_by_role("button", name="Preview").click()
    preview = page.locator("section.run")
    expect(preview).to_contain_text("Preview")
    in_scope = preview.locator("td[data-field=chunks_in_scope]").inner_text()
    assert re.fullmatch(r"\d+", in_scope) and int(in_scope) >= at_least, in_scope
    expect(preview.locator("td[data-field=estimated_seconds]")).not_to_have_text("—")
    expect(preview.get_by_role("button", name="Run it")).to_be_visible()
    return preview


def preview_community_rebuild(page: Page, server: Server) -> Locator:
    """The community rebuild's dry run: what it reclusters, and (no LLM on the test servers) no summary calls."""
    page.goto(f"{server.url}/ui/admin/communities")
    page.get_by_role("button", name="Preview").click()
    plan = page.locator("#rebuild-result section.run")
    expect(plan).to_contain_text("Preview")
    communities = plan.locator("td[data-field=communities]").inner_text()
    assert re.fullmatch(r"\d+", communities) and int(communities) >= 1, communities
    expect(plan.locator("td[data-field=calls]")).to_have_text("0")  # no LLM on this server: no calls
    expect(plan).to_contain_text("No LLM configured")
    return plan


def run_community_rebuild(page: Page, plan: Locator) -> None:
    """Rebuild from the preview; the page polls the run until it reports the communities it wrote."""
    plan.get_by_role("button", name="Rebuild").click()
    done = page.locator("#rebuild-result section.run[data-status=succeeded]")
    expect(done).to_contain_text("Communities written", timeout=60_000)
    assert int(done.locator("td[data-field=communities_written]").inner_text()) >= 1
