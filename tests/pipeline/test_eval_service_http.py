"""Evaluation as a service over HTTP: a bundled suite runs in the background on an isolated index, its report
and regressions come back from PostgreSQL, and only admins may do any of it.

One real run of the smoke suite (hybrid configurations only, so no graph is extracted): started, polled to
completion, its metrics by question type, per-query latency and cost checked, the serving index untouched.
Regressions are checked against a baseline run stored with better scores.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kgrag_core.evaluation.runs import SUCCEEDED
from kgrag_query_api.api import create_app
from kgrag_runtime.app import KgragApp
from tests.pipeline.corpus import corpus
from tests.pipeline.test_http_api import VERIFIER, bearer

pytestmark = [pytest.mark.pipeline, pytest.mark.timeout(600)]

ADMIN = bearer("root", [], ["admin"])
READER = bearer("sam", ["engineering"], ["search", "ask"])
SMOKE = {"suite": "northwind-smoke", "config": {"graph": False, "budget_tokens": 1000}}
POLL_LIMIT_S = 420.0  # the run indexes ten documents in its own embedded PostgreSQL: a minute or two


@pytest.fixture
def client(kg: KgragApp) -> Iterator[TestClient]:
    kg.ingest(corpus())
    with TestClient(create_app(kg, VERIFIER)) as c:
        yield c


def wait_for(client: TestClient, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + POLL_LIMIT_S
    while True:
        body: dict[str, Any] = client.get(f"/v1/admin/eval/{run_id}", headers=ADMIN).json()
        if body["status"] != "running" or time.monotonic() > deadline:
            return body
        time.sleep(1.0)


def test_a_suite_runs_in_the_background_on_an_isolated_index(kg: KgragApp, client: TestClient) -> None:
    before = kg.status()
    serving_docs = {d.doc_id for d in kg.searcher.documents.list_documents()}
    started = client.post("/v1/admin/eval/run", json=SMOKE, headers=ADMIN)
    assert started.status_code == 202
    run = started.json()
    assert run["status"] == "running" and run["suite"] == "northwind-smoke"
    assert started.headers["location"] == f"/v1/admin/eval/{run['run_id']}"
    # One run at a time: asking again while it runs returns the same run.
    again = client.post("/v1/admin/eval/run", json=SMOKE, headers=ADMIN)
    assert again.status_code == 202 and again.json()["run_id"] == run["run_id"]

    done = wait_for(client, run["run_id"])
    assert done["status"] == SUCCEEDED, done.get("error")
    report = done["report"]
    assert report["questions"] == 5
    assert report["index"]["documents"] == 10 and report["index"]["isolated"] is True
    assert set(report["per_type"]) == {"bm25", "dense", "hybrid"}  # graph: false
    hybrid = report["per_type"]["hybrid"]
    assert set(hybrid) == {"lookup", "entity", "multi_hop", "temporal", "unanswerable", "ALL"}
    assert hybrid["ALL"]["n"] == 5 and 0.0 < hybrid["ALL"]["ndcg@10"] <= 1.0
    assert hybrid["unanswerable"]["abstained"] == 1.0  # q46 is not in the corpus: the answer abstains
    assert [q["id"] for q in report["queries"]] == ["q01", "q11", "q17", "q25", "q46"]
    for query in report["queries"]:
        assert set(query["search_ms"]) == {"bm25", "dense", "hybrid"} and set(query["ask_ms"]) == {"hybrid"}
        assert all(ms > 0 for ms in query["search_ms"].values())
        assert query["cost"] == 0.0  # no answering model here: extractive answers cost nothing
    assert report["cost"]["llm"] is None and report["cost"]["calls"] == 0
    assert report["latency_ms"]["hybrid"]["p95"] >= report["latency_ms"]["hybrid"]["p50"] > 0
    assert done["regressions"] is None  # no baseline yet

    # Isolation: the serving index neither lost nor gained a document, and none of the suite's is findable.
    after = kg.status()
    assert (after["documents"], after["chunks"]) == (before["documents"], before["chunks"])
    assert {d.doc_id for d in kg.searcher.documents.list_documents()} == serving_docs
    hits = client.post("/v1/search", json={"query": "Beacon API rate limits"}, headers=ADMIN).json()["hits"]
    assert all(h["doc_id"] in serving_docs for h in hits)

    # Regressions: against a stored baseline of the same suite whose hybrid lookup nDCG was higher.
    store = kg.require_evaluation().store
    better = {**report, "per_type": {"hybrid": {"lookup": {"n": 1, "ndcg@10": 1.5}}}}
    store.create_eval_run("eval-better", "northwind-smoke", SMOKE["config"])
    store.finish_eval_run("eval-better", status=SUCCEEDED, report=better)
    marked = client.post("/v1/admin/eval/eval-better/baseline", headers=ADMIN)
    assert marked.status_code == 200 and marked.json()["baseline"] is True
    compared = client.get(f"/v1/admin/eval/{run['run_id']}", headers=ADMIN).json()
    assert compared["baseline_run_id"] == "eval-better"
    (regression,) = compared["regressions"]
    assert (regression["config"], regression["type"], regression["metric"]) == ("hybrid", "lookup", "ndcg@10")
    assert regression["baseline"] == 1.5 and regression["value"] == hybrid["lookup"]["ndcg@10"]
    # Moving the baseline to the run itself: the suite keeps one baseline.
    assert client.post(f"/v1/admin/eval/{run['run_id']}/baseline", headers=ADMIN).status_code == 200
    listed = client.get("/v1/admin/eval", headers=ADMIN).json()
    assert {r["run_id"]: r["baseline"] for r in listed["runs"]} == {run["run_id"]: True, "eval-better": False}
    assert {s["name"] for s in listed["suites"]} == {"northwind", "northwind-smoke"}


def test_only_admins_and_only_bundled_suites(client: TestClient) -> None:
    for method, path in (
        ("post", "/v1/admin/eval/run"),
        ("get", "/v1/admin/eval"),
        ("get", "/v1/admin/eval/eval-000000000000"),
        ("post", "/v1/admin/eval/eval-000000000000/baseline"),
    ):
        refused = client.request(method, path, json=SMOKE if path.endswith("/run") else None, headers=READER)
        assert refused.status_code == 403, path
        assert refused.json()["error"]["code"] == "FORBIDDEN"
    assert client.get("/v1/admin/eval", headers=ADMIN).status_code == 200  # positive control
    missing = client.get("/v1/admin/eval/eval-000000000000", headers=ADMIN)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "RUN_NOT_FOUND"
    assert client.post("/v1/admin/eval/eval-000000000000/baseline", headers=ADMIN).status_code == 404
    # A suite is a name from the registry, never a path: anything else is refused before a file is read.
    for suite in ("../../etc/passwd", "/etc/passwd", "corpora/northwind/questions.jsonl", "northwind2"):
        refused = client.post("/v1/admin/eval/run", json={"suite": suite}, headers=ADMIN)
        assert refused.status_code == 422, suite
    bad_config = client.post(
        "/v1/admin/eval/run", json={"suite": "northwind-smoke", "config": {"questions": "/etc/passwd"}}, headers=ADMIN
    )
    assert bad_config.status_code == 422
    over = client.post(
        "/v1/admin/eval/run", json={"suite": "northwind", "config": {"budget_tokens": 10**9}}, headers=ADMIN
    )
    assert over.status_code == 422 and over.json()["error"]["code"] == "LIMIT_EXCEEDED"
    assert client.get("/v1/admin/eval", headers=ADMIN).json()["runs"] == []  # nothing was started
