"""A compliance deletion leaves nothing readable on disk (issue 9, class 6; ADR 0008).

Each run ingests a document holding a unique random token (in its title and body), deletes it, stops the
embedded PostgreSQL (a shutdown checkpoint: every page and WAL record is on disk) and scans every raw file
of the data folder — heap and index files, WAL segments, the BM25 index, the vector shard, the object
store — for the token. Positive controls: an allowed reader finds the token before the deletion; the same
scanner finds the document ID, which is stored in plaintext on purpose; and with encryption switched off
the very same scan finds the deleted token (the leak this closes), so the scan cannot pass by seeing
nothing.

With extraction on, the extractor may read the token as an entity name (it tags a bare hex token as a
System about half the time), and entity names stay plaintext by design (they are searched in SQL; ADR
0008, "What stays plaintext") — the open part of class 6. So the whole-folder scan runs with extraction
off, and a second test runs extraction and checks that the token, if it is in PostgreSQL's files at all,
is only in the entity-name tables, never in the sealed ones (chunks, documents, quotes, caches).
"""

from __future__ import annotations

import stat
import uuid
from pathlib import Path

import pytest

from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_adapters.postgres.extraction_store import PostgresExtractionStore
from kgrag_adapters.tantivy.keyword_index import TantivyKeywordIndex
from kgrag_core.acl import Caller
from kgrag_core.ingest import IngestStatus
from kgrag_core.shredding import PurgeStatus
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from tests.pipeline.corpus import doc

ADMIN = Caller(admin=True)


def files_holding(root: Path, needle: bytes) -> list[Path]:
    """Every regular file under `root` whose raw bytes contain `needle`."""
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            try:
                data = path.read_bytes()
            except OSError:  # a socket or a file removed while scanning
                continue
            if needle in data:
                found.append(path)
    return found


@pytest.mark.parametrize("encrypt", [True, False], ids=["sealed", "plaintext-control"])
def test_deleted_text_is_nowhere_on_disk(tmp_path: Path, embedder: OnnxMiniLmEmbedder, encrypt: bool) -> None:
    # One token each, ending in a digit: BM25 indexes it as a term that the English stemmer leaves alone
    # (a random hex tail ending "e" or "ed" would be stemmed, and doc_freq of the raw token would read 0).
    secret = "zq" + uuid.uuid4().hex + "0"
    live = "zl" + uuid.uuid4().hex + "0"
    doc_id = "gone-" + uuid.uuid4().hex[:12]
    data_dir = tmp_path / "index"
    # No pg_dsn: the embedded PostgreSQL lives under data_dir, so its files are ours to scan.
    settings = KgragSettings(data_dir=data_dir, content_encryption=encrypt, extraction_enabled=False)
    with open_embedded(settings, embedder=embedder) as kg:
        kg.ingest(
            [
                doc(
                    doc_id,
                    f"# vault {secret}\n\nPriya Raman set the vault code {secret} for the Rotterdam site.\n",
                    title=secret,
                ),
                doc("live", f"# Live\n\nThe live marker is {live} and it stays.\n"),
            ]
        )
        # Positive control: before the deletion an allowed reader reads the token.
        assert any(secret in h.text for h in kg.search(secret, ADMIN).hits)
        assert kg.delete(doc_id).status is IngestStatus.DELETED
        keywords = kg.searcher.keywords
        assert isinstance(keywords, TantivyKeywordIndex)
        # BM25 keeps terms in an FST a byte scan cannot see, so ask the engine: the deleted token's term is
        # gone from every segment (doc_freq counts deleted documents until they are purged); the live one stays.
        assert keywords.doc_freq(secret) == 0
        assert keywords.doc_freq(live) == 1
        [record] = kg.searcher.documents.deletion_records(doc_id)
        statuses = {p.store: p.status for p in record.purges}
        assert statuses["keyword_index"] is PurgeStatus.PURGED
        assert statuses["vector_index"] is PurgeStatus.PURGED
        assert statuses["postgres"] is (PurgeStatus.SHREDDED if encrypt else PurgeStatus.DELETED)
        assert all(p.at is not None for p in record.purges)
        tombstone = kg.searcher.documents.get_document(doc_id)
        assert tombstone is not None and tombstone.title == "" and tombstone.uri == ""
        # The live document still reads back (its key is untouched).
        assert any(live in h.text for h in kg.search(live, ADMIN).hits)
    # open_embedded stopped PostgreSQL: a shutdown checkpoint, so data files and WAL are complete on disk.
    postgres = data_dir / "postgres"
    assert list((postgres / "pg_wal").glob("0*")), "no WAL segment to scan"
    # Positive control: the scanner does read heap files and WAL (the document ID is plaintext on purpose).
    assert files_holding(postgres / "base", doc_id.encode())
    assert files_holding(postgres / "pg_wal", doc_id.encode())
    leaked = files_holding(data_dir, secret.encode())
    if encrypt:
        assert leaked == []
        [key_file] = (data_dir / "keys").glob("kek-*.key")
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    else:
        # The control run: without sealing, dead tuples and WAL keep the deleted text (the finding).
        assert any(p.is_relative_to(postgres / "pg_wal") for p in leaked)
        assert any(p.is_relative_to(postgres / "base") for p in leaked)


# Tables whose text columns stay plaintext by design (searched in SQL): entity names, surface forms, claim
# values, relation types. Everything else must hold the token sealed only.
PLAINTEXT_BY_DESIGN = ("kg_entities", "kg_mentions", "kg_claims", "kg_relations")


def test_with_extraction_the_token_is_only_in_entity_name_tables(tmp_path: Path, embedder: OnnxMiniLmEmbedder) -> None:
    secret = "zq" + uuid.uuid4().hex + "0"
    data_dir = tmp_path / "index"
    with open_embedded(KgragSettings(data_dir=data_dir), embedder=embedder) as kg:
        kg.ingest(
            [doc("gone", f"# vault {secret}\n\nPriya Raman set the vault code {secret} for the Rotterdam site.\n")]
        )
        store = kg.searcher.documents
        assert isinstance(store, PostgresExtractionStore)
        # Positive control: extraction quoted the sentence (mentions of Priya Raman, Rotterdam; the live
        # quotes open under the key).
        assert store.fact_counts()["mentions"] > 0
        assert any(secret in c.text for c in store.chunks_of("gone"))
        assert kg.delete("gone").status is IngestStatus.DELETED
        with store._lease:  # the store's pooled connection, leased to this thread for the query
            relations: dict[str, str] = dict(
                store._conn.execute(
                    "SELECT pg_relation_filenode(c.oid)::text, COALESCE(t.relname, c.relname) FROM pg_class c"
                    " LEFT JOIN pg_index i ON i.indexrelid = c.oid LEFT JOIN pg_class t ON t.oid = i.indrelid"
                    " WHERE pg_relation_filenode(c.oid) IS NOT NULL"
                ).fetchall()
            )
    leaked = files_holding(data_dir / "postgres" / "base", secret.encode())
    tables = {relations.get(p.name.split(".")[0], f"unknown:{p.name}") for p in leaked}
    assert all(t.startswith(PLAINTEXT_BY_DESIGN) for t in tables), tables
    assert not files_holding(data_dir / "objects", secret.encode())
