"""Answer-quality metrics on the query API's /metrics: each one is emitted, and moves with what happened.

Searches (a lookup and a graph-routed question), answers (extractive, an abstention, and a scripted model's
reply whose quote is not in its source, so the answer is refused and its sentences removed), and feedback,
then one scrape. Every metric the quality registry defines must be in it, and the ones this test drove
must have counted exactly what it did.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from kgrag_query_api.api import create_app
from kgrag_runtime.app import KgragApp
from kgrag_runtime.quality_metrics import QualityMetrics, record_feedback
from kgrag_testing.scripted_llm import ScriptedChatModel
from tests.pipeline.corpus import corpus
from tests.pipeline.test_http_api import VERIFIER, bearer

pytestmark = pytest.mark.pipeline

READER = bearer("sam", ["engineering"], ["search", "ask"])
UNSUPPORTED = json.dumps(
    {
        "insufficient_evidence": False,
        "sentences": [
            {"text": "Atlas runs on Mars.", "evidence": [{"source": 1, "quote": "Atlas runs on Mars"}]},
            {"text": "It has 9 nodes.", "evidence": [{"source": 1, "quote": "nine nodes on Mars"}]},
        ],
    }
)


def scrape(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(response.text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), -1.0)


def registered_names(metrics: QualityMetrics) -> set[str]:
    """Every family the quality registry exposes (counters carry `_total`, histograms `_count`...)."""
    return {family.name for family in metrics.registry.collect()}


@pytest.fixture
def client(kg: KgragApp) -> Iterator[TestClient]:
    kg.ingest(corpus())
    with TestClient(create_app(kg, VERIFIER)) as c:
        yield c


def test_every_quality_metric_is_emitted_and_counts_what_happened(kg: KgragApp, client: TestClient) -> None:
    lookup = client.post("/v1/search", json={"query": "How many routes does Atlas plan per night?"}, headers=READER)
    assert lookup.status_code == 200
    routed = client.post(
        "/v1/search", json={"query": "Who is the on-call owner of Atlas?", "graph": True}, headers=READER
    ).json()
    route = routed["route"]["kind"]
    answered = client.post("/v1/ask", json={"question": "Who is the on-call owner of Atlas?"}, headers=READER).json()
    assert answered["answered"] is True
    abstained = client.post("/v1/ask", json={"question": "What colour is the moon cheese?"}, headers=READER).json()
    assert abstained["mode"] == "abstained"
    # The same app with a scripted model whose quotes are not in the sources: refused, both sentences removed.
    with_model = dataclasses.replace(kg, llm=ScriptedChatModel([UNSUPPORTED]))
    with TestClient(create_app(with_model, VERIFIER)) as model_client:
        refused = model_client.post("/v1/ask", json={"question": "Where does Atlas run?"}, headers=READER).json()
    assert refused["mode"] == "refused"
    record_feedback(kg.quality, "wrong")
    record_feedback(kg.quality, "Robert'); DROP TABLE --")  # not a label value: counted as other

    samples = scrape(client)
    emitted = {name for name, _ in samples}
    for family in registered_names(kg.quality):
        assert any(name.startswith(family) for name in emitted), f"{family} is not on /metrics"
    assert value(samples, "kgrag_backlog_up") == 1.0
    assert value(samples, "kgrag_extraction_pending_llm_chunks") == 0.0  # no model: tier 3 owes nothing yet
    assert value(samples, "kgrag_review_backlog") >= 0.0

    # Searches: the plain one (hybrid), the routed one, and the two asks' retrievals, by route.
    assert value(samples, "kgrag_search_routes_total", route="hybrid") >= 1.0
    assert value(samples, "kgrag_search_routes_total", route=route) >= 1.0
    if route == "lookup":
        assert value(samples, "kgrag_graph_fallbacks_total", reason="lookup") >= 1.0
    assert value(samples, "kgrag_graph_degraded_total") == 0.0
    # Answers: one extractive, one abstention, one refusal of two sentences.
    assert value(samples, "kgrag_answers_total", mode="extractive", confidence=answered["confidence"]) == 1.0
    assert value(samples, "kgrag_answer_abstentions_total", mode="abstained") == 1.0
    assert value(samples, "kgrag_answer_abstentions_total", mode="refused") == 1.0
    assert value(samples, "kgrag_answer_sentences_removed_total") == 2.0
    assert value(samples, "kgrag_feedback_total", issue="wrong") == 1.0
    assert value(samples, "kgrag_feedback_total", issue="other") == 1.0
    # Stage latencies: four searches (two direct, three inside asks), three answers.
    assert value(samples, "kgrag_stage_seconds_count", stage="retrieval") == 5.0
    assert value(samples, "kgrag_stage_seconds_count", stage="answer") == 3.0
    assert value(samples, "kgrag_stage_seconds_count", stage="ask") == 3.0
    assert value(samples, "kgrag_stage_seconds_sum", stage="ask") > 0.0
    # Extraction ran in-process without a model: no call, no token, nothing spent (but the series exist).
    assert value(samples, "kgrag_extraction_llm_calls_total") == 0.0
    assert value(samples, "kgrag_extraction_llm_tokens_total", direction="input") == 0.0
    # The HTTP metrics are served alongside.
    assert value(samples, "kgrag_http_requests_total", route="/v1/ask", status="200") == 2.0
