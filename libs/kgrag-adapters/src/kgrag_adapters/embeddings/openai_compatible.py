"""Embeddings from any OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, TEI, Ollama, ...)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from kgrag_adapters.lifecycle import Closeable
from kgrag_core.errors import ErrorCode, KgragError

MAX_ATTEMPTS = 3
# Backoff between attempts when the server gives no Retry-After: 0.5 s, then 1 s.
BACKOFF_BASE_S = 0.5
# A Retry-After longer than this is not worth blocking an ingest worker for; fail instead.
MAX_RETRY_AFTER_S = 30.0


_SECONDS = re.compile(r"\d+(?:\.\d+)?")


def retry_after_seconds(response: httpx.Response) -> float | None:
    """The server's Retry-After (delta-seconds or HTTP-date) in seconds, or None if absent/unparsable."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    stripped = value.strip()
    if _SECONDS.fullmatch(stripped):  # delta-seconds (fractions accepted: some servers send them)
        return float(stripped)
    try:  # RFC 9110 also allows an HTTP-date
        when = parsedate_to_datetime(stripped)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _is_retryable(status: int) -> bool:
    return status == 429 or status >= 500


class OpenAICompatibleEmbedder(Closeable):
    """Embedder over HTTP. Batches inputs, restores the server's order by `index`, validates sizes.

    Transient failures (429, 5xx, transport errors) are retried up to 3 attempts in all, honouring
    Retry-After; anything else raises `KgragError(EMBEDDING_FAILED)` with a hint.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        dimension: int,
        *,
        batch_size: int = 64,
        timeout_s: float = 30,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if dimension < 1 or batch_size < 1:
            raise ValueError("dimension and batch_size must be >= 1")
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._dimension = dimension
        self._batch_size = batch_size
        self._sleep = sleep  # injectable so tests do not really wait
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout_s, transport=transport, headers=headers)

    @property
    def model_id(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        return self._dimension

    def close(self) -> None:
        self._client.close()

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of strings, not a string")
        out: list[tuple[float, ...]] = []
        for start in range(0, len(texts), self._batch_size):
            out.extend(self._embed_batch(list(texts[start : start + self._batch_size])))
        return out

    def embed_query(self, text: str) -> tuple[float, ...]:
        return self.embed_documents([text])[0]

    # --- internals -----------------------------------------------------------------------------

    def _fail(self, message: str, hint: str) -> KgragError:
        return KgragError(ErrorCode.EMBEDDING_FAILED, f"{message} (model {self._model}, {self._url})", hint=hint)

    def _post(self, payload: dict[str, Any]) -> httpx.Response:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                response = self._client.post(self._url, json=payload)
            except httpx.TransportError as exc:
                if attempt == MAX_ATTEMPTS:
                    raise self._fail(
                        f"embedding request failed after {attempt} attempts: {exc!r}",
                        "check that the embedding endpoint is reachable and the timeout is long enough",
                    ) from exc
                self._sleep(BACKOFF_BASE_S * 2 ** (attempt - 1))
                continue
            if response.is_success:
                return response
            if not _is_retryable(response.status_code):
                raise self._fail(
                    f"embedding endpoint returned HTTP {response.status_code}: {response.text[:300]}",
                    "check the API key, the model name and the base URL",
                )
            delay = retry_after_seconds(response)
            if attempt == MAX_ATTEMPTS or (delay is not None and delay > MAX_RETRY_AFTER_S):
                raise self._fail(
                    f"embedding endpoint returned HTTP {response.status_code} after {attempt} attempts",
                    "the endpoint is overloaded or failing; retry later or lower the ingest rate",
                )
            self._sleep(delay if delay is not None else BACKOFF_BASE_S * 2 ** (attempt - 1))
        raise AssertionError("unreachable: the loop returns or raises")

    def _embed_batch(self, batch: list[str]) -> list[tuple[float, ...]]:
        response = self._post({"model": self._model, "input": batch})
        try:
            data = response.json()["data"]
            # The API does not promise response order; `index` is the position in `input`.
            rows = sorted(((int(d["index"]), d["embedding"]) for d in data), key=lambda r: r[0])
        except (ValueError, KeyError, TypeError) as exc:
            raise self._fail(
                f"malformed embeddings response: {response.text[:300]}",
                "the endpoint does not look OpenAI-compatible; check the base URL",
            ) from exc
        if [i for i, _ in rows] != list(range(len(batch))):
            raise self._fail(
                f"embeddings response has indices {[i for i, _ in rows]} for {len(batch)} inputs",
                "the endpoint returned a partial or duplicated result; retry later",
            )
        vectors: list[tuple[float, ...]] = []
        for _, embedding in rows:
            if not isinstance(embedding, list) or len(embedding) != self._dimension:
                got = len(embedding) if isinstance(embedding, list) else type(embedding).__name__
                raise self._fail(
                    f"embedding dimension mismatch: expected {self._dimension}, got {got}",
                    "set the configured dimension to the model's output size (or pick the matching model); "
                    "base64 encoding is not supported",
                )
            vectors.append(tuple(float(x) for x in embedding))
        return vectors
