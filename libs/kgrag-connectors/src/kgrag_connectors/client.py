"""A client that delivers change events to kgrag's ingest API with an ingest-scope token.

- **Batching**: events go in batches of `batch_size` over one keep-alive connection; the checkpoint moves
  after a batch, to the cursor of its last event, only once every event of it has an answer.
- **Retries**: a transport error, 429, 500, 502, 503 or 504 is retried with exponential backoff and full
  jitter (a `Retry-After` is honoured, within `max_backoff_s`); any other answer is final.
- **Idempotency**: an upsert carries the document's whole content, and kgrag keeps one version per
  content (a second identical upsert answers UNCHANGED, on Kafka the indexer finds nothing changed); a
  delete of a document already gone answers ABSENT. So a retry, a replay after a crash or a duplicate
  in the source's feed has one effect. The client also drops an event identical to the last one it
  delivered for the same document (DUPLICATE), saving the request.
- **Bad input** (a 4xx other than 429) is that event's result with kgrag's stable error code; the rest of
  the batch goes on and the checkpoint moves past it (sending it again would not help). When retries run
  out, delivery stops (`complete` False) and the checkpoint stays before the undelivered event.
"""

from __future__ import annotations

import random
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from kgrag_connectors.checkpoint import Checkpoint, MemoryCheckpoint
from kgrag_connectors.events import ChangeEvent, DocumentChanged, DocumentDeleted

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
_REMEMBERED_DOCS = 10_000  # documents whose last delivered event id is kept (duplicate suppression)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 6
    initial_backoff_s: float = 0.5
    max_backoff_s: float = 30.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds before attempt `attempt + 1` (full jitter; a server's Retry-After is a floor)."""
        ceiling = min(self.max_backoff_s, self.initial_backoff_s * 2 ** (attempt - 1))
        wait = rng.uniform(0, ceiling)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_backoff_s))
        return wait


@dataclass(frozen=True, slots=True)
class EventResult:
    doc_id: str
    kind: str  # "changed" | "deleted"
    # the API's INDEXED | UPDATED | UNCHANGED | QUEUED | DELETED, or ABSENT | DUPLICATE | REJECTED | UNDELIVERED
    status: str
    error_code: str | None = None
    message: str = ""
    attempts: int = 0


@dataclass(slots=True)
class DeliveryReport:
    results: list[EventResult] = field(default_factory=list)
    checkpoint: str | None = None
    complete: bool = True

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.results:
            out[r.status] = out.get(r.status, 0) + 1
        return dict(sorted(out.items()))


class KgragIngestClient:
    """Deliver change events to `base_url` (the query API or the connector gateway) as `token`'s principal."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        checkpoint: Checkpoint | None = None,
        batch_size: int = 50,
        retry: RetryPolicy | None = None,
        timeout_s: float = 60.0,
        http: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        seed: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.checkpoint = checkpoint if checkpoint is not None else MemoryCheckpoint()
        self.batch_size = batch_size
        self.retry = retry or RetryPolicy()
        self._own_http = http is None
        self._http = http or httpx.Client(base_url=base_url, timeout=timeout_s)
        self._base = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._delivered: OrderedDict[str, str] = OrderedDict()  # doc_id -> id of its last delivered event

    def __enter__(self) -> KgragIngestClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._own_http:
            self._http.close()

    def resume_from(self) -> str | None:
        """The cursor to read the source from: the last event kgrag has taken (None: from the start)."""
        return self.checkpoint.load()

    def deliver(self, events: Iterable[ChangeEvent]) -> DeliveryReport:
        """Deliver events in order, batch by batch; stops at the first event retries could not deliver."""
        report = DeliveryReport(checkpoint=self.checkpoint.load())
        for batch in _batches(events, self.batch_size):
            for event in batch:
                result = self._deliver_one(event)
                report.results.append(result)
                if result.status == "UNDELIVERED":
                    report.complete = False
                    return report
            cursor = next((e.cursor for e in reversed(batch) if e.cursor is not None), None)
            if cursor is not None:
                self.checkpoint.save(cursor)
                report.checkpoint = cursor
        return report

    def _deliver_one(self, event: ChangeEvent) -> EventResult:
        kind = "changed" if isinstance(event, DocumentChanged) else "deleted"
        if self._delivered.get(event.doc_id) == event.event_id:
            return EventResult(event.doc_id, kind, "DUPLICATE", message="identical to the last event delivered")
        response, attempts = self._send(event)
        if response is None:
            return EventResult(event.doc_id, kind, "UNDELIVERED", "UNREACHABLE", "kgrag did not answer", attempts)
        result = _result(event, kind, response, attempts)
        if result.status not in ("REJECTED", "UNDELIVERED"):
            self._remember(event)
        return result

    def _send(self, event: ChangeEvent) -> tuple[httpx.Response | None, int]:
        last: httpx.Response | None = None
        for attempt in range(1, self.retry.max_attempts + 1):
            retry_after = None
            try:
                last = self._request(event)
            except httpx.TransportError:
                last = None
            else:
                if last.status_code not in RETRIED_STATUSES:
                    return last, attempt
                retry_after = _retry_after(last)
            if attempt < self.retry.max_attempts:
                self._sleep(self.retry.delay(attempt, retry_after, self._rng))
        if last is not None and last.status_code not in (429, 502, 503, 504):
            return last, self.retry.max_attempts  # a server error that persists: report it as it is
        return None, self.retry.max_attempts

    def _request(self, event: ChangeEvent) -> httpx.Response:
        if isinstance(event, DocumentDeleted):
            url = f"{self._base}/v1/ingest/documents/{quote(event.doc_id, safe='')}"
            return self._http.delete(url, headers=self._headers)
        return self._http.post(f"{self._base}/v1/ingest/documents", json=event.request_body(), headers=self._headers)

    def _remember(self, event: ChangeEvent) -> None:
        self._delivered[event.doc_id] = event.event_id
        self._delivered.move_to_end(event.doc_id)
        while len(self._delivered) > _REMEMBERED_DOCS:
            self._delivered.popitem(last=False)


def _result(event: ChangeEvent, kind: str, response: httpx.Response, attempts: int) -> EventResult:
    body = _json(response)
    if response.is_success:
        outcome = _object(body.get("outcome"))
        status = str(outcome.get("status") or body.get("status") or "QUEUED").upper()
        return EventResult(event.doc_id, kind, status, message=str(outcome.get("message") or ""), attempts=attempts)
    error = _object(body.get("error"))
    code = str(error.get("code") or f"HTTP_{response.status_code}")
    if kind == "deleted" and code == "DOCUMENT_NOT_FOUND":  # already gone: the deletion's effect holds
        return EventResult(event.doc_id, kind, "ABSENT", message=str(error.get("message") or ""), attempts=attempts)
    return EventResult(event.doc_id, kind, "REJECTED", code, str(error.get("message") or response.text[:200]), attempts)


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _batches(events: Iterable[ChangeEvent], size: int) -> Iterator[list[ChangeEvent]]:
    batch: list[ChangeEvent] = []
    for event in events:
        batch.append(event)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
