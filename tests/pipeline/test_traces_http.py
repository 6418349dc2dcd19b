"""Traces, feedback and the curation queue over HTTP, on the embedded runtime with real PostgreSQL.

Security: a trace is readable by its caller and by admins; anyone else gets the same 404 as for an unknown
id (positive control: the caller reads it). A trace holds only what its caller was shown (an outsider's
trace never names a chunk of a document it cannot read; an insider's does), and no document text: after a
deletion, nothing of the document but chunk ids is left in the traces table.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from kgrag_adapters.connectors import iter_path
from kgrag_core.acl import Caller
from kgrag_query_api.api import create_app
from kgrag_runtime.app import KgragApp
from kgrag_runtime.settings import KgragSettings
from tests.pipeline.corpus import corpus, doc
from tests.pipeline.test_http_api import VERIFIER, bearer

SAM = bearer("sam", ["engineering"], ["search", "ask"])
EVE = bearer("eve", ["engineering"], ["search", "ask"])
HR = bearer("ann", ["hr"], ["search"])
ADMIN = bearer("root", [], ["admin"])
UNIQUE = "Zyxquorbelite"  # a word only the document deleted below holds


@pytest.fixture
def client(kg: KgragApp) -> Iterator[TestClient]:
    kg.ingest(corpus())
    with TestClient(create_app(kg, VERIFIER)) as c:
        yield c


def ok(response: Any, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


def error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code, response.text
    return dict(response.json()["error"])


def test_searches_and_answers_are_traced_and_readable_by_their_caller_and_admins(client: TestClient) -> None:
    found = ok(client.post("/v1/search", json={"query": "Harbor certificate", "top_k": 3}, headers=SAM))
    trace_id = found["trace_id"]
    assert trace_id.startswith("tr_")
    trace = ok(client.get(f"/v1/traces/{trace_id}", headers=SAM))  # positive control: the caller reads it
    assert (trace["trace_id"], trace["kind"], trace["owner"]) == (trace_id, "search", "user:sam")
    assert trace["caller"]["groups"] == ["engineering"] and trace["caller"]["admin"] is False
    assert [r["chunk_id"] for r in trace["results"]] == [h["chunk_id"] for h in found["hits"]]
    for hit in found["hits"]:  # candidates per route, with the ranks the caller was shown
        for route, rank in hit["ranks"].items():
            assert {"chunk_id": hit["chunk_id"], "rank": rank} in trace["candidates"][route]
    assert trace["route_counts"] == found["limits"]["route_counts"]
    assert {"embed", "dense", "bm25", "fusion", "hydrate", "total"} <= set(trace["timings_ms"])
    versions = trace["versions"]
    assert versions["embedding_model"] == "all-MiniLM-L6-v2-onnx-int8"
    assert versions["router"].startswith("learned-") and versions["fusion"]["rrf_k"] == 60
    assert versions["extractor"] == "1" and versions["llm_model"] is None

    asked = ok(client.post("/v1/ask", json={"question": "Who is the on-call owner of Atlas?"}, headers=SAM))
    answer = ok(client.get(f"/v1/traces/{asked['trace_id']}", headers=ADMIN))["answer"]  # admins read any
    assert answer["mode"] == asked["mode"] and answer["cached"] is False
    assert answer["citations"] == [
        {"id": c["id"], "chunk_id": c["chunk_id"], "span": c["span"]} for c in asked["citations"]
    ]
    again = ok(client.post("/v1/ask", json={"question": "Who is the on-call owner of Atlas?"}, headers=SAM))
    assert again["cached"] is True and again["trace_id"] != asked["trace_id"]
    assert ok(client.get(f"/v1/traces/{again['trace_id']}", headers=SAM))["answer"]["cached"] is True

    # Another reader, even one with the same groups, gets exactly what an unknown id gets.
    other = error(client.get(f"/v1/traces/{trace_id}", headers=EVE), 404, "TRACE_NOT_FOUND")
    unknown_id = "tr_" + "0" * 32
    unknown = error(client.get(f"/v1/traces/{unknown_id}", headers=EVE), 404, "TRACE_NOT_FOUND")
    assert other["message"].replace(trace_id, "ID") == unknown["message"].replace(unknown_id, "ID")
    error(client.get(f"/v1/traces/{trace_id}", headers=bearer("bot", [], ["ingest"])), 403, "FORBIDDEN")
    error(client.get("/v1/traces/no%20such", headers=SAM), 422, "MALFORMED_EVENT")


def test_a_trace_holds_only_what_its_caller_could_see(client: TestClient, kg: KgragApp) -> None:
    salary_chunks = {c.chunk_id for c in kg.searcher.documents.chunks_of("salary")}
    query = {"query": "senior engineer band 142,000 euros confidential", "top_k": 10}
    outsider = ok(client.post("/v1/search", json=query, headers=SAM))
    insider = ok(client.post("/v1/search", json=query, headers=HR))
    outsider_trace = json.dumps(ok(client.get(f"/v1/traces/{outsider['trace_id']}", headers=SAM)))
    insider_trace = json.dumps(ok(client.get(f"/v1/traces/{insider['trace_id']}", headers=HR)))
    assert any(c in insider_trace for c in salary_chunks)  # positive control: the hr reader's trace names it
    assert not any(c in outsider_trace for c in salary_chunks)


def test_deleting_a_document_leaves_none_of_its_text_in_traces(
    client: TestClient, kg: KgragApp, settings: KgragSettings, tmp_path: Path
) -> None:
    text = f"# {UNIQUE} vault\n\nThe {UNIQUE} vault stores the spare routing keys for Atlas.\n"
    kg.ingest([doc("vault-notes", text, title=f"{UNIQUE} vault")])
    found = ok(client.post("/v1/search", json={"query": f"{UNIQUE} vault keys"}, headers=ADMIN))
    assert found["hits"][0]["doc_id"] == "vault-notes"  # the search did read the document's text
    asked = ok(client.post("/v1/ask", json={"question": f"What does the {UNIQUE} vault store?"}, headers=ADMIN))
    assert UNIQUE in json.dumps(asked)  # and the answer quoted it
    chunk_id = found["hits"][0]["chunk_id"]
    ok(client.delete("/v1/ingest/documents/vault-notes", headers=ADMIN))
    kg.require_traces().flush()
    assert settings.pg_dsn is not None
    with psycopg.connect(settings.pg_dsn.get_secret_value()) as conn:
        rows = conn.execute("SELECT trace_id, owner, body::text FROM query_traces").fetchall()
    everything = "\n".join(" ".join(str(v) for v in row) for row in rows)
    assert found["trace_id"] in everything and asked["trace_id"] in everything
    assert chunk_id in everything  # ids stay (a hash), the text does not
    for gone in (UNIQUE, UNIQUE.lower(), "spare routing keys", "vault"):
        assert gone not in everything, gone


def test_feedback_is_checked_stored_and_worked_through_in_the_curation_queue(
    client: TestClient, kg: KgragApp, tmp_path: Path
) -> None:
    records = tmp_path / "records.jsonl"
    rows = [
        {"id": f"rec-{db}", "title": f"System: Atlas ({db})", "source": "records", "published_at": "2025-06-03",
         "record": {"type": "system", "fields": {"name": "Atlas", "database": db}}}
        for db in ("PostgreSQL", "MySQL")
    ]  # fmt: skip
    records.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    kg.ingest(list(iter_path(records)))
    trace_id = ok(client.post("/v1/ask", json={"question": "Which database does Atlas use?"}, headers=SAM))["trace_id"]

    bad = [
        ({"trace_id": trace_id, "rating": 9}, 422, "INVALID_FEEDBACK"),
        ({"trace_id": trace_id, "rating": 2, "issue": "WRONG"}, 422, "INVALID_FEEDBACK"),
        ({"trace_id": trace_id, "rating": 2, "comment": "x" * 2001}, 422, "INVALID_FEEDBACK"),
        ({"trace_id": trace_id}, 422, "MALFORMED_EVENT"),
        ({"trace_id": trace_id, "rating": 2, "stars": 1}, 422, "MALFORMED_EVENT"),
        ({"trace_id": "tr_" + "0" * 32, "rating": 2}, 404, "TRACE_NOT_FOUND"),
    ]
    for body, status, code in bad:
        error(client.post("/v1/feedback", json=body, headers=SAM), status, code)
    # Not the caller's trace: the same 404 (positive control below: its owner may).
    error(client.post("/v1/feedback", json={"trace_id": trace_id, "rating": 1}, headers=EVE), 404, "TRACE_NOT_FOUND")
    good = {"trace_id": trace_id, "rating": 1.0, "issue": "OUTDATED", "comment": "Atlas moved databases"}
    item = ok(client.post("/v1/feedback", json=good, headers=SAM), 201)
    assert (item["rating"], item["issue"], item["status"], item["author"]) == (1, "OUTDATED", "open", "user:sam")

    error(client.get("/v1/admin/curation", headers=SAM), 403, "FORBIDDEN")
    queue = ok(client.get("/v1/admin/curation", headers=ADMIN))
    assert [f["feedback_id"] for f in queue["feedback"]] == [item["feedback_id"]]
    [conflict] = [c for c in queue["conflicts"] if c["attribute"] == "database"]
    assert conflict["values"] == ["MySQL", "PostgreSQL"] and conflict["written_at"] == "2025-06-03"
    assert set(queue) >= {"merge_candidates", "low_confidence_edges", "limits", "actions"}
    assert ok(client.get("/v1/admin/curation?limit=1&max_edge_confidence=1", headers=ADMIN))["limits"]["limit"] == 1

    path = f"/v1/admin/curation/feedback/{item['feedback_id']}/resolve"
    error(client.post(path, json={"resolution": "checked"}, headers=SAM), 403, "FORBIDDEN")
    done = ok(client.post(path, json={"resolution": "the newer record is right"}, headers=ADMIN))
    assert (done["status"], done["resolved_by"]) == ("resolved", "user:root")
    assert ok(client.get("/v1/admin/curation", headers=ADMIN))["feedback"] == []
    missing = "/v1/admin/curation/feedback/fb_nothing/resolve"
    error(client.post(missing, json={}, headers=ADMIN), 404, "FEEDBACK_NOT_FOUND")


def test_the_app_traces_on_its_own_too(kg: KgragApp) -> None:
    kg.ingest(corpus())
    response = kg.search("Atlas owner", Caller(user="sam"))
    assert response.as_dict()["trace_id"] == response.trace_id
    assert kg.require_traces().get(str(response.trace_id), Caller(user="sam")).kind.value == "search"
    assert kg.status()["traces"]["retention_days"] == 30  # type: ignore[index]
