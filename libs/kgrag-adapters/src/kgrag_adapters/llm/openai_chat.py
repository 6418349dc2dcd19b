"""ChatModel over any OpenAI-compatible `/chat/completions` endpoint."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import httpx

from kgrag_adapters.embeddings.openai_compatible import retry_after_seconds
from kgrag_adapters.lifecycle import Closeable
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.tier3 import RateLimitedError
from kgrag_core.ports import ChatMessage

BACKOFF_BASE_S = 0.5
# A query is interactive: a Retry-After longer than this fails now instead of blocking the user.
MAX_RETRY_AFTER_S = 10.0
_HINT_DOWN = "the LLM endpoint is overloaded, slow or down; retry later or check the LLM settings"


class OpenAICompatibleChat(Closeable):
    """Deterministic (temperature 0) chat completions, optionally constrained by a JSON schema.

    5xx and transport errors (timeouts included) are retried `max_retries` times with exponential
    backoff, then raise `KgragError(LLM_UNAVAILABLE)`. A 429 is retried the same way honouring Retry-After,
    then (or at once when Retry-After exceeds `max_retry_after_s`) raises `RateLimitedError`
    (LLM_RATE_LIMITED) carrying the Retry-After. With `retry_rate_limits=False` a 429 raises at once, so a
    caller with its own schedule (tier-3 extraction) is the only one waiting: one retry loop, not two.
    `last_usage` holds (prompt, completion) tokens of the last reply when the endpoint reports them.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        *,
        timeout_s: float = 60,
        max_retries: int = 2,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        retry_rate_limits: bool = True,
        max_retry_after_s: float = MAX_RETRY_AFTER_S,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._max_retries = max_retries
        self._sleep = sleep  # injectable so tests do not really wait
        self._retry_rate_limits = retry_rate_limits
        self._max_retry_after_s = max_retry_after_s
        self._last_usage: tuple[int, int] | None = None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout_s, transport=transport, headers=headers)

    @property
    def model_id(self) -> str:
        return self._model

    @property
    def last_usage(self) -> tuple[int, int] | None:
        return self._last_usage

    def close(self) -> None:
        self._client.close()

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, object] | None = None) -> str:
        payload = self._payload(messages, json_schema)
        self._last_usage = None
        response = self._post(payload)
        try:
            body = response.json()
            message = body["choices"][0]["message"]
            content = message.get("content")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise self._fail(
                f"malformed chat completion response: {response.text[:300]}",
                "the endpoint does not look OpenAI-compatible; check the base URL",
            ) from exc
        if not isinstance(content, str):
            # Structured-output models answer a refused request with `refusal` and no content.
            raise self._fail(
                f"chat completion has no text content (refusal: {message.get('refusal')!r})",
                "the model refused or returned a tool call; check the prompt and the model",
            )
        self._last_usage = _usage(body)
        return content

    def stream(
        self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, object] | None = None
    ) -> Iterator[str]:
        """The reply's text as the endpoint streams it (`stream: true`, server-sent `data:` chunks).

        No retries: a streamed answer is interactive and its caller falls back to the extractive answer.
        Closing the iterator closes the connection, which stops the generation."""
        return self._stream({**self._payload(messages, json_schema), "stream": True})

    # --- internals -----------------------------------------------------------------------------

    def _payload(self, messages: Sequence[ChatMessage], json_schema: Mapping[str, object] | None) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self._model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": 0,
        }
        if json_schema is not None:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": dict(json_schema), "strict": True},
            }
        return payload

    def _stream(self, payload: dict[str, Any]) -> Iterator[str]:
        self._last_usage = None
        try:
            with self._client.stream("POST", self._url, json=payload) as response:
                if response.status_code == 429:
                    raise RateLimitedError(
                        f"chat endpoint returned HTTP 429 (model {self._model}, {self._url})",
                        retry_after_s=retry_after_seconds(response),
                    )
                if not response.is_success:
                    response.read()
                    raise self._fail(
                        f"chat endpoint returned HTTP {response.status_code}: {response.text[:300]}", _HINT_DOWN
                    )
                for line in response.iter_lines():
                    piece = self._stream_piece(line)
                    if piece is None:
                        return
                    if piece:
                        yield piece
        except httpx.TransportError as exc:
            raise self._fail(f"chat stream failed: {exc!r}", _HINT_DOWN) from exc

    def _stream_piece(self, line: str) -> str | None:
        """The text of one `data:` line ("" for none), or None at `[DONE]`."""
        if not line.startswith("data:"):
            return ""
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            return None
        try:
            delta = json.loads(data)["choices"][0].get("delta") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise self._fail(
                f"malformed chat stream chunk: {data[:300]}", "the endpoint does not stream like OpenAI"
            ) from exc
        if delta.get("refusal"):
            raise self._fail(f"the model refused (refusal: {delta['refusal']!r})", "check the prompt and the model")
        content = delta.get("content")
        return content if isinstance(content, str) else ""

    def _fail(self, message: str, hint: str) -> KgragError:
        return KgragError(ErrorCode.LLM_UNAVAILABLE, f"{message} (model {self._model}, {self._url})", hint=hint)

    def _post(self, payload: dict[str, Any]) -> httpx.Response:
        attempts = self._max_retries + 1
        for attempt in range(1, attempts + 1):
            backoff = BACKOFF_BASE_S * 2 ** (attempt - 1)
            try:
                response = self._client.post(self._url, json=payload)
            except httpx.TransportError as exc:
                if attempt == attempts:
                    raise self._fail(f"chat request failed after {attempt} attempts: {exc!r}", _HINT_DOWN) from exc
                self._sleep(backoff)
                continue
            if response.is_success:
                return response
            if response.status_code != 429 and response.status_code < 500:
                raise self._fail(
                    f"chat endpoint returned HTTP {response.status_code}: {response.text[:300]}",
                    "check the API key, the model name, and that the model supports json_schema output",
                )
            delay = retry_after_seconds(response)
            last = attempt == attempts or (delay is not None and delay > self._max_retry_after_s)
            if response.status_code == 429 and (last or not self._retry_rate_limits):
                raise RateLimitedError(
                    f"chat endpoint returned HTTP 429 after {attempt} attempts (model {self._model}, {self._url})"
                    + (f"; Retry-After {delay:g} s" if delay is not None else ""),
                    retry_after_s=delay,
                )
            if last:
                raise self._fail(
                    f"chat endpoint returned HTTP {response.status_code} after {attempt} attempts", _HINT_DOWN
                )
            self._sleep(delay if delay is not None else backoff)
        raise AssertionError("unreachable: the loop returns or raises")


def _usage(body: Any) -> tuple[int, int] | None:
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if isinstance(prompt, int) and isinstance(completion, int):
        return prompt, completion
    return None
