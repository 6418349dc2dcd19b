"""FAKE chat model for tests, and a mock transport for the OpenAI-compatible HTTP adapters.

A chat LLM is an external paid service, so tests never call a real one; they script its replies
with `ScriptedChatModel` instead. Everything here is a test double, never a production path.

Failure modes for tier-3 extraction tests: `BAD_JSON`, `llm_timeout()`, `rate_limited(retry_after_s)`,
and `extraction_reply(...)` / `relation(...)` / `claim(...)` / `entity(...)` to author replies in the
fixed reply format, including quotes not in the chunk and disallowed triples.
"""

from __future__ import annotations

import json
import re
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.tier3 import RateLimitedError, rendered_chunks
from kgrag_core.ports import ChatMessage

if TYPE_CHECKING:
    import httpx


@dataclass(frozen=True, slots=True)
class StreamCut:
    """A scripted reply that streams `text` and then fails with `error` (a connection lost mid-answer)."""

    text: str
    error: BaseException


Reply = str | BaseException | StreamCut
Responder = Callable[[Sequence[ChatMessage]], str]


class ScriptExhaustedError(AssertionError):
    """The code under test asked the fake for more replies than the test scripted."""


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    messages: tuple[ChatMessage, ...]
    json_schema: Mapping[str, object] | None


class ScriptedChatModel:
    """FAKE ChatModel (model_id "scripted-fake"): replies from a script, not from a model.

    `script` is either a list of replies, consumed in order (a string is returned, an exception
    instance is raised), or a callable `messages -> str` answering every call. Every call is
    recorded in `calls`, including ones whose scripted reply is an exception.
    """

    def __init__(
        self,
        script: Sequence[Reply] | Responder,
        *,
        model_id: str = "scripted-fake",
        token_latency_s: float = 0.0,
        token_chars: int = 4,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._model_id = model_id
        # `stream` hands the reply over `token_chars` characters at a time, waiting `token_latency_s` before
        # each piece, like a model generating tokens.
        self.token_latency_s = token_latency_s
        self._token_chars = token_chars
        self._sleep = sleep
        self.streamed_tokens = 0  # pieces `stream` has handed over, over all calls
        self.streams_closed = 0  # streams stopped by their consumer before the reply was complete
        self._responder: Responder | None = None
        self._replies: deque[Reply] = deque()
        if callable(script):
            self._responder = script
        else:
            self._replies.extend(script)
        self.calls: list[ScriptedCall] = []

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def remaining(self) -> int:
        """Replies not consumed yet (0 for a callable script)."""
        return len(self._replies)

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, object] | None = None) -> str:
        reply = self._next(messages, json_schema)
        if isinstance(reply, StreamCut):
            raise reply.error
        return reply

    def stream(
        self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, object] | None = None
    ) -> Iterator[str]:
        """The next reply in pieces (a StreamCut's text, then its error); one call like `complete`."""
        reply = self._next(messages, json_schema)
        return self._pieces(reply.text if isinstance(reply, StreamCut) else reply, reply)

    def _pieces(self, text: str, reply: str | StreamCut) -> Iterator[str]:
        size = max(1, self._token_chars)
        done = False
        try:
            for start in range(0, len(text), size):
                if self.token_latency_s > 0:
                    self._sleep(self.token_latency_s)
                self.streamed_tokens += 1
                yield text[start : start + size]
            done = True
        finally:
            if not done:
                self.streams_closed += 1
        if isinstance(reply, StreamCut):
            raise reply.error

    def _next(self, messages: Sequence[ChatMessage], json_schema: Mapping[str, object] | None) -> str | StreamCut:
        self.calls.append(ScriptedCall(tuple(messages), json_schema))
        if self._responder is not None:
            return self._responder(messages)
        if not self._replies:
            last = messages[-1].content[:200] if messages else "<no messages>"
            raise ScriptExhaustedError(
                f"ScriptedChatModel: script exhausted after {len(self.calls) - 1} replies; "
                f"unexpected call #{len(self.calls)} whose last message is {last!r}"
            )
        reply = self._replies.popleft()
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def assert_exhausted(self) -> None:
        """Fail if the code under test made fewer calls than scripted."""
        if self._replies:
            raise AssertionError(f"ScriptedChatModel: {len(self._replies)} scripted replies were never used")


# --- failure modes and reply authoring for tier-3 extraction tests -----------------------------------

BAD_JSON = '{"entities": [{"chunk_id": "c1", "name": '  # a reply cut off mid-object


def llm_timeout(message: str = "chat request timed out") -> KgragError:
    """What the HTTP adapter raises when the endpoint times out (after its own retries)."""
    return KgragError(ErrorCode.LLM_UNAVAILABLE, message, hint="the LLM endpoint is slow or down (FAKE)")


def rate_limited(retry_after_s: float | None = 1.0) -> RateLimitedError:
    """What the HTTP adapter raises for an HTTP 429, carrying the server's Retry-After."""
    return RateLimitedError("HTTP 429 from the FAKE endpoint", retry_after_s=retry_after_s)


def entity(chunk_id: str, name: str, type_: str, quote: str) -> dict[str, Any]:
    return {"chunk_id": chunk_id, "name": name, "type": type_, "quote": quote}


def relation(
    chunk_id: str,
    subject: tuple[str, str],
    relation_name: str,
    obj: tuple[str, str],
    quote: str,
    *,
    polarity: str = "positive",
    modality: str = "fact",
    valid_from: str | None = None,
    valid_to: str | None = None,
    confidence: float = 0.9,
) -> dict[str, Any]:
    """A relation item; `subject` and `obj` are (name, type)."""
    return {
        "chunk_id": chunk_id,
        "subject": subject[0],
        "subject_type": subject[1],
        "relation": relation_name,
        "object": obj[0],
        "object_type": obj[1],
        "quote": quote,
        "polarity": polarity,
        "modality": modality,
        "valid_from": valid_from,
        "valid_to": valid_to,
        "confidence": confidence,
    }


def claim(
    chunk_id: str,
    entity_ref: tuple[str, str],
    attribute: str,
    value: str,
    quote: str,
    *,
    polarity: str = "positive",
    modality: str = "fact",
    valid_from: str | None = None,
    valid_to: str | None = None,
    confidence: float = 0.9,
) -> dict[str, Any]:
    """A claim item; `entity_ref` is (name, type)."""
    return {
        "chunk_id": chunk_id,
        "entity": entity_ref[0],
        "entity_type": entity_ref[1],
        "attribute": attribute,
        "value": value,
        "quote": quote,
        "polarity": polarity,
        "modality": modality,
        "valid_from": valid_from,
        "valid_to": valid_to,
        "confidence": confidence,
    }


def extraction_reply(
    entities: Sequence[Mapping[str, Any]] = (),
    relations: Sequence[Mapping[str, Any]] = (),
    claims: Sequence[Mapping[str, Any]] = (),
) -> str:
    """A tier-3 reply in the fixed format, as the model would send it."""
    return json.dumps(
        {
            "entities": [dict(e) for e in entities],
            "relations": [dict(r) for r in relations],
            "claims": [dict(c) for c in claims],
        }
    )


# A handler gets the request and its parsed JSON body; a dict it returns becomes a 200 JSON reply.
OpenAIHandler = Callable[["httpx.Request", Any], "httpx.Response | Mapping[str, Any]"]


def first_word_entity(messages: Sequence[ChatMessage]) -> str:
    """FAKE model reply: one Organization per chunk of the request, quoting the chunk's first capitalised
    word (always verbatim, so it always survives validation)."""
    items = []
    for chunk_id, text in rendered_chunks(messages[-1].content):
        word = re.search(r"\b[A-Z][a-z]{3,}\b", text)
        if word:
            items.append(entity(chunk_id, word.group(0), "Organization", word.group(0)))
    return extraction_reply(entities=items)


def mock_openai_transport(handler: OpenAIHandler) -> httpx.MockTransport:
    """An httpx.MockTransport (FAKE server) for the OpenAI-compatible adapters' `transport=` argument."""
    # Imported here because only the HTTP adapters' tests need it; kgrag-testing itself does not
    # depend on httpx (it comes with kgrag-adapters).
    import httpx

    def _handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        result = handler(request, body)
        if isinstance(result, httpx.Response):
            return result
        return httpx.Response(200, json=dict(result))

    return httpx.MockTransport(_handle)
