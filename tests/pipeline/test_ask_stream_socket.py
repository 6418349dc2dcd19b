"""A streamed ask over a real socket (uvicorn on a free port): the client reads the first verified sentence
and hangs up, and the server stops the generation — the FAKE streaming model sees its stream closed long
before its reply is complete. (The in-process test in test_ask_verified_http.py closes the body the way
Starlette would; this one lets uvicorn and Starlette notice the disconnect themselves.)"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from kgrag_query_api.api import create_app
from kgrag_runtime.app import KgragApp
from tests.pipeline.corpus import corpus
from tests.pipeline.test_ask_verified_http import FAITHFUL, QUESTION, READER, citing
from tests.pipeline.test_http_api import VERIFIER
from tests.socket_server import serving_api

pytestmark = pytest.mark.pipeline


@contextmanager
def serving(app: KgragApp) -> Iterator[str]:
    with serving_api(create_app(app, VERIFIER)) as url:
        yield url


def test_a_client_hanging_up_a_real_socket_mid_stream_stops_the_generation(kg: KgragApp) -> None:
    kg.ingest(corpus())
    # 40 sentences, 5 characters a piece, 5 ms a piece: several seconds of generation if nobody stops it.
    model = citing(FAITHFUL * 20)
    model.token_latency_s = 0.005
    seen: list[str] = []
    with serving(dataclasses.replace(kg, llm=model)) as base:
        with httpx.Client(base_url=base, timeout=60) as client:
            ask = {"question": QUESTION, "options": {"stream": True}}
            with client.stream("POST", "/v1/ask", json=ask, headers=READER) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        seen.append(line.removeprefix("event: "))
                    if seen and seen[-1] == "sentence":
                        break  # leaving the block closes the connection mid-stream
        deadline = time.monotonic() + 30
        while model.streams_closed == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert seen[0] == "route" and "citations" in seen and seen[-1] == "sentence"
    assert "done" not in seen
    whole_reply = citing(FAITHFUL * 20).complete(model.calls[0].messages)
    assert model.streams_closed == 1, "the model's stream ran on after the client left"
    assert 0 < model.streamed_tokens < len(whole_reply) / 5 / 2  # stopped in the first half of its reply
