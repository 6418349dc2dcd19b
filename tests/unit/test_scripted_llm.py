"""The FAKE scripted chat model used in place of a real (paid, external) LLM in tests."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ports import ChatMessage, ChatModel
from kgrag_testing.scripted_llm import ScriptedCall, ScriptedChatModel, ScriptExhaustedError

USER = [ChatMessage("user", "What is the refund policy?")]


def test_is_a_labelled_fake_chat_model() -> None:
    fake = ScriptedChatModel(["x"])
    assert isinstance(fake, ChatModel)
    assert fake.model_id == "scripted-fake"
    assert "FAKE" in (ScriptedChatModel.__doc__ or "")


def test_replies_in_order_and_records_calls() -> None:
    schema = {"type": "object"}
    fake = ScriptedChatModel(["first", "second"])
    assert fake.complete(USER, json_schema=schema) == "first"
    assert fake.remaining == 1
    assert fake.complete(USER) == "second"
    assert fake.calls == [ScriptedCall(tuple(USER), schema), ScriptedCall(tuple(USER), None)]
    fake.assert_exhausted()


def test_scripted_exception_is_raised_and_call_recorded() -> None:
    outage = KgragError(ErrorCode.LLM_UNAVAILABLE, "down", hint="retry")
    fake = ScriptedChatModel([outage, "recovered"])
    with pytest.raises(KgragError) as info:
        fake.complete(USER)
    assert info.value is outage
    assert fake.complete(USER) == "recovered"
    assert len(fake.calls) == 2


def test_running_out_of_script_is_a_clear_assertion() -> None:
    fake = ScriptedChatModel(["only"])
    fake.complete(USER)
    with pytest.raises(ScriptExhaustedError, match="script exhausted after 1 replies") as info:
        fake.complete(USER)
    assert isinstance(info.value, AssertionError)
    assert "refund policy" in str(info.value)


def test_unused_replies_fail_assert_exhausted() -> None:
    fake = ScriptedChatModel(["a", "b"])
    fake.complete(USER)
    with pytest.raises(AssertionError, match="1 scripted replies were never used"):
        fake.assert_exhausted()


def test_callable_script_answers_every_call() -> None:
    def responder(messages: Sequence[ChatMessage]) -> str:
        return f"echo: {messages[-1].content}"

    fake = ScriptedChatModel(responder)
    assert fake.complete(USER) == "echo: What is the refund policy?"
    assert fake.complete([ChatMessage("user", "again")]) == "echo: again"
    assert len(fake.calls) == 2
    assert fake.remaining == 0
