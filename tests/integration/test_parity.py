"""Embedded and distributed runtimes over one corpus: the same chunk IDs, the same PostgreSQL state,
and the same results for the same questions."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from kgrag_adapters.connectors import iter_path
from kgrag_core.acl import Caller
from kgrag_core.documents import SourceDocument
from kgrag_core.events import DOCUMENTS_CHANGED
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.ports import Embedder
from kgrag_core.retrieval.hybrid import SearchMode
from kgrag_runtime.app import KgragApp
from kgrag_runtime.distributed import DistributedStores, producer
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from tests.integration.conftest import Workers, wait_for

pytestmark = pytest.mark.integration
CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "northwind" / "documents.jsonl"
QUERIES = [
    "Who is the on-call owner of Atlas?",
    "Beacon API rate limit",
    "Leipzig warehouse capacity",
    "incident postmortem certificate expiry",
    "Kestrel Pharma SLA",
    "rollback runbook for Harbor",
]
# Title, URI, breadcrumb and text are sealed under per-document keys (ADR 0008): each runtime holds its own
# keys and random nonces, so those columns are compared opened, through the stores, below.
DOC_SQL = (
    "SELECT doc_id, source, version, content_hash, acl_class_id, modified_at, status, media_type,"
    " byte_length FROM documents ORDER BY doc_id"
)
CHUNK_SQL = (
    "SELECT chunk_id, doc_id, seq, start_byte, end_byte, token_count, content_hash,"
    " acl_class_id, doc_time FROM chunks ORDER BY chunk_id"
)
ACL_SQL = "SELECT acl_class_id, principals, malformed FROM acl_classes ORDER BY acl_class_id"


@pytest.fixture
def embedded_dsn(pg_server_dsn: str) -> Iterator[str]:
    name = f"kgrag_parity_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield make_conninfo(pg_server_dsn, dbname=name)
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def rows(dsn: str, query: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(query).fetchall()  # type: ignore[arg-type]


def test_same_ids_same_postgres_state_same_results(
    tmp_path: Path,
    embedded_dsn: str,
    distributed_settings: KgragSettings,
    stores: DistributedStores,
    workers: Workers,
    embedder: Embedder,
) -> None:
    docs = [d for d in islice(iter_path(CORPUS), 14) if isinstance(d, SourceDocument)]
    embedded_settings = KgragSettings(data_dir=tmp_path / "embedded", pg_dsn=embedded_dsn)
    with open_embedded(embedded_settings, embedder=embedder) as local:
        local.ingest(docs)
        local_results = {
            (q, m): [h.chunk_id for h in local.search(q, Caller(admin=True), top_k=10, mode=m).hits]
            for q in QUERIES
            for m in SearchMode
        }

        workers.start(
            "chunk-indexer",
            ChunkIndexerHandler(
                stores.indexer(distributed_settings), name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)
            ),
        )
        KafkaIngest(producer(distributed_settings, "test")).ingest(docs)
        wait_for(lambda: stores.store.stats().documents == len(docs), timeout_s=180, what="distributed indexing")
        remote = KgragApp(
            searcher=stores.searcher(),
            ingestion=KafkaIngest(producer(distributed_settings, "q")),
            ingest_log=stores.store,
            stats_source=stores.store,
            cache=stores.cache,
            llm=None,
        )
        remote_results = {
            (q, m): [h.chunk_id for h in remote.search(q, Caller(admin=True), top_k=10, mode=m).hits]
            for q in QUERIES
            for m in SearchMode
        }
        # The sealed columns, opened: the same titles, URIs, breadcrumbs and texts on both sides.
        ids = [d.doc_id for d in docs]
        mine, remote_store = local.searcher.documents, stores.store
        assert {k: (d.title, d.uri) for k, d in mine.get_documents(ids).items()} == {
            k: (d.title, d.uri) for k, d in remote_store.get_documents(ids).items()
        }
        assert [mine.chunks_of(d) for d in ids] == [remote_store.chunks_of(d) for d in ids]

    distributed_dsn = distributed_settings.pg_dsn.get_secret_value() if distributed_settings.pg_dsn else ""
    # The authoritative state is identical, row for row, apart from when each row was written.
    assert rows(embedded_dsn, DOC_SQL) == rows(distributed_dsn, DOC_SQL)
    assert rows(embedded_dsn, CHUNK_SQL) == rows(distributed_dsn, CHUNK_SQL)
    assert rows(embedded_dsn, ACL_SQL) == rows(distributed_dsn, ACL_SQL)
    # Dense search is exact on both sides at this size: identical rankings.
    for q in QUERIES:
        assert local_results[(q, SearchMode.DENSE)] == remote_results[(q, SearchMode.DENSE)], q
    # BM25 engines differ in stemming details (docs: schemas/opensearch/chunks-template.json): the same top
    # hit, and nearly the same top 10.
    for q in QUERIES:
        for mode in (SearchMode.BM25, SearchMode.HYBRID):
            ours, theirs = local_results[(q, mode)], remote_results[(q, mode)]
            assert ours[:1] == theirs[:1], (q, mode)
            assert len(set(ours) & set(theirs)) >= min(8, len(ours), len(theirs)), (q, mode, ours, theirs)
            assert abs(len(ours) - len(theirs)) <= 2, (q, mode)
