"""PostgresTraceStore against the TraceStore contract, plus what only the SQL store promises."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_adapters.postgres.traces import PostgresTraceStore
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.model import RelationItem
from kgrag_core.extraction.records import ClaimStatus
from kgrag_testing.contracts.extraction_store import (
    ONTOLOGY,
    Stores,
    capacity,
    commit_doc,
    delete_doc,
    leads,
    result,
)
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


# --- the CurationSource reads, on real facts ----------------------------------------------------------------


def _facts(store: PostgresGraphStore) -> Stores:
    stores = Stores(store, store)
    store.save_ontology("1", ONTOLOGY)
    [a] = commit_doc(stores, "doc-a", ["Priya Raman leads the Routing team. LEJ-2 holds 24,500 pallets."])
    [b] = commit_doc(stores, "doc-b", ["Priya Raman leads Ops, maybe. LEJ-2 holds 30,000 pallets."])
    weak = RelationItem("Priya Raman", "Person", "LEADS", "Ops", "Team", "Priya Raman leads Ops, maybe", 0.3)
    store.save(
        [
            result(a, relations=[leads("Priya Raman", "Routing", "Priya Raman leads the Routing team")],
                   claims=[capacity("LEJ-2", "24,500", "LEJ-2 holds 24,500 pallets")]),
            result(b, relations=[weak], claims=[capacity("LEJ-2", "30,000", "LEJ-2 holds 30,000 pallets")]),
        ]
    )  # fmt: skip
    return stores


def test_weak_edges_are_those_below_the_threshold_weakest_first(pg_dsn: str) -> None:
    with PostgresGraphStore.connect(pg_dsn) as store:
        stores = _facts(store)
        source = PostgresTraceStore(store.pool, cipher=store.cipher)
        [weak] = source.weak_edges(0.5, 10)
        assert (weak.subject_name, weak.relation, weak.object_name, weak.confidence) == (
            "Priya Raman",
            "LEADS",
            "Ops",
            0.3,
        )
        assert [e.object_name for e in source.weak_edges(0.9, 10)] == ["Ops", "Routing"]
        assert [e.object_name for e in source.weak_edges(0.9, 1)] == ["Ops"]
        assert source.weak_edges(0.3, 10) == []  # strictly below
        delete_doc(stores, "doc-b")  # its evidence goes, and the edge with it
        assert source.weak_edges(0.5, 10) == []


def test_conflicted_entities_are_same_day_disagreements(pg_dsn: str) -> None:
    with PostgresGraphStore.connect(pg_dsn) as store:
        stores = _facts(store)  # both documents are dated JAN: 24,500 and 30,000 pallets the same day
        source = PostgresTraceStore(store.pool, cipher=store.cipher)
        [site] = source.conflicted_entities(10)
        claims = store.claims_of([site], None)
        assert {(c.value, c.status) for c in claims} == {
            ("24,500", ClaimStatus.CONFLICT),
            ("30,000", ClaimStatus.CONFLICT),
        }
        delete_doc(stores, "doc-b")
        assert source.conflicted_entities(10) == []  # one value left: nothing to decide
