"""A compliance deletion leaves nothing readable on disk (issue 9, class 6; ADR 0008).

Each run ingests a document holding a unique random token (in its title and body), deletes it, stops the
embedded PostgreSQL (a shutdown checkpoint: every page and WAL record is on disk) and scans every raw file
of the data folder — heap and index files, WAL segments, the BM25 index, the vector shard, the object
store — for the token. Positive controls: an allowed reader finds the token before the deletion; the same
scanner finds the document ID, which is stored in plaintext on purpose; and with encryption switched off
the very same scan finds the deleted token (the leak this closes), so the scan cannot pass by seeing
nothing.

With extraction on, the same holds for everything extraction derives — entity names, surface forms,
strong identifiers, claim values: they are sealed under the document's key and SQL finds them through
keyed blind indexes (migration 0010; ADR 0008, "Names"). The second test makes the token all of those
(a structured record tier 1 maps deterministically) and scans the whole data folder again.
"""

from __future__ import annotations

import stat
import uuid
from pathlib import Path

import pytest

from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.tantivy.keyword_index import TantivyKeywordIndex
from kgrag_core.acl import AclClass, Caller
from kgrag_core.documents import SourceDocument
from kgrag_core.extraction.identity import normalise_name
from kgrag_core.extraction.records_text import RECORD_MEDIA_TYPE, render_record
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
            except FileNotFoundError:  # removed while scanning; any other read error fails the scan
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


def _person_record(doc_id: str, secret: str) -> SourceDocument:
    """A structured record tier 1 maps deterministically: the token is an entity name, a strong identifier,
    two claim values and the name of a relation's other end, so every name-like column holds it."""
    fields: dict[str, str | list[str]] = {
        "name": f"Vault {secret}",
        "email": f"{secret}@example.com",
        "role": f"keeper of {secret}",
        "team": f"Team {secret}",
        "site": "Rotterdam",
    }
    return SourceDocument(
        doc_id=doc_id,
        source="records",
        uri=f"records://{doc_id}",
        title=doc_id,
        body=render_record("person", fields).encode(),
        acl=AclClass.of(["public"]),
        media_type=RECORD_MEDIA_TYPE,
    )


@pytest.mark.parametrize("encrypt", [True, False], ids=["sealed", "plaintext-control"])
def test_with_extraction_the_token_is_in_no_postgres_file(
    tmp_path: Path, embedder: OnnxMiniLmEmbedder, encrypt: bool
) -> None:
    """Entity names, surface forms, strong identifiers and claim values are sealed per document and found
    in SQL by blind indexes (migration 0010), so after the deletion no PostgreSQL file — heap, index, WAL —
    holds the token; with sealing off the same scan finds it (the leak this closes)."""
    secret = "zq" + uuid.uuid4().hex + "0"
    live = "zl" + uuid.uuid4().hex + "0"
    data_dir = tmp_path / "index"
    with open_embedded(KgragSettings(data_dir=data_dir, content_encryption=encrypt), embedder=embedder) as kg:
        kg.ingest(
            [
                doc("gone", f"# vault {secret}\n\nPriya Raman set the vault code {secret} for the Rotterdam site.\n"),
                _person_record("gone-record", secret),
                _person_record("live-record", live),
            ]
        )
        store = kg.searcher.documents
        assert isinstance(store, PostgresGraphStore)
        # Positive controls: extraction made the token an entity name, an identifier and claim values, and
        # an allowed reader reads them back (opened under the document's key, found by the blind index).
        name = f"Vault {secret}"
        [person] = store.entities_named([name], None)[normalise_name(name)]
        assert person.entity.name == name
        assert ("email", f"{secret}@example.com") in person.strong_ids
        values = {c.value for c in store.claims_of([person.entity.entity_id], None)}
        assert {f"keeper of {secret}", f"{secret}@example.com"} <= values
        assert store.entities_named([f"Team {secret}"], None)[normalise_name(f"Team {secret}")]
        assert any(secret in c.text for c in store.chunks_of("gone"))
        for doc_id in ("gone", "gone-record"):
            assert kg.delete(doc_id).status is IngestStatus.DELETED
        assert store.entities_named([name], None) == {normalise_name(name): []}
        # The live record's entities are untouched, and so is the site both records name.
        [kept] = store.entities_named([f"Vault {live}"], None)[normalise_name(f"Vault {live}")]
        assert kept.entity.name == f"Vault {live}" and ("email", f"{live}@example.com") in kept.strong_ids
        assert [s.entity.name for s in store.entities_named(["Rotterdam"], None)["rotterdam"]] == ["Rotterdam"]
    # open_embedded stopped PostgreSQL: a shutdown checkpoint, so data files and WAL are complete on disk.
    postgres = data_dir / "postgres"
    assert files_holding(postgres / "pg_wal", b"gone-record")  # the scanner reads WAL (ids are plaintext)
    leaked = files_holding(data_dir, secret.encode())
    if encrypt:
        assert leaked == []
    else:
        assert any(p.is_relative_to(postgres / "pg_wal") for p in leaked)
        assert any(p.is_relative_to(postgres / "base") for p in leaked)


def test_a_split_moves_sealed_names_only(tmp_path: Path, embedder: OnnxMiniLmEmbedder) -> None:
    """A split (0011_namesakes) moves one document's mentions, relation and claim evidence to a sense of its
    own: it copies their sealed columns and blinds the identifiers again (0010_sealed_names), so once that
    document is deleted no PostgreSQL file holds its token either."""
    secret = "zs" + uuid.uuid4().hex + "0"
    live = "zk" + uuid.uuid4().hex + "0"
    shared = f"vault-{live}@example.com"  # one e-mail: extraction keys both records into one entity

    def record(doc_id: str, token: str) -> SourceDocument:
        fields: dict[str, str | list[str]] = {"name": "Vault Keeper", "email": shared, "team": f"Team {token}"}
        return SourceDocument(
            doc_id=doc_id,
            source="records",
            uri=f"records://{doc_id}",
            title=doc_id,
            body=render_record("person", fields).encode(),
            acl=AclClass.of(["public"]),
            media_type=RECORD_MEDIA_TYPE,
        )

    data_dir = tmp_path / "index"
    with open_embedded(KgragSettings(data_dir=data_dir, content_encryption=True), embedder=embedder) as kg:
        kg.ingest([record("kept-record", live), record("split-record", secret)])
        store = kg.searcher.documents
        assert isinstance(store, PostgresGraphStore)
        [person] = store.entities_named(["Vault Keeper"], None)["vault keeper"]
        split = store.split_mentions(person.entity.entity_id, ["split-record"], reason="test: two keepers")
        # Positive controls: the sense is found by the blinded name, opens its name, identifier and edge.
        senses = {s.entity.entity_id: s for s in store.entities_named(["Vault Keeper"], None)["vault keeper"]}
        assert set(senses) == {split.from_id, split.entity_id}
        sense = senses[split.entity_id]
        assert sense.entity.name == "Vault Keeper" and ("email", shared) in sense.strong_ids
        assert {c.value for c in store.claims_of([split.entity_id], None)} >= {shared}
        ends = {end.name for e in store.neighbours(split.entity_id, None) for end in (e.subject, e.object)}
        assert f"Team {secret}" in ends and f"Team {live}" not in ends
        assert kg.delete("split-record").status is IngestStatus.DELETED
        assert [s.entity.entity_id for s in store.entities_named(["Vault Keeper"], None)["vault keeper"]] == [
            split.from_id
        ]
    assert files_holding(data_dir / "postgres" / "pg_wal", b"split-record")
    assert files_holding(data_dir, secret.encode()) == []
