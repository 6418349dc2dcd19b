"""How the ask page lays out conflicts and fact statuses. The bundled corpus answered without a language model
states no conflicting claims, so this test scripts the stream of `POST /v1/ask` in the browser (the events
and fields of docs/http-api.md, "Streaming answers") and checks what the page shows for it."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Page, Route, expect

from tests.browser.pages import screenshot, sign_in
from tests.browser.server import Server

CITATION = {
    "id": 1,
    "chunk_id": "ch_1",
    "doc_id": "wiki-leipzig-site-profile-2024",
    "title": "LEJ-2 Leipzig site profile (updated July 2024)",
    "uri": "wiki://lej-2",
    "span": [0, 12],
    "quote": "Capacity: 24,500 pallet positions.",
}
CONFLICT = {
    "subject": "LEJ-2",
    "attribute": "capacity_pallets",
    "kind": "value",
    "values": [
        {
            "value": "18000",
            "sources": [
                {
                    "doc_id": "wiki-leipzig-site-profile",
                    "chunk_id": "ch_2",
                    "title": "LEJ-2 site profile",
                    "written_at": "2023-05-02",
                }
            ],
            "fact_ids": ["f1"],
        },
        {
            "value": "24500",
            "sources": [
                {
                    "doc_id": "wiki-leipzig-site-profile-2024",
                    "chunk_id": "ch_1",
                    "title": "LEJ-2 site profile (2024)",
                    "written_at": "2024-07-22T00:00:00+00:00",
                }
            ],
            "fact_ids": ["f2"],
        },
    ],
    "note": "Two sources give different capacities.",
}
FACTS = [
    {
        "id": "f1",
        "kind": "claim",
        "subject": "LEJ-2",
        "predicate": "capacity_pallets",
        "value": "18000",
        "status": "superseded",
        "valid_from": "2023-05-02",
        "valid_to": "2024-06-30",
    },
    {
        "id": "f3",
        "kind": "claim",
        "subject": "LEJ-2",
        "predicate": "capacity_pallets",
        "value": "30000",
        "status": "plan",
        "valid_from": None,
        "valid_to": None,
    },
]
SENTENCE = "LEJ-2 has 24,500 pallet positions."


def _stream() -> str:
    done: dict[str, Any] = {
        "question": "q",
        "answer": SENTENCE + " [1]",
        "answered": True,
        "mode": "extractive",
        "confidence": "HIGH",
        "sentences": [{"text": SENTENCE, "citations": [1], "facts": []}],
        "citations": [CITATION],
        "conflicts": [CONFLICT],
        "facts": FACTS,
        "trace_id": None,
        "streamed": True,
    }
    events = [
        ("route", {"route": "GRAPH_ASSISTED", "graph": True, "graph_degraded": None, "answerer": "extractive"}),
        (
            "citations",
            {"sources": [{"source": 1, "chunk_id": "ch_1", "doc_id": CITATION["doc_id"], "title": "t", "uri": "u"}]},
        ),
        ("sentence", {"index": 0, "text": SENTENCE, "citations": [CITATION]}),
        ("conflicts", {"conflicts": [CONFLICT]}),
        ("confidence", {"confidence": "HIGH"}),
        ("done", done),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def test_conflicts_side_by_side_and_superseded_and_planned_facts_marked(page: Page, server: Server) -> None:
    def scripted(route: Route) -> None:
        route.fulfill(status=200, headers={"content-type": "text/event-stream"}, body=_stream())

    sign_in(page, server, server.token("sam.ortiz", groups=("engineering",)))
    page.route("**/v1/ask", scripted)
    page.get_by_label("Question or search terms").fill("What is the pallet capacity of LEJ-2?")
    page.get_by_role("button", name="Ask", exact=True).click()
    expect(page.locator("#answer-status")).to_have_text("Done.")
    expect(page.locator("#answer-meta")).to_contain_text("Route: GRAPH_ASSISTED")
    expect(page.locator("#answer-meta")).to_contain_text("confidence: HIGH")
    conflict = page.get_by_role("region", name="Sources disagree")
    expect(conflict).to_contain_text("LEJ-2 · capacity_pallets")
    sides = conflict.locator(".side")
    expect(sides).to_have_count(2)
    expect(sides.nth(0)).to_contain_text("18000")
    expect(sides.nth(0)).to_contain_text("2023-05-02")
    expect(sides.nth(1)).to_contain_text("24500")
    expect(sides.nth(1)).to_contain_text("2024-07-22")
    link = sides.nth(0).get_by_role("link", name="LEJ-2 site profile")
    assert link.get_attribute("href") == "/ui/documents/wiki-leipzig-site-profile"
    expect(page.locator('.facts-marked li[data-status="superseded"]')).to_contain_text(
        "18000 (from 2023-05-02 to 2024-06-30)"
    )
    expect(page.locator('.facts-marked li[data-status="plan"]')).to_contain_text("30000")
    expect(page.locator("#answer-text .sentence")).to_have_text(SENTENCE + " [1]")
    screenshot(page, "conflict")
