"""Contract suite for `TraceStore` adapters (PostgreSQL now).

Subclass `TraceStoreContract` in a `Test*` class and provide a `traces` fixture that yields a fresh, empty
store.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kgrag_core.acl import Caller
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ports import TraceStore
from kgrag_core.tracing.model import (
    Feedback,
    FeedbackIssue,
    FeedbackStatus,
    Trace,
    TraceKind,
    new_feedback,
    new_trace_id,
    owner_of,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SAM = Caller(user="sam", groups=("engineering",))


def make_trace(*, caller: Caller = SAM, at: datetime = NOW, kind: TraceKind = TraceKind.SEARCH) -> Trace:
    body = {"results": [{"chunk_id": "ch_1", "rank": 1, "score": 0.03}], "timings_ms": {"total": 1.5}}
    return Trace(new_trace_id(), kind, owner_of(caller), at, body)


def feedback_on(trace: Trace, *, rating: int = 2, at: datetime = NOW) -> Feedback:
    return new_feedback(trace, SAM, rating=rating, issue="MISSING_SOURCE", comment="where is the runbook?", now=at)


class TraceStoreContract:
    def test_implements_the_port(self, traces: TraceStore) -> None:
        assert isinstance(traces, TraceStore)

    def test_saved_traces_read_back_as_written(self, traces: TraceStore) -> None:
        first, second = make_trace(), make_trace(kind=TraceKind.ASK, at=NOW + timedelta(seconds=1))
        traces.save_traces([first, second])
        assert traces.get_trace(first.trace_id) == first
        assert traces.get_trace(second.trace_id) == second
        assert traces.get_trace(new_trace_id()) is None

    def test_saving_a_trace_again_keeps_the_first(self, traces: TraceStore) -> None:
        trace = make_trace()
        traces.save_traces([trace])
        traces.save_traces([Trace(trace.trace_id, trace.kind, "user:mallory", trace.created_at, {"x": 1})])
        assert traces.get_trace(trace.trace_id) == trace

    def test_saving_nothing_is_a_no_op(self, traces: TraceStore) -> None:
        traces.save_traces([])

    def test_purge_removes_only_old_traces(self, traces: TraceStore) -> None:
        old, new = make_trace(at=NOW - timedelta(days=31)), make_trace(at=NOW)
        traces.save_traces([old, new])
        assert traces.purge_traces(NOW - timedelta(days=30)) == 1
        assert traces.get_trace(old.trace_id) is None
        assert traces.get_trace(new.trace_id) == new

    def test_purge_keeps_a_trace_with_open_feedback_until_it_is_resolved(self, traces: TraceStore) -> None:
        old = make_trace(at=NOW - timedelta(days=40))
        traces.save_traces([old])
        feedback = feedback_on(old)
        traces.add_feedback(feedback)
        assert traces.purge_traces(NOW) == 0
        assert traces.get_trace(old.trace_id) == old
        resolved = traces.resolve_feedback(feedback.feedback_id, by="user:root", resolution="added", at=NOW)
        assert resolved is not None and resolved.status is FeedbackStatus.RESOLVED
        assert traces.purge_traces(NOW) == 1
        assert traces.get_trace(old.trace_id) is None
        assert traces.list_feedback() == []  # the feedback went with its trace

    def test_feedback_reads_back_newest_first(self, traces: TraceStore) -> None:
        trace = make_trace()
        traces.save_traces([trace])
        older, newer = feedback_on(trace, rating=1), feedback_on(trace, rating=4, at=NOW + timedelta(minutes=1))
        traces.add_feedback(older)
        traces.add_feedback(newer)
        assert traces.list_feedback() == [newer, older]
        assert traces.list_feedback(limit=1) == [newer]
        assert newer.issue is FeedbackIssue.MISSING_SOURCE and newer.comment == "where is the runbook?"

    def test_feedback_on_a_missing_trace_is_trace_not_found(self, traces: TraceStore) -> None:
        ghost = make_trace()  # never saved
        with pytest.raises(KgragError) as err:
            traces.add_feedback(feedback_on(ghost))
        assert err.value.code is ErrorCode.TRACE_NOT_FOUND
        assert traces.list_feedback() == []

    def test_resolving_filters_by_status(self, traces: TraceStore) -> None:
        trace = make_trace()
        traces.save_traces([trace])
        done, todo = feedback_on(trace), feedback_on(trace, at=NOW + timedelta(minutes=1))
        traces.add_feedback(done)
        traces.add_feedback(todo)
        resolved = traces.resolve_feedback(done.feedback_id, by="user:root", resolution="merged", at=NOW)
        assert resolved is not None
        assert (resolved.resolved_by, resolved.resolution, resolved.resolved_at) == ("user:root", "merged", NOW)
        assert traces.list_feedback(status=FeedbackStatus.OPEN) == [todo]
        assert [f.feedback_id for f in traces.list_feedback(status=FeedbackStatus.RESOLVED)] == [done.feedback_id]
        assert traces.resolve_feedback("fb_missing", by="user:root", resolution="", at=NOW) is None
