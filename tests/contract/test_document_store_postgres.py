"""PostgresStore against the DocumentStore contract, plus what only the SQL store promises."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import cast

import numpy as np
import psycopg
import pytest

from kgrag_adapters.postgres.store import PostgresStore
from kgrag_testing.contracts.document_store import ENG, DocumentStoreContract, commit, make_document


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PostgresStore]:
    with PostgresStore.connect(pg_dsn) as store:
        yield store


class TestPostgresDocumentStore(DocumentStoreContract):
    pass


def test_failed_commit_leaves_the_previous_version(store: PostgresStore) -> None:
    chunks = commit(store, "doc-1", ["one", "two"])
    doc, new = make_document("doc-1", ["uno", "dos"], version=2)
    broken = dataclasses.replace(new[1], end_byte=new[1].start_byte)  # violates end_byte > start_byte
    with pytest.raises(psycopg.errors.CheckViolation):
        store.commit_document(doc, ENG, [new[0], broken])
    stored = store.get_document("doc-1")
    assert stored is not None
    assert stored.version == 1
    assert store.chunks_of("doc-1") == chunks


def test_kept_chunks_are_not_rewritten(store: PostgresStore, pg_dsn: str) -> None:
    old = commit(store, "doc-1", ["kept", "gone"])
    with psycopg.connect(pg_dsn) as conn:
        before = conn.execute("SELECT xmin::text, indexed_at FROM chunks WHERE chunk_id = %s", (old[0].chunk_id,))
        row_before = before.fetchone()
        doc, new = make_document("doc-1", ["kept", "new!"], version=2)
        store.commit_document(doc, ENG, new)
        after = conn.execute("SELECT xmin::text, indexed_at FROM chunks WHERE chunk_id = %s", (old[0].chunk_id,))
        assert after.fetchone() == row_before


def test_mismatched_arguments_are_rejected(store: PostgresStore) -> None:
    doc, chunks = make_document("doc-1", ["one"])
    with pytest.raises(ValueError, match="belongs to"):
        store.commit_document(doc, ENG, [dataclasses.replace(chunks[0], doc_id="doc-2")])
    with pytest.raises(ValueError, match="ACL class"):
        store.commit_document(dataclasses.replace(doc, acl_class_id="acl_other"), ENG, chunks)
    assert store.get_document("doc-1") is None


def test_data_survives_reconnecting(store: PostgresStore, pg_dsn: str) -> None:
    chunks = commit(store, "doc-1", ["persisted"])
    store.put_vectors("m", {"sha256:x": (0.5, 0.25)})
    with PostgresStore.connect(pg_dsn) as again:
        assert again.chunks_of("doc-1") == chunks
        assert again.get_vectors("m", ["sha256:x"]) == {"sha256:x": (0.5, 0.25)}


def test_put_vectors_accepts_numpy_arrays(store: PostgresStore) -> None:
    vector = np.arange(4, dtype=np.float32) / np.float32(3)
    # An embedder's output as it comes: an ndarray of float32 (not formally a Sequence[float]).
    store.put_vectors("m", {"sha256:x": cast("Sequence[float]", vector)})
    assert store.get_vectors("m", ["sha256:x"]) == {"sha256:x": tuple(vector.tolist())}


def test_store_requires_an_autocommit_connection(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn) as conn, pytest.raises(ValueError, match="autocommit"):
        PostgresStore(conn)


def test_store_reconnects_after_its_connection_is_killed(pg_dsn: str) -> None:
    """A server restart or failover kills connections: the next call after the failing one works."""
    with PostgresStore.connect(pg_dsn) as store:
        store.stats()
        with store._lease as conn:  # the pool's one idle connection, the one stats() used
            pid = conn.info.backend_pid
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(psycopg.OperationalError):
            store.stats()
        assert store.stats().documents == 0
        with store._lease as conn:
            assert conn.info.backend_pid != pid
