"""The ask contract with a model on the embedded runtime over HTTP: sentence verification removes a FAKE
(scripted) model's unfaithful sentences and says so in the response and the trace; a failing model gives
way to the extractive answer (200, flagged), never a 5xx; `options.stream` sends server-sent events in the
documented order, never an unverified sentence, and a client that goes away stops the model."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence

import anyio
import pytest
from fastapi.testclient import TestClient

from kgrag_core.acl import Caller
from kgrag_core.ports import ChatMessage
from kgrag_query_api.api import create_app
from kgrag_query_api.sse import sse_body
from kgrag_runtime.app import KgragApp
from kgrag_testing.scripted_llm import ScriptedChatModel, llm_timeout, rate_limited
from tests.pipeline.corpus import corpus
from tests.pipeline.test_http_api import VERIFIER, bearer

pytestmark = pytest.mark.pipeline

READER = bearer("sam", ["engineering"], ["search", "ask"])
OUTSIDER = bearer("olga", [], ["search", "ask"])
QUESTION = "Who is the on-call owner of Atlas and how many routes does it plan per night?"
OWNER_QUESTION = "Who is the on-call owner of Atlas?"
OWNER = "The on-call owner of Atlas is Priya Raman since March 2024."
ROUTES = "Atlas plans 12,000 routes per night on four worker nodes."
COMPUTES = "Atlas computes delivery routes for every Northwind truck."
FAITHFUL = [
    ("Priya Raman has been the on-call owner of Atlas since March 2024.", OWNER),
    ("Atlas plans 12,000 routes per night.", ROUTES),
]
UNFAITHFUL = [
    ("Atlas plans 15,000 routes per night.", ROUTES),  # a number changed
    ("Atlas does not compute delivery routes for Northwind trucks.", COMPUTES),  # a negation flipped
    ("Kenji Watanabe is the on-call owner of Atlas.", OWNER),  # a name swapped
]
EVENT = re.compile(r"event: (\w+)\ndata: (.*)\n\n")


def citing(sentences: Sequence[tuple[str, str]]) -> ScriptedChatModel:
    """A FAKE model whose reply cites each quote by the number its source has in this prompt."""

    def reply(messages: Sequence[ChatMessage]) -> str:
        blocks = re.split(r"\n\n(?=\[\d+\] )", messages[-1].content)

        def source(quote: str) -> int:
            return next(int(b[1 : b.index("]")]) for b in blocks if b.startswith("[") and quote in b)

        items = [{"text": t, "evidence": [{"source": source(q), "quote": q}]} for t, q in sentences]
        return json.dumps({"insufficient_evidence": False, "sentences": items})

    return ScriptedChatModel(reply, token_chars=5)


def events_of(text: str) -> list[tuple[str, dict[str, object]]]:
    return [(m.group(1), json.loads(m.group(2))) for m in EVENT.finditer(text)]


def source_docs(stream: str) -> set[str]:
    name, data = events_of(stream)[1]
    sources = data["sources"]
    assert name == "citations" and isinstance(sources, list)
    return {str(s["doc_id"]) for s in sources}


def test_verification_fallback_and_streaming_over_http(kg: KgragApp) -> None:
    kg.ingest(corpus())
    mixed = [FAITHFUL[0], *UNFAITHFUL, FAITHFUL[1]]
    with TestClient(create_app(dataclasses.replace(kg, llm=citing(mixed)), VERIFIER)) as client:
        answer = client.post("/v1/ask", json={"question": QUESTION}, headers=READER).json()
        assert answer["mode"] == "llm" and [s["text"] for s in answer["sentences"]] == [t for t, _ in FAITHFUL]
        assert answer["removed"] == {
            "count": 3,
            "reasons": {"polarity_mismatch": 1, "unsupported_entity": 1, "unsupported_number": 1},
        }
        trace = client.get(f"/v1/traces/{answer['trace_id']}", headers=READER).json()
        assert sorted(r["reason"] for r in trace["answer"]["removed_sentences"]) == [
            "polarity_mismatch",
            "unsupported_entity",
            "unsupported_number",
        ]

        streamed = client.post("/v1/ask", json={"question": QUESTION, "options": {"stream": True}}, headers=READER)
        assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
        events = events_of(streamed.text)
        names = [name for name, _ in events]
        assert names == [
            "route",
            "citations",
            "sentence",
            "sentence",
            "conflicts",
            "graph_evidence",
            "confidence",
            "done",
        ]
        said = [str(data["text"]) for name, data in events if name == "sentence"]
        assert said == [t for t, _ in FAITHFUL]  # no unfaithful sentence was ever sent
        assert all(t not in streamed.text for t, _ in UNFAITHFUL)
        done = events[-1][1]
        assert done["streamed"] is True and done["removed"] == answer["removed"] and done["trace_id"]
        sources = events[1][1]["sources"]
        assert isinstance(sources, list) and {s["doc_id"] for s in sources} >= {"atlas"}

        # A stream shows only what its caller may read: Harbor is engineering's (positive control: sam sees it).
        harbor = {"question": "Why was Harbor down in May 2024?", "options": {"stream": True}}
        member = client.post("/v1/ask", json=harbor, headers=READER).text
        outsider = client.post("/v1/ask", json=harbor, headers=OUTSIDER).text
        assert "harbor" in source_docs(member) and "harbor" not in source_docs(outsider)

    # A model that times out, is rate limited or does not answer: the extractive answer, flagged, a 200.
    for failure, reason in (
        (llm_timeout(), "llm_timeout"),
        (rate_limited(), "llm_rate_limited"),
        ("no", "llm_invalid_reply"),
    ):
        down = dataclasses.replace(kg, llm=ScriptedChatModel([failure, failure, failure]))
        with TestClient(create_app(down, VERIFIER)) as client:
            # Not the question above, whose model answer is cached; a fallback answer is never cached.
            for _ in range(2):
                fell_back = client.post("/v1/ask", json={"question": OWNER_QUESTION}, headers=READER)
                assert fell_back.status_code == 200
                body = fell_back.json()
                assert body["mode"] == "extractive" and body["answered"] is True and body["cached"] is False
                assert body["fallback"] == {"reason": reason}
            ask = {"question": OWNER_QUESTION, "options": {"stream": True}}
            last = events_of(client.post("/v1/ask", json=ask, headers=READER).text)[-1]
            assert last[0] == "done" and last[1]["fallback"] == {"reason": reason} and last[1]["mode"] == "extractive"
        # Two asks and one stream fell back for this reason.
        assert kg.quality.registry.get_sample_value("kgrag_answer_llm_fallbacks_total", {"reason": reason}) == 3.0


def test_a_client_that_goes_away_stops_the_model(kg: KgragApp) -> None:
    kg.ingest(corpus())
    model = citing(FAITHFUL * 20)
    events = dataclasses.replace(kg, llm=model).ask_stream(QUESTION, Caller(groups=("engineering",)))
    first = next(events)
    received: list[bytes] = []

    async def read_until_first_sentence() -> None:
        body = sse_body(first, events)
        async for chunk in body:
            received.append(chunk)
            if chunk.startswith(b"event: sentence"):
                break
        await body.aclose()  # what Starlette does when the client disconnects

    anyio.run(read_until_first_sentence)
    assert received[-1].startswith(b"event: sentence")
    whole_reply = citing(FAITHFUL * 20).complete(model.calls[0].messages)
    assert model.streams_closed == 1
    assert 0 < model.streamed_tokens < len(whole_reply) / 5 / 2  # stopped in the first half of its reply
