"""Concurrent writers of the text graph's passage counters (migrations 0030, 0033) on the real PostgreSQL.

A re-ingest (a batch's edges replaced: old edges of hot nodes removed, new ones added) racing the deletion of
other documents and the re-permissioning of others, all naming the same hot nodes: before the fix the
replacement's two statements each took the counter rows in key order but one after the other, and
deadlocked with a deletion's one ordered pass. All must finish without a deadlock, and the counters must
equal a recount of the edges afterwards.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.postgres.text_graph import PostgresTextGraph
from kgrag_core.acl import AclClass
from kgrag_core.documents import Chunk
from kgrag_core.ingest import DeletionRecord
from kgrag_core.text_graph.model import MentionEdge, MentionKind
from kgrag_testing.contracts.document_store import ALICE, ENG, commit

HOT = [f"hot node {i:02d}" for i in range(48)]
CHUNKS = 4  # per document
DOCS = 3  # re-ingested, and as many deleted, per round
ROUNDS = 4


@pytest.fixture
def documents(pg_dsn: str) -> Iterator[PostgresGraphStore]:
    with PostgresGraphStore.connect(pg_dsn, pool_size=4) as store:
        yield store


@pytest.fixture
def text_graph(documents: PostgresGraphStore) -> PostgresTextGraph:
    return PostgresTextGraph(documents.pool, documents.installation_key, documents.cipher)


def _edges(chunks: list[Chunk], keys: dict[str, str], names: list[str]) -> list[MentionEdge]:
    """Chunk j names the j-th share of `names`."""
    share = -(-len(names) // len(chunks))
    return [
        MentionEdge(chunk.chunk_id, chunk.doc_id, ENG.acl_class_id, keys[name], MentionKind.ENTITY)
        for j, chunk in enumerate(chunks)
        for name in names[j * share : (j + 1) * share]
    ]


def _named(version: int) -> list[str]:
    """What a kept document names in its `version`: most hot nodes, a different few left out each time, so
    a rebuild both removes and adds edges of hot nodes."""
    return [name for i, name in enumerate(HOT) if i % 3 != version % 3]


def _sections(doc_id: str, version: int) -> list[str]:
    return [f"{doc_id} version {version} passage {j}." for j in range(CHUNKS)]


def _counts(documents: PostgresGraphStore) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """The counters (summed per node and class, zeros left out) and a recount of the edges."""
    with documents.pool as conn:
        stored = conn.execute(
            "SELECT node_key, acl_class_id, sum(passages)::bigint FROM text_graph_node_passages"
            " GROUP BY node_key, acl_class_id HAVING sum(passages) <> 0"
        ).fetchall()
        recount = conn.execute(
            "SELECT node_key, acl_class_id, count(*) FROM text_graph_mentions GROUP BY node_key, acl_class_id"
        ).fetchall()
    return {(k, a): int(n) for k, a, n in stored}, {(k, a): int(n) for k, a, n in recount}


def _together(*work: Callable[[], None]) -> list[Exception]:
    """Run each callable on its own thread, started at once; the exceptions they raised."""
    barrier = threading.Barrier(len(work))
    errors: list[Exception] = []

    def run(job: Callable[[], None]) -> None:
        try:
            barrier.wait(timeout=30)
            job()
        except Exception as err:  # noqa: BLE001 - reported by the test below, not swallowed
            errors.append(err)

    threads = [threading.Thread(target=run, args=(job,)) for job in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a writer is still waiting"
    return errors


def test_reingest_racing_deletion_on_shared_hot_nodes(
    documents: PostgresGraphStore, text_graph: PostgresTextGraph
) -> None:
    keys = text_graph.node_keys(HOT)
    kept = {f"doc-kept-{i}": commit(documents, f"doc-kept-{i}", _sections(f"doc-kept-{i}", 1)) for i in range(DOCS)}
    for doc_id, chunks in kept.items():
        text_graph.replace_document(doc_id, _edges(chunks, keys, _named(1)))
    moved = {f"doc-moved-{i}": commit(documents, f"doc-moved-{i}", _sections(f"doc-moved-{i}", 1)) for i in range(2)}
    for doc_id, chunks in moved.items():
        text_graph.replace_document(doc_id, _edges(chunks, keys, HOT[::2] + HOT[1::2]))
    for round_ in range(ROUNDS):
        gone = [f"doc-gone-{round_}-{i}" for i in range(DOCS)]
        for doc_id in gone:
            chunks = commit(documents, doc_id, _sections(doc_id, 1))
            text_graph.replace_document(doc_id, _edges(chunks, keys, list(reversed(HOT))))

        def reingest(version: int = round_ + 2) -> None:
            # The text-graph handler rebuilding a batch (a replayed event, a new extractor): the documents'
            # edges replaced in one transaction, old edges of hot nodes removed and new ones added.
            text_graph.replace_documents([(d, _edges(c, keys, _named(version)), ()) for d, c in kept.items()])

        def delete(gone: list[str] = gone) -> None:
            for doc_id in gone:
                ids = tuple(c.chunk_id for c in documents.chunks_of(doc_id))
                documents.mark_deleted(doc_id, DeletionRecord(doc_id, ids, (), ("postgres",)))

        def repermission(acl: AclClass = ALICE if round_ % 2 == 0 else ENG) -> None:
            # A re-permissioned document's edges take its new class, their counts moving between classes.
            for doc_id in moved:
                assert documents.update_acl(doc_id, acl)

        assert _together(reingest, delete, repermission) == []
        stored, recount = _counts(documents)
        assert stored == recount
        # Positive control: the kept documents' edges are all there, the deleted ones' gone.
        acl = ALICE if round_ % 2 == 0 else ENG
        expected = Counter({(keys[name], ENG.acl_class_id): DOCS for name in _named(round_ + 2)})
        expected.update({(keys[name], acl.acl_class_id): len(moved) for name in HOT})
        assert recount == dict(expected)
