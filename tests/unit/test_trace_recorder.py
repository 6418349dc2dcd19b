"""The trace recorder on PostgreSQL: off the request path, readable while queued, bounded, retained."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from kgrag_adapters.postgres.store import PostgresStore
from kgrag_adapters.postgres.traces import PostgresTraceStore
from kgrag_core.acl import Caller
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.tracing.build import TraceVersions
from kgrag_core.tracing.model import FeedbackStatus, TraceKind
from kgrag_runtime.traces import TraceRecorder

SAM = Caller(user="sam", groups=("engineering",))
EVE = Caller(user="eve", groups=("engineering",))
ADMIN = Caller(user="root", admin=True)


def _versions() -> TraceVersions:
    return TraceVersions("model-x", "1", "1", "rules-test")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PostgresTraceStore]:
    with PostgresStore.connect(pg_dsn, pool_size=4) as base:
        yield PostgresTraceStore(base.pool)


def test_a_trace_is_readable_at_once_and_saved_by_close(store: PostgresTraceStore) -> None:
    with TraceRecorder(store, _versions, retention_days=30) as recorder:
        trace_id = recorder.record(TraceKind.SEARCH, SAM, {"results": []})
        assert recorder.get(trace_id, SAM).trace_id == trace_id  # queued or saved: readable either way
    saved = store.get_trace(trace_id)
    assert saved is not None and saved.owner == "user:sam"


def test_only_the_owner_and_admins_read_a_trace(store: PostgresTraceStore) -> None:
    with TraceRecorder(store, _versions, retention_days=30) as recorder:
        trace_id = recorder.record(TraceKind.ASK, SAM, {})
        recorder.flush()
        assert recorder.get(trace_id, SAM).kind is TraceKind.ASK
        assert recorder.get(trace_id, ADMIN).trace_id == trace_id
        for outsider, asked in ((EVE, trace_id), (SAM, "tr_" + "0" * 32)):
            with pytest.raises(KgragError) as err:
                recorder.get(asked, outsider)
            assert err.value.code is ErrorCode.TRACE_NOT_FOUND
            assert err.value.message == f"No trace {asked!r} you may read."  # the same words for both


def test_feedback_waits_for_its_trace_and_resolving_closes_it(store: PostgresTraceStore) -> None:
    with TraceRecorder(store, _versions, retention_days=30) as recorder:
        trace_id = recorder.record(TraceKind.ASK, SAM, {})
        item = recorder.feedback(trace_id, SAM, rating=1, issue="UNSUPPORTED_CLAIM", comment="made up")
        assert store.list_feedback(status=FeedbackStatus.OPEN) == [item]
        with pytest.raises(KgragError) as err:
            recorder.feedback(trace_id, EVE, rating=5, issue=None, comment="")
        assert err.value.code is ErrorCode.TRACE_NOT_FOUND
        done = recorder.resolve(item.feedback_id, ADMIN, "the claim's source was re-extracted")
        assert done.status is FeedbackStatus.RESOLVED and done.resolved_by == "user:root"
        with pytest.raises(KgragError) as err:
            recorder.resolve("fb_nope", ADMIN, "")
        assert err.value.code is ErrorCode.FEEDBACK_NOT_FOUND


def test_a_full_queue_drops_new_traces_and_counts_them(store: PostgresTraceStore, pg_dsn: str) -> None:
    recorder = TraceRecorder(store, _versions, retention_days=30, queue_max=3, purge_every_s=3600)
    warm = recorder.record(TraceKind.SEARCH, SAM, {})
    recorder.flush()  # the first purge and save are done: the writer now only saves
    # Another transaction holds the table, so the writer's next INSERT waits and the queue fills up.
    with psycopg.connect(pg_dsn) as blocker:
        try:
            blocker.execute("LOCK TABLE query_traces IN ACCESS EXCLUSIVE MODE")
            first = recorder.record(TraceKind.SEARCH, SAM, {})
            wait_until(lambda: recorder.status()["pending"] == 1 and not recorder._pending)  # taken by the writer
            kept = [recorder.record(TraceKind.SEARCH, SAM, {}) for _ in range(3)]
            dropped = recorder.record(TraceKind.SEARCH, SAM, {})
            assert recorder.status()["dropped"] == 1
            assert recorder.get(kept[0], SAM).trace_id == kept[0]  # queued, and readable
        finally:
            blocker.rollback()  # the writer goes on
    recorder.close()
    for trace_id in [warm, first, *kept]:
        assert store.get_trace(trace_id) is not None
    assert store.get_trace(dropped) is None
    assert recorder.status()["saved"] == 5


def test_traces_older_than_the_retention_are_purged(store: PostgresTraceStore) -> None:
    clock = Clock()
    with TraceRecorder(store, _versions, retention_days=7, clock=clock) as recorder:
        old = recorder.record(TraceKind.SEARCH, SAM, {})
        clock.now += timedelta(days=6)
        young = recorder.record(TraceKind.SEARCH, SAM, {})
        recorder.flush()
        clock.now += timedelta(days=2)  # old is 8 days old, young 2
        assert recorder.purge() == 1
    assert store.get_trace(old) is None
    assert store.get_trace(young) is not None


def wait_until(condition: object, timeout_s: float = 10.0) -> None:
    done = threading.Event()
    deadline = datetime.now(UTC) + timedelta(seconds=timeout_s)
    while not condition():  # type: ignore[operator]
        if datetime.now(UTC) > deadline:
            raise AssertionError("condition not reached in time")
        done.wait(0.01)
