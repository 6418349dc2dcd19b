"""An outsider sees no restricted document anywhere in the app: not in answers, search results or the source
view, where it is exactly as unknown as a document that does not exist. Positive control: a member of the
document's group sees it in all three."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Page, expect

from tests.browser.pages import screenshot, sign_in
from tests.browser.server import Server

RESTRICTED = "email-osprey-board-prep"  # leadership only
SECRET_WORD = "Osprey"
QUESTION = "What is Project Osprey, the possible acquisition discussed for the board?"
SEARCH = "Project Osprey board preparation acquisition"


def outsider(server: Server) -> str:
    return server.token("sam.ortiz", groups=("engineering",))


def member(server: Server) -> str:
    return server.token("grace.oneill", groups=("leadership",))


def ask(page: Page, question: str) -> str:
    page.get_by_label("Question or search terms").fill(question)
    page.get_by_role("button", name="Ask", exact=True).click()
    expect(page.locator("#answer-status")).to_have_text(re.compile(r"^(Done|No answer)\.$"), timeout=60_000)
    return page.locator("#answer").inner_text()


def search(page: Page, terms: str) -> list[str]:
    page.get_by_label("Question or search terms").fill(terms)
    with page.expect_response(lambda r: "/ui/fragments/search" in r.url):
        page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#results h2")).to_have_text("Search results")
    page.wait_for_load_state("networkidle")  # swapped in
    return [str(h) for h in page.locator("#results .hit .title").evaluate_all("els => els.map(e => e.href)")]


def source_view(page: Page, server: Server, doc_id: str) -> str:
    page.goto(f"{server.url}/ui/documents/{doc_id}")
    page.wait_for_selector("#document[aria-busy]", state="detached")
    return page.locator("#document").inner_text()


def test_an_outsider_sees_no_restricted_document_anywhere(page: Page, server: Server) -> None:
    sign_in(page, server, outsider(server))
    answer = ask(page, QUESTION)
    assert SECRET_WORD not in answer
    assert all(RESTRICTED not in href for href in page.locator("#answer a").evaluate_all("els => els.map(e => e.href)"))
    hits = search(page, SEARCH)
    assert hits, "the outsider's search found nothing at all: the test would prove nothing"
    assert not [h for h in hits if RESTRICTED in h]
    assert SECRET_WORD not in page.locator("#results").inner_text()
    shown = source_view(page, server, RESTRICTED)
    assert "DOCUMENT_NOT_FOUND" in shown and SECRET_WORD not in shown
    unknown = source_view(page, server, "no-such-document")
    assert shown.replace(RESTRICTED, "ID") == unknown.replace("no-such-document", "ID")


def test_a_member_sees_the_restricted_document_everywhere(page: Page, server: Server) -> None:
    sign_in(page, server, member(server))
    answer = ask(page, QUESTION)
    assert SECRET_WORD in answer
    hits = search(page, SEARCH)
    assert [h for h in hits if RESTRICTED in h]
    expect(page.locator("#results .rank").first).to_contain_text(re.compile(r"^(bm25|dense|graph\w*) #\d+$"))
    screenshot(page, "search")
    # The source filter reaches the API: only e-mails now, the restricted one among them
    page.get_by_text("Filters").click()
    page.get_by_label("Sources (comma-separated)").fill("email")
    filtered = search(page, SEARCH)
    assert [h for h in filtered if RESTRICTED in h]
    assert all(m.startswith("email ·") for m in page.locator("#results .hit .meta").all_inner_texts())
    shown = source_view(page, server, RESTRICTED)
    assert "Project Osprey: board preparation" in shown


def test_the_document_api_answers_an_outsider_as_for_an_unknown_document(server: Server) -> None:
    def get(doc_id: str, token: str) -> httpx.Response:
        return httpx.get(f"{server.url}/v1/documents/{doc_id}", headers={"Authorization": f"Bearer {token}"})

    hidden, unknown = get(RESTRICTED, outsider(server)), get("no-such-document", outsider(server))
    assert hidden.status_code == unknown.status_code == 404
    assert hidden.json()["error"]["code"] == "DOCUMENT_NOT_FOUND"
    assert hidden.text.replace(RESTRICTED, "ID") == unknown.text.replace("no-such-document", "ID")
    seen = get(RESTRICTED, member(server))
    assert seen.status_code == 200
    body = seen.json()
    assert body["title"] == "Project Osprey: board preparation" and SECRET_WORD in body["text"]
    assert body["byte_length"] == len(body["text"].encode("utf-8"))
    assert get(RESTRICTED, "not-a-token").status_code == 401
