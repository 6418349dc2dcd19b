"""OpenAI-compatible embedding and chat adapters against an httpx.MockTransport (a FAKE server)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx
import pytest

from kgrag_adapters.embeddings.openai_compatible import OpenAICompatibleEmbedder
from kgrag_adapters.llm.openai_chat import OpenAICompatibleChat
from kgrag_core.answering.fallback import fallback_reason
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ports import ChatMessage, ChatModel, Embedder, StreamingChatModel
from kgrag_testing.scripted_llm import mock_openai_transport

BASE = "http://llm.test/v1/"


class Sleeps(list[float]):
    """Records the backoff delays instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def _vector(i: int, dim: int = 3) -> list[float]:
    return [float(i)] * dim


def _embeddings_body(inputs: list[str], *, reverse: bool = False, dim: int = 3) -> dict[str, Any]:
    data = [{"object": "embedding", "index": i, "embedding": _vector(i, dim)} for i in range(len(inputs))]
    return {"object": "list", "data": data[::-1] if reverse else data, "model": "m"}


def _chat_body(content: str | None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}


# --- embeddings ------------------------------------------------------------------------------------


def test_embedder_happy_path_batches_and_orders_by_index() -> None:
    seen: list[tuple[str, Any, str | None]] = []

    def handler(request: httpx.Request, body: Any) -> Mapping[str, Any]:
        seen.append((str(request.url), body, request.headers.get("authorization")))
        return _embeddings_body(body["input"], reverse=True)  # server answers out of order

    emb = OpenAICompatibleEmbedder(
        BASE, "emb-model", "sk-test", 3, batch_size=2, transport=mock_openai_transport(handler)
    )
    assert isinstance(emb, Embedder)
    assert emb.model_id == "emb-model"
    assert emb.dimension == 3
    out = emb.embed_documents(["a", "b", "c"])
    # Batches of 2 then 1; each restored to input order, so index i carries the value i.
    assert out == [(0.0, 0.0, 0.0), (1.0, 1.0, 1.0), (0.0, 0.0, 0.0)]
    assert [body for _, body, _ in seen] == [
        {"model": "emb-model", "input": ["a", "b"]},
        {"model": "emb-model", "input": ["c"]},
    ]
    assert {url for url, _, _ in seen} == {"http://llm.test/v1/embeddings"}
    assert {auth for _, _, auth in seen} == {"Bearer sk-test"}
    assert emb.embed_query("x") == (0.0, 0.0, 0.0)
    assert emb.embed_documents([]) == []
    emb.close()


def test_embedder_retries_429_honouring_retry_after() -> None:
    statuses = [429, 200]
    sleeps = Sleeps()

    def handler(request: httpx.Request, body: Any) -> httpx.Response:
        status = statuses.pop(0)
        if status == 429:
            return httpx.Response(429, headers={"Retry-After": "2"}, json={"error": "slow down"})
        return httpx.Response(200, json=_embeddings_body(body["input"]))

    emb = OpenAICompatibleEmbedder(BASE, "m", None, 3, transport=mock_openai_transport(handler), sleep=sleeps)
    assert emb.embed_documents(["a"]) == [(0.0, 0.0, 0.0)]
    assert sleeps == [2.0]
    assert statuses == []


def test_embedder_persistent_500_raises_after_three_attempts() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request, body: Any) -> httpx.Response:
        calls.append(1)
        return httpx.Response(500, text="boom")

    sleeps = Sleeps()
    emb = OpenAICompatibleEmbedder(BASE, "m", None, 3, transport=mock_openai_transport(handler), sleep=sleeps)
    with pytest.raises(KgragError) as info:
        emb.embed_documents(["a"])
    assert info.value.code is ErrorCode.EMBEDDING_FAILED
    assert info.value.hint
    assert len(calls) == 3
    assert sleeps == [0.5, 1.0]  # exponential backoff, no sleep after the last attempt


def test_embedder_transport_error_is_retried_then_fails() -> None:
    def handler(request: httpx.Request, body: Any) -> httpx.Response:
        raise httpx.ConnectTimeout("timed out", request=request)

    emb = OpenAICompatibleEmbedder(BASE, "m", None, 3, transport=mock_openai_transport(handler), sleep=Sleeps())
    with pytest.raises(KgragError) as info:
        emb.embed_query("a")
    assert info.value.code is ErrorCode.EMBEDDING_FAILED
    assert isinstance(info.value.__cause__, httpx.ConnectTimeout)


def test_embedder_client_error_is_not_retried() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request, body: Any) -> httpx.Response:
        calls.append(1)
        return httpx.Response(401, json={"error": "bad key"})

    emb = OpenAICompatibleEmbedder(BASE, "m", "wrong", 3, transport=mock_openai_transport(handler))
    with pytest.raises(KgragError) as info:
        emb.embed_query("a")
    assert info.value.code is ErrorCode.EMBEDDING_FAILED
    assert "401" in info.value.message
    assert calls == [1]


def test_embedder_rejects_wrong_dimension() -> None:
    transport = mock_openai_transport(lambda request, body: _embeddings_body(body["input"], dim=4))
    emb = OpenAICompatibleEmbedder(BASE, "m", None, 3, transport=transport)
    with pytest.raises(KgragError) as info:
        emb.embed_query("a")
    assert info.value.code is ErrorCode.EMBEDDING_FAILED
    assert "expected 3, got 4" in info.value.message


def test_embedder_rejects_missing_rows() -> None:
    transport = mock_openai_transport(lambda request, body: _embeddings_body(body["input"][:1]))
    emb = OpenAICompatibleEmbedder(BASE, "m", None, 3, transport=transport)
    with pytest.raises(KgragError) as info:
        emb.embed_documents(["a", "b"])
    assert info.value.code is ErrorCode.EMBEDDING_FAILED


# --- chat --------------------------------------------------------------------------------------------


def test_chat_happy_path_and_json_schema_passthrough() -> None:
    bodies: list[Any] = []

    def handler(request: httpx.Request, body: Any) -> Mapping[str, Any]:
        assert str(request.url) == "http://llm.test/v1/chat/completions"
        assert request.headers["authorization"] == "Bearer sk-chat"
        bodies.append(body)
        return _chat_body('{"answer": "42"}')

    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    chat = OpenAICompatibleChat(BASE, "chat-model", "sk-chat", transport=mock_openai_transport(handler))
    assert isinstance(chat, ChatModel)
    assert chat.model_id == "chat-model"
    messages = [ChatMessage("system", "Be terse."), ChatMessage("user", "Meaning of life?")]
    assert chat.complete(messages, json_schema=schema) == '{"answer": "42"}'
    assert chat.complete(messages) == '{"answer": "42"}'
    with_schema, plain = bodies
    assert with_schema == {
        "model": "chat-model",
        "messages": [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "Meaning of life?"},
        ],
        "temperature": 0,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": schema, "strict": True},
        },
    }
    assert "response_format" not in plain
    chat.close()


def test_chat_retries_429_then_succeeds() -> None:
    replies = [
        httpx.Response(429, headers={"Retry-After": "1.5"}),
        httpx.Response(503),
        httpx.Response(200, json=_chat_body("hi")),
    ]
    sleeps = Sleeps()
    chat = OpenAICompatibleChat(
        BASE, "m", None, transport=mock_openai_transport(lambda r, b: replies.pop(0)), sleep=sleeps
    )
    assert chat.complete([ChatMessage("user", "hello")]) == "hi"
    assert sleeps == [1.5, 1.0]  # Retry-After, then backoff for the second attempt


def test_chat_persistent_500_is_llm_unavailable() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request, body: Any) -> httpx.Response:
        calls.append(1)
        return httpx.Response(500)

    sleeps = Sleeps()
    chat = OpenAICompatibleChat(BASE, "m", None, max_retries=2, transport=mock_openai_transport(handler), sleep=sleeps)
    with pytest.raises(KgragError) as info:
        chat.complete([ChatMessage("user", "hello")])
    assert info.value.code is ErrorCode.LLM_UNAVAILABLE
    assert info.value.hint
    assert len(calls) == 3
    assert sleeps == [0.5, 1.0]


def test_chat_timeout_is_retried_then_llm_unavailable() -> None:
    def handler(request: httpx.Request, body: Any) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    chat = OpenAICompatibleChat(
        BASE, "m", None, max_retries=1, transport=mock_openai_transport(handler), sleep=Sleeps()
    )
    with pytest.raises(KgragError) as info:
        chat.complete([ChatMessage("user", "hello")])
    assert info.value.code is ErrorCode.LLM_UNAVAILABLE
    assert isinstance(info.value.__cause__, httpx.ReadTimeout)


def test_chat_overlong_retry_after_fails_fast() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request, body: Any) -> httpx.Response:
        calls.append(1)
        return httpx.Response(429, headers={"Retry-After": "3600"})

    sleeps = Sleeps()
    chat = OpenAICompatibleChat(BASE, "m", None, transport=mock_openai_transport(handler), sleep=sleeps)
    with pytest.raises(KgragError) as info:
        chat.complete([ChatMessage("user", "hello")])
    assert info.value.code is ErrorCode.LLM_RATE_LIMITED
    assert getattr(info.value, "retry_after_s", None) == 3600
    assert calls == [1]
    assert sleeps == []


def test_chat_refusal_without_content_is_an_error() -> None:
    chat = OpenAICompatibleChat(BASE, "m", None, transport=mock_openai_transport(lambda r, b: _chat_body(None)))
    with pytest.raises(KgragError) as info:
        chat.complete([ChatMessage("user", "hello")])
    assert info.value.code is ErrorCode.LLM_UNAVAILABLE


# --- chat streaming --------------------------------------------------------------------------------


def _sse(*pieces: str) -> bytes:
    lines = [f'data: {{"choices": [{{"index": 0, "delta": {{"content": {json.dumps(p)}}}}}]}}\n\n' for p in pieces]
    return (
        'data: {"choices": [{"index": 0, "delta": {"role": "assistant"}}]}\n\n' + "".join(lines) + "data: [DONE]\n\n"
    ).encode()


def test_chat_stream_yields_the_pieces_as_sent_and_asks_for_a_stream() -> None:
    bodies: list[Any] = []

    def handler(request: httpx.Request, body: Any) -> httpx.Response:
        bodies.append(body)
        return httpx.Response(
            200, content=_sse('{"sent', 'ences": ', "[]}"), headers={"content-type": "text/event-stream"}
        )

    chat = OpenAICompatibleChat(BASE, "m", None, transport=mock_openai_transport(handler))
    assert isinstance(chat, StreamingChatModel)
    pieces = list(chat.stream([ChatMessage("user", "hi")], json_schema={"type": "object"}))
    assert pieces == ['{"sent', 'ences": ', "[]}"]
    assert bodies[0]["stream"] is True and bodies[0]["response_format"]["json_schema"]["schema"] == {"type": "object"}


@pytest.mark.parametrize(
    ("response", "code"),
    [
        (httpx.Response(503, text="overloaded"), ErrorCode.LLM_UNAVAILABLE),
        (httpx.Response(429, headers={"retry-after": "3"}), ErrorCode.LLM_RATE_LIMITED),
        (
            httpx.Response(200, content=b'data: {"choices": [{"delta": {"refusal": "no"}}]}\n\n'),
            ErrorCode.LLM_UNAVAILABLE,
        ),
        (httpx.Response(200, content=b"data: {not json\n\n"), ErrorCode.LLM_UNAVAILABLE),
    ],
)
def test_chat_stream_failures_have_the_model_codes(response: httpx.Response, code: ErrorCode) -> None:
    chat = OpenAICompatibleChat(BASE, "m", None, transport=mock_openai_transport(lambda _r, _b: response))
    with pytest.raises(KgragError) as info:
        list(chat.stream([ChatMessage("user", "hi")]))
    assert info.value.code is code


def test_chat_stream_timeout_reads_as_a_timeout() -> None:
    def handler(request: httpx.Request, body: Any) -> httpx.Response:
        raise httpx.ReadTimeout("read timed out", request=request)

    chat = OpenAICompatibleChat(BASE, "m", None, transport=mock_openai_transport(handler))
    with pytest.raises(KgragError) as info:
        list(chat.stream([ChatMessage("user", "hi")]))
    assert info.value.code is ErrorCode.LLM_UNAVAILABLE and fallback_reason(info.value) == "llm_timeout"
