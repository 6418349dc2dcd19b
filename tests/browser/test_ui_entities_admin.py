"""Entity pages, the neighbourhood graph and the admin pages in a real browser, on the session's server.

A few records are added to the bundled documents: two public ones about Tern Foods written the same day
with different SLAs (a conflict), served at the site TRN-1; one readable by leadership only about Gannet
Capital, served at the same site (the restricted entity); two spellings of one vendor that resolution
merges on its own (what the admin splits and merges again).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.admin_steps import (
    merge_by_hand,
    preview_community_rebuild,
    preview_reextraction,
    run_community_rebuild,
    split_merge_of,
)
from tests.browser.pages import record_timing, screenshot, sign_in, tap_node
from tests.browser.server import Server
from tests.browser.theme_steps import THEMES_MS, community_of, open_first_theme, open_theme, themes_page

DAY = "2025-07-01T00:00:00Z"
RESTRICTED = "Gannet Capital"
RECORDS: list[dict[str, Any]] = [
    {
        "doc_id": "ui-tern-a",
        "name": "Tern Foods",
        "kind": "customer",
        "fields": "sla: 99.9%\nsites: TRN-1\nsystems: Beacon",
    },
    {"doc_id": "ui-tern-b", "name": "Tern Foods", "kind": "customer", "fields": "sla: 99.5%\nsites: TRN-1"},
    {
        "doc_id": "ui-gannet",
        "name": RESTRICTED,
        "kind": "customer",
        "fields": "sla: 98%\nsites: TRN-1",
        "acl": ["leadership"],
    },
    {
        "doc_id": "ui-heron-a",
        "name": "Heron Freight Services",
        "kind": "vendor",
        "fields": "vendor_of: Tern Foods\nsites: TRN-1",
    },
    {
        "doc_id": "ui-heron-b",
        "name": "Heron Freight",
        "kind": "vendor",
        "fields": "vendor_of: Tern Foods\nsites: TRN-1",
    },
]


def _ingest(server: Server, record: dict[str, Any]) -> None:
    body: dict[str, Any] = {
        "doc_id": record["doc_id"],
        "source": "records",
        "title": f"{record['kind'].title()}: {record['name']}",
        "media_type": "text/x-kgrag-record",
        "text": f"record_type: {record['kind']}\nname: {record['name']}\n{record['fields']}\n",
        "modified_at": DAY,
    }
    if "acl" in record:
        body["acl"] = {"groups": record["acl"]}
    answer = httpx.post(
        f"{server.url}/v1/ingest/documents",
        json=body,
        headers={"Authorization": f"Bearer {server.admin}"},
        timeout=120,
    )
    assert answer.status_code == 202, answer.text


def _graph_labels(page: Page) -> list[str]:
    """The entities the drawn graph shows (cytoscape's own model, once it has drawn)."""
    expect(page.locator("#graph[data-drawn]")).to_be_attached()
    labels: list[str] = page.evaluate("window.kgragGraph.nodes().map(n => n.data('label'))")
    return labels


def _resolve(server: Server, name: str, token: str) -> list[dict[str, Any]]:
    answer = httpx.post(
        f"{server.url}/v1/entities/resolve", json={"name": name}, headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status_code == 200, answer.text
    candidates: list[dict[str, Any]] = answer.json()["candidates"]
    return candidates


@pytest.fixture(scope="module")
def graph(server: Server) -> dict[str, str]:
    for record in RECORDS:
        _ingest(server, record)
    [tern] = _resolve(server, "Tern Foods", server.admin)
    [gannet] = _resolve(server, RESTRICTED, server.admin)
    [site] = [c for c in _resolve(server, "TRN-1", server.admin) if c["type"] == "Site"]
    return {"tern": tern["entity_id"], "gannet": gannet["entity_id"], "site": site["entity_id"]}


def test_an_entity_page_shows_its_conflict_and_walks_the_graph_to_a_neighbour(
    page: Page, server: Server, graph: dict[str, str]
) -> None:
    sign_in(page, server, server.token("sam.ortiz", groups=("engineering",)))
    page.goto(f"{server.url}/ui/entities?name=Tern%20Foods")
    page.get_by_role("link", name="Tern Foods").click()
    page.wait_for_url(f"**/ui/entities/{graph['tern']}")
    conflict = page.locator("section.conflicts")
    expect(conflict).to_contain_text("Sources disagree")
    expect(conflict.locator(".claim.conflict")).to_have_count(2)
    expect(conflict).to_contain_text("99.9%")
    expect(conflict).to_contain_text("99.5%")
    expect(page.locator("section.timeline .badge.mark.conflict")).to_have_count(2)
    expect(page.locator("section.relations")).to_contain_text("SERVED_AT")
    labels = _graph_labels(page)
    assert "TRN-1" in labels and "Tern Foods" in labels
    screenshot(page, "entity")
    record_timing(page, "entity")

    # A quote opens its source at the quoted bytes.
    page.locator("section.timeline a", has_text="ui-tern-a").click()
    page.wait_for_url("**/ui/documents/ui-tern-a?start=*")
    expect(page.locator("mark#cited")).to_have_text("sla: 99.9%")
    page.goto(f"{server.url}/ui/entities/{graph['tern']}")

    # Walk: tapping a node in the drawn graph opens that entity.
    assert "TRN-1" in _graph_labels(page)
    tap_node(page, graph["site"])
    page.wait_for_url(f"**/ui/entities/{graph['site']}**")
    expect(page.locator("article.entity h1")).to_contain_text("TRN-1")
    expect(page.locator("section.relations")).to_contain_text("Tern Foods")
    assert "Beacon" not in _graph_labels(page)  # Tern Foods uses it: two hops from the site
    page.get_by_label("Depth").select_option("2")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**depth=2**")
    assert "Beacon" in _graph_labels(page)


def test_an_outsider_sees_no_restricted_entity_anywhere_and_a_member_does(
    page: Page, server: Server, graph: dict[str, str]
) -> None:
    outsider = server.token("sam.ortiz", groups=("engineering",))
    sign_in(page, server, outsider)
    page.goto(f"{server.url}/ui/entities/{graph['site']}?depth=2")
    expect(page.locator("section.relations")).to_contain_text("Tern Foods")  # the page did load
    labels = _graph_labels(page)
    assert "Tern Foods" in labels and RESTRICTED not in labels
    assert RESTRICTED not in page.content()
    page.goto(f"{server.url}/ui/entities?name={RESTRICTED}")
    expect(page.locator("#candidates")).to_contain_text("No entity named")
    page.goto(f"{server.url}/ui/entities/{graph['gannet']}")
    expect(page.locator(".error")).to_contain_text("ENTITY_NOT_FOUND")
    assert RESTRICTED not in themes_page(page, server)
    # A theme on the session's data: a summary citing its sources, and the members this reader may see.
    open_first_theme(page)
    screenshot(page, "themes")
    # Gannet Capital's theme: the outsider gets its visible members without Gannet, or (when only restricted
    # evidence names its members, as clustering decides) COMMUNITY_NOT_FOUND; never the restricted name.
    gannet_theme = community_of(server, graph["gannet"])
    open_theme(page, server, gannet_theme)
    assert RESTRICTED not in page.content()
    page.goto(f"{server.url}/ui/admin/review")
    expect(page.locator(".error")).to_contain_text("FORBIDDEN")  # the API's own refusal
    assert RESTRICTED not in page.content() and "Tern Foods" not in page.content()
    page.goto(f"{server.url}/ui/admin/namesakes")
    expect(page.locator(".error")).to_contain_text("FORBIDDEN")  # no form either
    assert page.get_by_label("Entity id").count() == 0

    # Positive control: a member of leadership sees the entity, on the same pages.
    sign_in(page, server, server.token("grace.oneill", groups=("leadership",)))
    page.goto(f"{server.url}/ui/entities/{graph['site']}?depth=2")
    expect(page.locator("section.relations")).to_contain_text(RESTRICTED)
    assert RESTRICTED in _graph_labels(page)
    page.goto(f"{server.url}/ui/entities?name={RESTRICTED}")
    expect(page.get_by_role("link", name=RESTRICTED)).to_be_visible()
    page.goto(f"{server.url}/ui/themes/{gannet_theme}")
    expect(page.locator("article.theme ul.members")).to_contain_text(RESTRICTED, timeout=THEMES_MS)


def test_an_admin_splits_and_merges_decides_the_review_queue_and_previews_a_reextraction(
    page: Page, server: Server, graph: dict[str, str]
) -> None:
    sign_in(page, server, server.admin)
    [heron] = _resolve(server, "Heron Freight", server.admin)
    assert len(heron["members"]) == 2  # resolution merged the two spellings on its own

    heron_merge = split_merge_of(page, server, heron["entity_id"])
    assert {c["name"] for c in _resolve(server, "Heron Freight", server.admin)} == {"Heron Freight"}

    newest = merge_by_hand(page, heron["members"], "one haulier, two spellings")
    expect(newest.locator(".who")).to_have_text("ui-admin")  # the admin token's sub decided it
    split_row = page.locator(f"#merges tr[data-merge='{heron_merge}']")
    expect(split_row).to_contain_text("split by ui-admin")
    screenshot(page, "admin-merges")

    page.goto(f"{server.url}/ui/admin/review")
    pairs = page.locator("section.pair")
    expect(page.locator("#review")).not_to_contain_text("Loading")
    queued = pairs.count()
    assert queued >= 1, "the bundled documents leave pairs for review"
    first = pairs.first
    expect(first.locator(".profile")).to_have_count(2)  # side by side
    first_ids = (
        first.locator("input[name=a]").get_attribute("value"),
        first.locator("input[name=b]").get_attribute("value"),
    )
    first.get_by_role("button", name="Keep apart").click()
    expect(page.locator(".notice")).to_have_text("Kept apart.")
    for a_id in page.locator("section.pair input[name=a]").all():
        pair = (a_id.get_attribute("value"), a_id.locator("xpath=../input[@name='b']").get_attribute("value"))
        assert pair != first_ids
    screenshot(page, "admin-review")

    preview_reextraction(page, server, source="records", at_least=len(RECORDS) - 1)  # the admin reads all
    screenshot(page, "admin-extraction")

    # The community summaries: a preview of what a rebuild reclusters and what its summaries cost, then it.
    plan = preview_community_rebuild(page, server)
    screenshot(page, "admin-communities")
    run_community_rebuild(page, plan)

    # Namesakes: Tern Foods' mentions in one record become an entity of their own; a merge undoes it.
    page.goto(f"{server.url}/ui/admin/namesakes")
    page.get_by_label("Entity id").fill(graph["tern"])
    page.get_by_role("button", name="Show its documents").click()
    expect(page.locator(".namesakes-split h2")).to_contain_text("Tern Foods")
    expect(page.get_by_label("ui-tern-a")).to_be_visible()  # the documents its claims quote
    page.get_by_label("ui-tern-b").check()
    page.get_by_label("Reason").fill("two customers called Tern Foods")
    page.get_by_role("button", name="Split these mentions off").click()
    expect(page.locator(".notice")).to_contain_text("1 document(s) now name")
    result = page.locator(".split-result")
    expect(result).to_contain_text("ui-tern-b")
    split_off = str(result.locator("a").first.get_attribute("href")).rsplit("/", 1)[-1]
    assert split_off != graph["tern"]
    assert {c["entity_id"] for c in _resolve(server, "Tern Foods", server.admin)} == {graph["tern"], split_off}
    screenshot(page, "admin-namesakes")
    merged = httpx.post(
        f"{server.url}/v1/admin/entities/merge",
        json={"entity_ids": [graph["tern"], split_off], "canonical_id": graph["tern"], "reason": "one customer"},
        headers={"Authorization": f"Bearer {server.admin}"},
    )
    assert merged.status_code == 200, merged.text
    assert [c["entity_id"] for c in _resolve(server, "Tern Foods", server.admin)] == [graph["tern"]]
