"""The streamed, verified ask on the distributed runtime (real Kafka, PostgreSQL, OpenSearch, Redis): the
same app and event order as embedded. A FAKE (scripted) model's unfaithful sentence is never sent, and a
model that times out gives way to the extractive answer, flagged, with a 200."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from kgrag_core.events import DOCUMENTS_CHANGED
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_query_api.api import create_app
from kgrag_runtime.app import KgragApp
from kgrag_runtime.distributed import DistributedStores, active_document_check, producer
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.settings import KgragSettings
from kgrag_testing.scripted_llm import ScriptedChatModel, llm_timeout
from tests.integration.conftest import Workers
from tests.integration.test_http_same_meaning import INGEST, VERIFIER, _settle, bearer
from tests.pipeline.test_ask_verified_http import citing, events_of

pytestmark = pytest.mark.integration

READER = bearer("sam", ["engineering"], ["search", "ask"])
MEMO = "The yard gate code rotates every Monday at six. The night shift does not open the yard gate."
QUESTION = "When does the yard gate code rotate?"


def test_a_streamed_answer_on_the_distributed_runtime(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> None:
    start: Callable[..., object] = workers.start
    start("chunk-indexer", ChunkIndexerHandler(stores.indexer(distributed_settings), topics=(DOCUMENTS_CHANGED,)),
          outcome_log=stores.store)  # fmt: skip
    model = citing(
        [
            ("The yard gate code rotates every Monday at six.", "The yard gate code rotates every Monday at six."),
            ("The night shift opens the yard gate.", "The night shift does not open the yard gate."),  # flipped
        ]
    )
    kg = KgragApp(
        searcher=stores.searcher(),
        ingestion=KafkaIngest(producer(distributed_settings, "q"), is_active=active_document_check(stores.store)),
        ingest_log=stores.store,
        stats_source=stores.store,
        cache=stores.cache,
        llm=model,
    )
    with TestClient(create_app(kg, VERIFIER)) as client:
        memo = {"doc_id": "memo-gate", "title": "Yard memo", "text": MEMO, "acl": {"groups": ["engineering"]}}
        assert client.post("/v1/ingest/documents", json=memo, headers=INGEST).status_code == 202
        _settle(client, "memo-gate", "INDEXED")
        streamed = client.post("/v1/ask", json={"question": QUESTION, "options": {"stream": True}}, headers=READER)
        assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
        events = events_of(streamed.text)
        assert [n for n, _ in events] == [
            "route", "citations", "sentence", "conflicts", "graph_evidence", "confidence", "done"
        ]  # fmt: skip
        assert events[2][1]["text"] == "The yard gate code rotates every Monday at six."
        assert "opens the yard gate" not in streamed.text
        done = events[-1][1]
        assert done["removed"] == {"count": 1, "reasons": {"polarity_mismatch": 1}} and done["streamed"] is True

    down = dataclasses.replace(kg, llm=ScriptedChatModel([llm_timeout()]))
    with TestClient(create_app(down, VERIFIER)) as client:
        fell_back = client.post("/v1/ask", json={"question": QUESTION}, headers=READER)
        assert fell_back.status_code == 200
        body = fell_back.json()
        assert body["mode"] == "extractive" and body["fallback"] == {"reason": "llm_timeout"}
        assert "rotates every Monday" in json.dumps(body["sentences"])
