"""The connector SDK against the real query API on the embedded runtime: batching with a checkpoint,
retries through injected 503s, bad input that loses nothing else, and exactly-once effect (the same
events delivered twice, by a fresh client that remembers nothing, change nothing)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from kgrag_connectors import (
    Acl,
    DocumentChanged,
    DocumentDeleted,
    FileCheckpoint,
    KgragIngestClient,
    MemoryCheckpoint,
    RetryPolicy,
)
from kgrag_core.acl import Caller
from kgrag_query_api.api import create_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.app import KgragApp

pytestmark = pytest.mark.pipeline

VERIFIER = TokenVerifier(key="sdk-test-key-" + "s" * 32, issuer="kgrag-sdk-test", audience="kgrag", algorithm="HS256")
INGEST = VERIFIER.issue("wiki-connector", groups=[], scopes=["ingest"])
SEARCH_ONLY = VERIFIER.issue("sam.ortiz", groups=["engineering"], scopes=["search"])
BASE = "http://testserver"

EVENTS = [
    DocumentChanged("wiki/kiln", "Kiln runbook", text="The Kiln scheduler restarts nightly at 02:00.", cursor="1"),
    DocumentChanged(
        "wiki/hr-bonus",
        "Bonus plan",
        body=b"The Quillfeather bonus pool is 4 percent this year.",
        media_type="text/plain",
        acl=Acl(groups=("hr",)),
        cursor="2",
    ),
    DocumentChanged("wiki/blank", "Blank page", text="   ", cursor="3"),  # bad input: refused, nothing else lost
    DocumentChanged("wiki/ferry", "Ferry notes", text="The Ferry importer reads the Leipzig feed hourly.", cursor="4"),
]
INDEXED = ("wiki/kiln", "wiki/hr-bonus", "wiki/ferry")


class ToApi(httpx.BaseTransport):
    """The SDK's requests to the real API in-process (TestClient), the first `failures` of them answered
    503 with Retry-After instead: a broker outage as the connector sees it."""

    def __init__(self, api: TestClient, failures: int = 0) -> None:
        self.api, self.failures, self.requests = api, failures, 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        if self.requests <= self.failures:
            return httpx.Response(503, headers={"Retry-After": "0"}, json={"error": {"code": "BROKER_UNAVAILABLE"}})
        answer = self.api.request(
            request.method, str(request.url), headers=dict(request.headers), content=request.read()
        )
        return httpx.Response(answer.status_code, headers=dict(answer.headers), content=answer.content)


def sdk(http: httpx.Client | TestClient, token: str = INGEST, **kwargs: object) -> KgragIngestClient:
    if isinstance(http, TestClient):
        http = httpx.Client(transport=ToApi(http))
    return KgragIngestClient(BASE, token, http=http, seed=7, **kwargs)  # type: ignore[arg-type]


def versions(kg: KgragApp) -> dict[str, tuple[int, int]]:
    out = {}
    for doc_id in INDEXED:
        doc = kg.searcher.documents.get_document(doc_id)
        assert doc is not None, doc_id
        out[doc_id] = (doc.version, len(kg.searcher.documents.chunks_of(doc_id)))
    return out


def test_sdk_delivers_in_batches_with_retries_and_a_checkpoint_with_exactly_once_effect(
    kg: KgragApp, tmp_path: Path
) -> None:
    api = TestClient(create_app(kg, VERIFIER))
    slept: list[float] = []
    flaky = ToApi(api, failures=2)
    checkpoint = FileCheckpoint(tmp_path / "wiki.checkpoint.json")
    with httpx.Client(transport=flaky) as http:
        client = sdk(http, checkpoint=checkpoint, batch_size=2, sleep=slept.append)
        first = client.deliver(EVENTS)
        assert first.complete and first.checkpoint == "4" == checkpoint.load()
        by_doc = {r.doc_id: r for r in first.results}
        assert [by_doc[d].status for d in INDEXED] == ["INDEXED"] * 3
        assert by_doc["wiki/kiln"].attempts == 3 and len(slept) == 2  # two 503s, retried with backoff
        assert by_doc["wiki/blank"].status == "REJECTED" and by_doc["wiki/blank"].error_code == "MALFORMED_EVENT"
        # The same client drops what it just delivered, without a request.
        requests = flaky.requests
        assert client.deliver(EVENTS[:2]).counts() == {"DUPLICATE": 2} and flaky.requests == requests
    before = versions(kg)
    assert all(v == 1 for v, _ in before.values())

    # A fresh client remembering nothing (a connector restarted without its checkpoint): one effect.
    again = sdk(api).deliver(EVENTS)
    assert {r.doc_id: r.status for r in again.results if r.doc_id in INDEXED} == dict.fromkeys(INDEXED, "UNCHANGED")
    assert versions(kg) == before

    # The restricted document's ACL travelled: its reader finds it, an outsider does not (positive control).
    bonus = "Quillfeather bonus pool"
    assert "wiki/hr-bonus" in {h.doc_id for h in kg.search(bonus, Caller(groups=("hr",))).hits}
    assert "wiki/hr-bonus" not in {h.doc_id for h in kg.search(bonus, Caller(groups=("engineering",))).hits}

    # A deletion delivered twice (two clients): deleted once, then `absent`; one deletion record.
    gone = DocumentDeleted("wiki/kiln", cursor="5")
    assert [r.status for r in sdk(api).deliver([gone]).results] == ["DELETED"]
    assert [r.status for r in sdk(api).deliver([gone]).results] == ["ABSENT"]
    assert len(kg.searcher.documents.deletion_records("wiki/kiln")) == 1


def test_sdk_stops_before_an_undelivered_event_and_keeps_the_checkpoint(kg: KgragApp) -> None:
    api = TestClient(create_app(kg, VERIFIER))
    checkpoint = MemoryCheckpoint("0")
    with httpx.Client(transport=ToApi(api, failures=10**6)) as http:
        down = sdk(http, checkpoint=checkpoint, retry=RetryPolicy(max_attempts=3), sleep=lambda _s: None)
        report = down.deliver(EVENTS)
    assert not report.complete and [(r.status, r.attempts) for r in report.results] == [("UNDELIVERED", 3)]
    assert checkpoint.load() == "0" and kg.searcher.documents.get_document("wiki/kiln") is None
    # A token without the ingest scope is refused per event, with the API's code, and never retried.
    denied = sdk(api, SEARCH_ONLY).deliver(EVENTS[:1])
    assert [(r.status, r.error_code, r.attempts) for r in denied.results] == [("REJECTED", "FORBIDDEN", 1)]
