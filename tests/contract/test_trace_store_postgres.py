"""PostgresTraceStore against the TraceStore contract, plus what only the SQL store promises."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kgrag_adapters.postgres.store import PostgresStore
from kgrag_adapters.postgres.traces import PostgresTraceStore
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_testing.contracts.trace_store import TraceStoreContract, make_trace


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PostgresStore]:
    with PostgresStore.connect(pg_dsn) as store:
        yield store


@pytest.fixture
def traces(store: PostgresStore) -> PostgresTraceStore:
    return PostgresTraceStore(store.pool)


class TestPostgresTraceStore(TraceStoreContract):
    pass


def test_a_large_batch_reads_back(traces: PostgresTraceStore) -> None:
    batch = [make_trace() for _ in range(500)]  # one INSERT ... SELECT unnest(...) for all of them
    traces.save_traces(batch)
    assert all(traces.get_trace(t.trace_id) == t for t in batch)


def test_curation_reads_refuse_a_limit_below_one(traces: PostgresTraceStore) -> None:
    for read in (lambda: traces.weak_edges(0.5, 0), lambda: traces.conflicted_entities(0)):
        with pytest.raises(KgragError) as err:
            read()
        assert err.value.code is ErrorCode.INVALID_QUERY
