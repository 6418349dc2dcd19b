"""Recorder/replayer of chat replies keyed by the request hash, and the HTTP adapter's rate-limit error
that tier 3 waits on. No real model is called: the inner model is the FAKE scripted one, the HTTP server an
httpx.MockTransport."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from kgrag_adapters.llm.openai_chat import OpenAICompatibleChat
from kgrag_adapters.llm.replay import RecordingChatModel, ReplayChatModel, request_key
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.tier3 import RateLimitedError
from kgrag_core.ports import ChatMessage, ChatModel
from kgrag_testing.scripted_llm import ScriptedChatModel, mock_openai_transport

MESSAGES = [ChatMessage("system", "Extract."), ChatMessage("user", 'Chunk "c1": Priya leads Routing \u2014 since May.')]
SCHEMA: dict[str, object] = {"type": "object", "properties": {"a": {"type": "string"}}}


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def test_request_key_is_sha256_of_canonical_json() -> None:
    key = request_key("m", MESSAGES, SCHEMA)
    canonical = json.dumps(
        {
            "json_schema": SCHEMA,
            "messages": [{"content": m.content, "role": m.role} for m in MESSAGES],
            "model": "m",
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert key == hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    reordered: dict[str, object] = {"properties": {"a": {"type": "string"}}, "type": "object"}
    assert request_key("m", MESSAGES, reordered) == key  # key order does not matter
    assert request_key("other", MESSAGES, SCHEMA) != key
    assert request_key("m", MESSAGES, None) != key
    assert request_key("m", [*MESSAGES[:1], ChatMessage("user", "changed")], SCHEMA) != key


def test_record_then_replay_serves_the_same_reply(tmp_path: Path) -> None:
    inner = ScriptedChatModel(['{"a": "first"}'], model_id="gpt-test")
    recorder = RecordingChatModel(inner, tmp_path)
    assert isinstance(recorder, ChatModel)
    assert recorder.model_id == "gpt-test"
    assert recorder.complete(MESSAGES, json_schema=SCHEMA) == '{"a": "first"}'
    key = request_key("gpt-test", MESSAGES, SCHEMA)
    record = json.loads((tmp_path / f"{key}.json").read_text(encoding="utf-8"))
    assert record["reply"] == '{"a": "first"}' and record["recorded_from"] == "gpt-test"
    assert record["request"]["messages"][1]["content"] == MESSAGES[1].content
    assert [p.name for p in tmp_path.iterdir()] == [f"{key}.json"]  # no temporary file left behind

    replay = ReplayChatModel(tmp_path, model_id="gpt-test")
    assert isinstance(replay, ChatModel)
    assert replay.complete(MESSAGES, json_schema=SCHEMA) == '{"a": "first"}'
    assert replay.misses == []


def test_replay_miss_is_llm_unavailable_naming_the_key(tmp_path: Path) -> None:
    replay = ReplayChatModel(tmp_path)
    with pytest.raises(KgragError) as info:
        replay.complete(MESSAGES, json_schema=SCHEMA)
    key = request_key("replay", MESSAGES, SCHEMA)
    assert info.value.code is ErrorCode.LLM_UNAVAILABLE
    assert info.value.hint is not None and key in info.value.hint
    assert replay.misses == [key]


def test_hand_authored_reply_under_the_default_model_id(tmp_path: Path) -> None:
    key = request_key("replay", MESSAGES, None)
    (tmp_path / f"{key}.json").write_text(json.dumps({"request": {}, "reply": "authored"}), encoding="utf-8")
    assert ReplayChatModel(tmp_path).complete(MESSAGES) == "authored"
    (tmp_path / f"{key}.json").write_text('{"reply": 5}', encoding="utf-8")
    with pytest.raises(KgragError) as info:
        ReplayChatModel(tmp_path).complete(MESSAGES)
    assert info.value.code is ErrorCode.LLM_UNAVAILABLE


def test_a_failed_call_is_not_recorded(tmp_path: Path) -> None:
    outage = KgragError(ErrorCode.LLM_UNAVAILABLE, "down")
    recorder = RecordingChatModel(ScriptedChatModel([outage]), tmp_path)
    with pytest.raises(KgragError):
        recorder.complete(MESSAGES)
    assert list(tmp_path.iterdir()) == []


# --- the HTTP adapter's rate-limit error ---------------------------------------------------------------------


def _chat_body(content: str, usage: dict[str, int] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
    if usage is not None:
        body["usage"] = usage
    return body


def test_http_429_without_adapter_retries_raises_rate_limited_with_retry_after() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request, body: Any) -> httpx.Response:
        calls.append(1)
        return httpx.Response(429, headers={"Retry-After": "12"})

    sleeps = Sleeps()
    chat = OpenAICompatibleChat(
        "http://llm.test/v1", "m", None, transport=mock_openai_transport(handler), sleep=sleeps, retry_rate_limits=False
    )
    with pytest.raises(RateLimitedError) as info:
        chat.complete(MESSAGES)
    assert info.value.code is ErrorCode.LLM_RATE_LIMITED
    assert info.value.retry_after_s == 12.0
    assert calls == [1] and sleeps == []  # the caller waits, not the adapter: one retry loop
    chat.close()


def test_http_429_after_the_adapter_retries_is_rate_limited() -> None:
    replies = [httpx.Response(429, headers={"Retry-After": "1"}), httpx.Response(429)]
    sleeps = Sleeps()
    chat = OpenAICompatibleChat(
        "http://llm.test/v1",
        "m",
        None,
        max_retries=1,
        transport=mock_openai_transport(lambda r, b: replies.pop(0)),
        sleep=sleeps,
    )
    with pytest.raises(RateLimitedError) as info:
        chat.complete(MESSAGES)
    assert info.value.retry_after_s is None
    assert sleeps == [1.0]
    chat.close()


def test_endpoint_usage_is_reported() -> None:
    usage = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    chat = OpenAICompatibleChat(
        "http://llm.test/v1", "m", None, transport=mock_openai_transport(lambda r, b: _chat_body("hi", usage))
    )
    assert chat.last_usage is None
    assert chat.complete(MESSAGES) == "hi"
    assert chat.last_usage == (120, 30)
    chat.close()
