"""Traces on the distributed runtime: the query API wired by `open_query_app` (real PostgreSQL, OpenSearch,
Redis, Kafka) records every search and ask in PostgreSQL, serves them to their caller only, and takes
feedback into the admin curation queue — the same routes and rules as the embedded runtime."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from kgrag_core.ports import Embedder
from kgrag_query_api.api import create_app
from kgrag_runtime.distributed import DistributedStores, open_query_app
from kgrag_runtime.settings import KgragSettings
from tests.integration.test_http_same_meaning import VERIFIER, bearer

pytestmark = pytest.mark.integration


def test_the_distributed_query_api_traces_and_takes_feedback(
    distributed_settings: KgragSettings, stores: DistributedStores, embedder: Embedder
) -> None:
    sam, eve, admin = (bearer("sam", ["eng"], ["search"]), bearer("eve", ["eng"], ["search"]),
                       bearer("root", [], ["admin"]))  # fmt: skip
    with open_query_app(distributed_settings, embedder=embedder) as kg, TestClient(create_app(kg, VERIFIER)) as c:
        found = c.post("/v1/search", json={"query": "yard gate code"}, headers=sam).json()
        trace_id = found["trace_id"]
        trace = c.get(f"/v1/traces/{trace_id}", headers=sam)
        assert trace.status_code == 200, trace.text
        assert trace.json()["owner"] == "user:sam" and trace.json()["results"] == []
        assert c.get(f"/v1/traces/{trace_id}", headers=eve).json()["error"]["code"] == "TRACE_NOT_FOUND"
        asked = c.post("/v1/ask", json={"question": "What is the yard gate code?"}, headers=sam).json()
        item = c.post("/v1/feedback", json={"trace_id": asked["trace_id"], "rating": 1}, headers=sam)
        assert item.status_code == 201, item.text
        queue = c.get("/v1/admin/curation", headers=admin).json()
        assert [f["feedback_id"] for f in queue["feedback"]] == [item.json()["feedback_id"]]
    # Closing the app wrote every trace: they are in PostgreSQL, not only in the process.
    saved = stores.store.pool
    with saved as conn:
        rows = conn.execute("SELECT trace_id, kind FROM query_traces ORDER BY created_at").fetchall()
    assert [(str(r[0]), str(r[1])) for r in rows] == [(trace_id, "search"), (asked["trace_id"], "ask")]
