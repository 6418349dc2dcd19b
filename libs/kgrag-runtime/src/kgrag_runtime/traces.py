"""Query traces off the request path, and the reads and feedback on them.

A search or an ask hands its trace to `TraceRecorder.record`, which queues it and returns its id at once;
one writer thread saves what is queued in one INSERT per batch, and purges traces older than the retention
every hour. A trace still queued is already readable (`get` looks in the queue first), so a caller who reads
its trace right after the response never misses it. When the store cannot keep up and the queue is full, a
new trace is dropped and counted (`status()["dropped"]`), never the search that made it: a trace is a
record of a query, not part of its answer. Closing the recorder writes everything queued.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import TracebackType

from kgrag_core.acl import Caller
from kgrag_core.answering.extractive import ExtractiveSettings
from kgrag_core.answering.generative import ANSWER_SCHEMA, SYSTEM_PROMPT
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.graph_retrieval.router import ROUTER_VERSION
from kgrag_core.graph_retrieval.searcher import GraphAssistedSearcher
from kgrag_core.ports import ChatModel, TraceStore
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_core.tracing.build import TraceVersions
from kgrag_core.tracing.model import (
    Feedback,
    Trace,
    TraceKind,
    new_feedback,
    new_trace_id,
    owner_of,
    parse_comment,
    trace_not_found,
)

log = logging.getLogger(__name__)

BATCH = 256  # traces per INSERT
QUEUE_MAX = 10_000  # traces waiting at most; beyond it new ones are dropped (and counted)
PURGE_EVERY_S = 3600.0
VERSIONS_TTL_S = 30.0  # how long the ontology version read for traces is reused
_RETRY_S = (0.5, 1.0, 2.0, 5.0)

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


def prompt_fingerprint() -> str:
    """The answer prompt's version: a hash of its system prompt and reply schema."""
    text = SYSTEM_PROMPT + "\x1f" + json.dumps(ANSWER_SCHEMA, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(slots=True)
class VersionSource:
    """The versions a trace names; the ontology's is read from the store at most every VERSIONS_TTL_S."""

    searcher: HybridSearcher
    graph_searcher: GraphAssistedSearcher | None
    llm: ChatModel | None
    extractor_version: str
    active_ontology: Callable[[], Mapping[str, object] | None]
    _ontology: tuple[float, str | None] | None = None

    def current(self) -> TraceVersions:
        fusion: dict[str, object] = {"rrf_k": self.searcher.rrf_k}
        if self.graph_searcher is not None:
            cfg = self.graph_searcher.settings
            fusion.update(
                {
                    "route_weights": dict(sorted(cfg.route_weights.items())),
                    "multi_hop_graph_weight": cfg.multi_hop_graph_weight,
                    "keep_head": cfg.keep_head,
                    "entity_floor": [cfg.entity_keep_head, cfg.entity_agreed_rank, cfg.lookup_keep_head],
                    "pool": cfg.pool,
                    "budget_tokens": cfg.budget_tokens,
                    "line_share": cfg.line_share,
                }
            )
        extractive = ExtractiveSettings()
        return TraceVersions(
            embedding_model=self.searcher.embedder.model_id,
            extractor=self.extractor_version,
            ontology=self._ontology_version(),
            router=self.graph_searcher.router.version if self.graph_searcher is not None else ROUTER_VERSION,
            fusion=fusion,
            llm_model=self.llm.model_id if self.llm is not None else None,
            prompt_sha256=prompt_fingerprint() if self.llm is not None else None,
            answerer="llm"
            if self.llm is not None
            else f"extractive(sentences={extractive.max_sentences}, coverage={extractive.min_coverage},"
            f" sentence_score={extractive.min_sentence_score})",
        )

    def _ontology_version(self) -> str | None:
        now = time.monotonic()
        if self._ontology is None or now - self._ontology[0] > VERSIONS_TTL_S:
            body = self.active_ontology()
            version = body.get("version") if body else None
            self._ontology = (now, str(version) if version is not None else None)
        return self._ontology[1]


class TraceRecorder:
    """Queues traces and saves them from one thread (see the module docstring); a context manager."""

    def __init__(
        self,
        store: TraceStore,
        versions: Callable[[], TraceVersions],
        *,
        retention_days: int,
        clock: Clock = _utc_now,
        queue_max: int = QUEUE_MAX,
        purge_every_s: float = PURGE_EVERY_S,
    ) -> None:
        self.store = store
        self.versions = versions
        self.retention = timedelta(days=retention_days)
        self.clock = clock
        self._queue_max = queue_max
        self._purge_every_s = purge_every_s
        self._pending: OrderedDict[str, Trace] = OrderedDict()
        self._writing: dict[str, Trace] = {}  # taken by the writer, not yet committed: still readable
        self._cond = threading.Condition()
        self._stop = False
        self._dropped = 0
        self._saved = 0
        self._thread = threading.Thread(target=self._run, name="kgrag-trace-writer", daemon=True)
        self._thread.start()

    # --- recording -------------------------------------------------------------------------------------------

    def record(self, kind: TraceKind, caller: Caller, body: Mapping[str, object]) -> str:
        trace = Trace(new_trace_id(), kind, owner_of(caller), self.clock(), body)
        with self._cond:
            if len(self._pending) >= self._queue_max:
                self._dropped += 1
                if self._dropped == 1 or self._dropped % 1000 == 0:
                    log.warning("trace queue full (%d): %d traces dropped so far", self._queue_max, self._dropped)
                return trace.trace_id
            self._pending[trace.trace_id] = trace
            self._cond.notify()
        return trace.trace_id

    def flush(self, timeout_s: float = 30.0) -> None:
        """Wait until everything queued so far is saved (or `timeout_s` passed)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            self._cond.notify_all()
            while (self._pending or self._writing) and self._thread.is_alive():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)

    def status(self) -> dict[str, object]:
        with self._cond:
            return {
                "pending": len(self._pending) + len(self._writing),
                "saved": self._saved,
                "dropped": self._dropped,
                "retention_days": self.retention.days,
            }

    def purge(self) -> int:
        """Delete traces older than the retention (kept while feedback on them is open); how many went."""
        return self.store.purge_traces(self.clock() - self.retention)

    def close(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join()

    def __enter__(self) -> TraceRecorder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- reads and feedback ---------------------------------------------------------------------------------

    def get(self, trace_id: str, caller: Caller) -> Trace:
        """The trace, to its owner and admins; TRACE_NOT_FOUND to anyone else, exactly as for no trace."""
        with self._cond:
            trace = self._pending.get(trace_id) or self._writing.get(trace_id)
        if trace is None:
            trace = self.store.get_trace(trace_id)
        if trace is None or not trace.readable_by(caller):
            raise trace_not_found(trace_id)
        return trace

    def feedback(self, trace_id: str, caller: Caller, *, rating: object, issue: object, comment: object) -> Feedback:
        trace = self.get(trace_id, caller)
        item = new_feedback(trace, caller, rating=rating, issue=issue, comment=comment, now=self.clock())
        self.flush()  # the feedback row references the trace: it must be saved first
        self.store.add_feedback(item)
        return item

    def resolve(self, feedback_id: str, caller: Caller, resolution: object) -> Feedback:
        note = parse_comment(resolution)
        done = self.store.resolve_feedback(feedback_id, by=owner_of(caller), resolution=note, at=self.clock())
        if done is None:
            raise KgragError(
                ErrorCode.FEEDBACK_NOT_FOUND,
                f"No feedback {feedback_id!r}.",
                hint="List open feedback with `kgrag curation` or GET /v1/admin/curation.",
            )
        return done

    # --- the writer thread ----------------------------------------------------------------------------------

    def _run(self) -> None:
        next_purge = time.monotonic()
        failures = 0
        while True:
            with self._cond:
                while not self._pending and not self._stop and time.monotonic() < next_purge:
                    self._cond.wait(max(0.0, next_purge - time.monotonic()))
                if self._stop and not self._pending:
                    return
                batch = [self._pending.popitem(last=False)[1] for _ in range(min(BATCH, len(self._pending)))]
                self._writing = {t.trace_id: t for t in batch}
            if time.monotonic() >= next_purge:
                next_purge = time.monotonic() + self._purge_every_s
                self._purge_logged()
            try:
                if batch:
                    self.store.save_traces(batch)
                failures = 0
            except Exception as err:  # a store outage must not end the writer: logged, and the batch retried
                log.warning("saving %d traces failed (will retry): %s", len(batch), err, exc_info=True)
                with self._cond:
                    for trace in reversed(batch):  # back to the front, in order
                        self._pending[trace.trace_id] = trace
                        self._pending.move_to_end(trace.trace_id, last=False)
                    self._writing = {}
                    stop = self._stop
                if stop and failures >= len(_RETRY_S):
                    log.error("giving up on %d unsaved traces at shutdown", len(self._pending))
                    return
                time.sleep(_RETRY_S[min(failures, len(_RETRY_S) - 1)])
                failures += 1
                continue
            with self._cond:
                self._saved += len(batch)
                self._writing = {}
                self._cond.notify_all()

    def _purge_logged(self) -> None:
        try:
            removed = self.purge()
        except Exception as err:  # logged; the next hour's purge takes what this one could not
            log.warning("purging old traces failed: %s", err, exc_info=True)
            return
        if removed:
            log.info("purged %d traces older than %d days", removed, self.retention.days)
