"""Contract suite for the authoritative store.

The ports: DocumentStore, AclStore, IngestLog, EmbeddingCache and StatsSource.

Subclass `DocumentStoreContract` in a `Test*` class and provide a `store` fixture that yields a fresh,
empty store implementing all five ports (and closes it at teardown). Every test starts from that empty
store, so counts are exact.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Protocol

import pytest

from kgrag_core.acl import PRIVATE_ACL, PUBLIC_ACL, AclClass
from kgrag_core.documents import Chunk, DocumentStatus, StoredDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ids import chunk_id_for, content_hash
from kgrag_core.ingest import DeletionRecord, IngestOutcome, IngestStatus
from kgrag_core.ports import AclStore, DocumentStore, EmbeddingCache, IngestLog, StatsSource, StoreStats


class FullStore(DocumentStore, AclStore, IngestLog, EmbeddingCache, StatsSource, Protocol):
    """What the `store` fixture yields."""


T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
ENG = AclClass.of(["group:eng"])
ALICE = AclClass.of(["user:alice"])
MODEL = "contract-model"


def f32(value: float) -> float:
    """`value` rounded to the nearest float32 (what an embedding model emits)."""
    rounded: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return rounded


def make_document(
    doc_id: str,
    sections: Sequence[str],
    *,
    acl: AclClass = ENG,
    version: int = 1,
    title: str = "Title",
    modified_at: datetime | None = T0,
    status: DocumentStatus = DocumentStatus.ACTIVE,
) -> tuple[StoredDocument, list[Chunk]]:
    """A document whose body is the sections joined by blank lines, one chunk per section."""
    body = "\n\n".join(sections).encode("utf-8")
    chunks: list[Chunk] = []
    start = 0
    for seq, section in enumerate(sections):
        raw = section.encode("utf-8")
        end = start + len(raw)
        piece_hash = content_hash(raw)
        chunks.append(
            Chunk(
                chunk_id=chunk_id_for(doc_id, piece_hash, seq),
                doc_id=doc_id,
                seq=seq,
                breadcrumb=(title, f"Section {seq}"),
                start_byte=start,
                end_byte=end,
                text=section,
                token_count=len(section.split()),
                content_hash=piece_hash,
                acl_class_id=acl.acl_class_id,
                doc_time=modified_at,
            )
        )
        start = end + 2  # the blank line between sections
    doc = StoredDocument(
        doc_id=doc_id,
        source="contract",
        uri=f"file:///{doc_id}.md",
        title=title,
        version=version,
        content_hash=content_hash(body),
        acl_class_id=acl.acl_class_id,
        modified_at=modified_at,
        status=status,
        media_type="text/markdown",
        byte_length=len(body),
    )
    return doc, chunks


def commit(
    store: FullStore,
    doc_id: str,
    sections: Sequence[str],
    *,
    acl: AclClass = ENG,
    version: int = 1,
    status: DocumentStatus = DocumentStatus.ACTIVE,
) -> list[Chunk]:
    """Commit `make_document(...)`; return its chunks."""
    doc, chunks = make_document(doc_id, sections, acl=acl, version=version, status=status)
    store.commit_document(doc, acl, chunks)
    return chunks


def ids(chunks: Sequence[Chunk]) -> list[str]:
    return [c.chunk_id for c in chunks]


class DocumentStoreContract:
    def test_implements_the_ports(self, store: FullStore) -> None:
        for port in (DocumentStore, AclStore, IngestLog, EmbeddingCache, StatsSource):
            assert isinstance(store, port), port.__name__

    def test_new_store_is_empty(self, store: FullStore) -> None:
        assert store.get_document("missing") is None
        assert store.list_documents(include_deleted=True) == []
        assert store.chunks_of("missing") == []
        assert store.get_chunks([]) == {}
        assert store.get_chunks(["ch_missing"]) == {}
        assert store.acl_classes() == []
        assert store.recent_outcomes() == []
        assert store.deletion_records("missing") == []
        assert store.stats() == StoreStats(0, 0, 0, 0, 0, 0)

    def test_commit_then_read_back(self, store: FullStore) -> None:
        doc, chunks = make_document("doc-1", ["alpha one", "beta two", "gamma three"])
        store.commit_document(doc, ENG, chunks)
        assert store.get_document("doc-1") == doc
        assert store.list_documents() == [doc]
        assert store.chunks_of("doc-1") == chunks
        assert store.get_chunks(ids(chunks)) == {c.chunk_id: c for c in chunks}
        assert store.get_chunks([chunks[1].chunk_id, "ch_missing"]) == {chunks[1].chunk_id: chunks[1]}

    def test_commit_documents_commits_a_batch_together_or_not_at_all(self, store: FullStore) -> None:
        a, a_chunks = make_document("doc-a", ["alpha one", "alpha two"])
        b, b_chunks = make_document("doc-b", ["beta"], acl=ALICE)
        store.commit_documents([(a, ENG, a_chunks, {}), (b, ALICE, b_chunks, {})])
        assert store.get_documents(["doc-a", "doc-b"]) == {"doc-a": a, "doc-b": b}
        assert store.chunks_of("doc-a") == a_chunks and store.chunks_of("doc-b") == b_chunks
        # A bad member (its document names another ACL class) fails the whole batch: the good one beside
        # it is not committed either, and what was there stays.
        c, c_chunks = make_document("doc-c", ["gamma"])
        a2, a2_chunks = make_document("doc-a", ["alpha changed"], version=2)
        with pytest.raises(ValueError, match="ACL class"):
            store.commit_documents([(a2, ENG, a2_chunks, {}), (c, ALICE, c_chunks, {})])
        assert store.get_document("doc-c") is None
        assert store.get_document("doc-a") == a and store.chunks_of("doc-a") == a_chunks

    def test_get_documents_in_one_call(self, store: FullStore) -> None:
        a, _ = make_document("doc-a", ["alpha"])
        b, _ = make_document("doc-b", ["beta"])
        for doc in (a, b):
            store.commit_document(doc, ENG, make_document(doc.doc_id, ["x"])[1])
        assert store.get_documents([]) == {}
        assert store.get_documents(["doc-b", "doc-a", "missing"]) == {"doc-a": a, "doc-b": b}

    def test_update_acl_repoints_document_and_chunks(self, store: FullStore) -> None:
        chunks = commit(store, "doc-1", ["one", "two"])
        hr = AclClass.of(["group:hr"])
        assert store.update_acl("doc-1", hr) is True
        doc = store.get_document("doc-1")
        assert doc is not None and doc.acl_class_id == hr.acl_class_id
        assert {c.acl_class_id for c in store.chunks_of("doc-1")} == {hr.acl_class_id}
        assert hr in store.acl_classes()
        assert [c.chunk_id for c in store.chunks_of("doc-1")] == ids(chunks)
        assert store.update_acl("missing", hr) is False

    def test_a_class_id_never_stands_for_two_reader_sets(self, store: FullStore) -> None:
        # A forged class with ENG's id but other readers (what a hash collision would give) is refused,
        # both on commit and on an ACL change; ENG's documents and readers are untouched.
        commit(store, "doc-eng", ["engineering only"])
        forged = AclClass(ENG.acl_class_id, ("group:outsiders", "role:admin"))
        doc, chunks = make_document("doc-forged", ["outsider text"], acl=forged)
        with pytest.raises(KgragError) as err:
            store.commit_document(doc, forged, chunks)
        assert err.value.code is ErrorCode.ACL_CLASS_CONFLICT
        assert store.get_document("doc-forged") is None
        with pytest.raises(KgragError) as err:
            store.update_acl("doc-eng", forged)
        assert err.value.code is ErrorCode.ACL_CLASS_CONFLICT
        assert [c for c in store.acl_classes() if c.acl_class_id == ENG.acl_class_id] == [ENG]
        stored = store.get_document("doc-eng")
        assert stored is not None and stored.acl_class_id == ENG.acl_class_id
        # Positive control: the same class with the same readers is shared, as it should be.
        commit(store, "doc-eng-2", ["more engineering"])
        assert {d.acl_class_id for d in store.get_documents(["doc-eng", "doc-eng-2"]).values()} == {ENG.acl_class_id}

    def test_chunks_come_back_in_seq_order(self, store: FullStore) -> None:
        doc, chunks = make_document("doc-1", ["one", "two", "three", "four"])
        store.commit_document(doc, ENG, list(reversed(chunks)))
        assert [c.seq for c in store.chunks_of("doc-1")] == [0, 1, 2, 3]

    def test_documents_are_listed_by_id(self, store: FullStore) -> None:
        for doc_id in ("doc-b", "doc-c", "doc-a"):
            commit(store, doc_id, ["text"])
        assert [d.doc_id for d in store.list_documents()] == ["doc-a", "doc-b", "doc-c"]

    def test_unicode_and_empty_breadcrumb_round_trip(self, store: FullStore) -> None:
        doc, chunks = make_document("doc-ü", ["naïve café ☕ — 漢字", "line\nbreak\ttab"], title="Ünïcode")
        chunks[1] = dataclasses.replace(chunks[1], breadcrumb=(), doc_time=None)
        store.commit_document(doc, ENG, chunks)
        assert store.chunks_of("doc-ü") == chunks

    def test_timestamps_are_timezone_aware_utc(self, store: FullStore) -> None:
        local = datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
        doc, chunks = make_document("doc-1", ["text"], modified_at=local)
        store.commit_document(doc, ENG, chunks)
        got = store.get_document("doc-1")
        assert got is not None
        assert got.modified_at is not None
        assert got.modified_at == T0  # the same instant...
        assert got.modified_at.utcoffset() == timedelta(0)  # ...expressed in UTC
        [chunk] = store.chunks_of("doc-1")
        assert chunk.doc_time == T0
        assert chunk.doc_time.utcoffset() == timedelta(0)

    def test_document_without_modified_time(self, store: FullStore) -> None:
        doc, chunks = make_document("doc-1", ["text"], modified_at=None)
        store.commit_document(doc, ENG, chunks)
        assert store.get_document("doc-1") == doc

    def test_recommit_replaces_the_chunk_set(self, store: FullStore) -> None:
        old = commit(store, "doc-1", ["kept one", "removed", "kept two"])
        # Same length as "removed", so "kept two" keeps its byte span and therefore its chunk ID.
        doc, new = make_document("doc-1", ["kept one", "changed", "kept two"], version=2)
        assert (new[0], new[2]) == (old[0], old[2])
        assert new[1].chunk_id != old[1].chunk_id
        store.commit_document(doc, ENG, new)
        assert store.chunks_of("doc-1") == new
        assert store.get_chunks([old[1].chunk_id]) == {}  # the removed chunk is gone
        kept = (old[0], old[2])
        assert store.get_chunks(ids(kept)) == {c.chunk_id: c for c in kept}  # kept ones unchanged
        assert store.stats().chunks == 3

    def test_recommit_may_renumber_kept_chunks(self, store: FullStore) -> None:
        # Kept chunks swap places: for a moment two of them share a seq, which must not fail the commit.
        old = commit(store, "doc-1", ["first", "second", "third"])
        doc, _ = make_document("doc-1", ["first", "second", "third"], version=2)
        swapped = [dataclasses.replace(old[1], seq=0), dataclasses.replace(old[0], seq=1)]
        store.commit_document(doc, ENG, swapped)
        assert store.chunks_of("doc-1") == swapped

    def test_recommit_with_no_chunks_removes_them_all(self, store: FullStore) -> None:
        commit(store, "doc-1", ["one", "two"])
        doc, _ = make_document("doc-1", ["one", "two"], version=2)
        store.commit_document(doc, ENG, [])
        assert store.chunks_of("doc-1") == []
        assert store.get_document("doc-1") == doc

    def test_recommit_stores_new_version_hash_and_fields(self, store: FullStore) -> None:
        commit(store, "doc-1", ["old text"])
        doc, chunks = make_document("doc-1", ["new text"], version=2, title="Renamed", acl=ALICE)
        doc = dataclasses.replace(doc, media_type="text/plain", modified_at=T0 + timedelta(days=1))
        store.commit_document(doc, ALICE, chunks)
        got = store.get_document("doc-1")
        assert got == doc  # version 2, the new content hash, title, media type, time and ACL
        assert [c.acl_class_id for c in store.chunks_of("doc-1")] == [ALICE.acl_class_id]

    def test_one_document_does_not_touch_another(self, store: FullStore) -> None:
        a = commit(store, "doc-a", ["a one", "a two"])
        commit(store, "doc-b", ["b one"])
        doc, _ = make_document("doc-b", [], version=2)
        store.commit_document(doc, ENG, [])
        assert store.chunks_of("doc-a") == a

    def test_acl_class_upsert_is_idempotent(self, store: FullStore) -> None:
        commit(store, "doc-1", ["one"], acl=ENG)
        commit(store, "doc-2", ["two"], acl=ENG)
        commit(store, "doc-1", ["one"], acl=ENG, version=2)
        assert store.acl_classes() == [ENG]
        commit(store, "doc-3", ["three"], acl=PRIVATE_ACL)
        commit(store, "doc-4", ["four"], acl=PUBLIC_ACL)
        expected = sorted([ENG, PRIVATE_ACL, PUBLIC_ACL], key=lambda c: c.acl_class_id)
        assert store.acl_classes() == expected  # principals and the malformed flag round-trip

    def test_mark_deleted(self, store: FullStore) -> None:
        doc, chunks = make_document("doc-1", ["one", "two"])
        store.commit_document(doc, ENG, chunks)
        record = DeletionRecord("doc-1", tuple(ids(chunks)), ("docs/x/1",), ("postgres", "vector_index"), T0)
        store.mark_deleted("doc-1", record)
        assert store.chunks_of("doc-1") == []
        assert store.get_chunks(ids(chunks)) == {}
        # The tombstone keeps IDs, hashes and times, not the title or URI (ADR 0008).
        assert store.get_document("doc-1") == dataclasses.replace(
            doc, status=DocumentStatus.DELETED, deleted_at=T0, title="", uri=""
        )
        assert store.list_documents() == []
        assert [d.doc_id for d in store.list_documents(include_deleted=True)] == ["doc-1"]
        [stored] = store.deletion_records("doc-1")
        assert dataclasses.replace(stored, purges=()) == record
        # The store adds its own purge line: the document's rows are shredded (key destroyed).
        assert [(p.store, p.status.value) for p in stored.purges] == [("postgres", "shredded")]
        assert store.deletion_records("doc-2") == []
        stats = store.stats()
        assert (stats.documents, stats.deleted_documents, stats.chunks) == (0, 1, 0)

    def test_known_sources_are_those_the_caller_can_read(self, store: FullStore) -> None:
        wiki, wiki_chunks = make_document("doc-wiki", ["one"])
        store.commit_document(dataclasses.replace(wiki, source="wiki"), ENG, wiki_chunks)
        hr, hr_chunks = make_document("doc-hr", ["two"], acl=ALICE)
        store.commit_document(dataclasses.replace(hr, source="hr"), ALICE, hr_chunks)
        gone, gone_chunks = make_document("doc-gone", ["three"])
        store.commit_document(dataclasses.replace(gone, source="old"), ENG, gone_chunks)
        store.mark_deleted("doc-gone", DeletionRecord("doc-gone", tuple(ids(gone_chunks)), (), ("postgres",), T0))
        asked = ["wiki", "hr", "old", "never"]
        both = [ENG.acl_class_id, ALICE.acl_class_id]
        assert store.known_sources(asked, both) == {"wiki", "hr"}  # the positive control
        assert store.known_sources(asked, [ENG.acl_class_id]) == {"wiki"}  # hr is ALICE's alone
        assert store.known_sources(asked, []) == set()
        assert store.known_sources([], both) == set()

    def test_observed_time_only_moves_forward(self, store: FullStore) -> None:
        doc, chunks = make_document("doc-1", ["one"])
        later = T0 + timedelta(hours=1)
        store.commit_document(dataclasses.replace(doc, observed_at=later), ENG, chunks)
        store.commit_document(dataclasses.replace(doc, observed_at=T0), ENG, chunks)
        stored = store.get_document("doc-1")
        assert stored is not None and stored.observed_at == later and stored.deleted_at is None

    def test_deletion_record_without_time_is_stamped(self, store: FullStore) -> None:
        commit(store, "doc-1", ["one"])
        before = datetime.now(UTC) - timedelta(minutes=5)  # slack for clock skew with a server
        store.mark_deleted("doc-1", DeletionRecord("doc-1", (), (), ("postgres",)))
        [record] = store.deletion_records("doc-1")
        assert record.at is not None
        assert record.at.utcoffset() == timedelta(0)
        assert record.at > before
        assert (record.chunk_ids, record.object_keys, record.stores) == ((), (), ("postgres",))

    def test_mark_deleted_unknown_document_fails_and_records_nothing(self, store: FullStore) -> None:
        with pytest.raises(KgragError) as caught:
            store.mark_deleted("ghost", DeletionRecord("ghost", (), (), ("postgres",), T0))
        assert caught.value.code is ErrorCode.DOCUMENT_NOT_FOUND
        assert store.deletion_records("ghost") == []

    def test_deleted_document_can_be_ingested_again(self, store: FullStore) -> None:
        commit(store, "doc-1", ["one"])
        store.mark_deleted("doc-1", DeletionRecord("doc-1", (), (), ("postgres",), T0))
        chunks = commit(store, "doc-1", ["one again"], version=2)
        assert store.chunks_of("doc-1") == chunks
        assert store.list_documents() == [make_document("doc-1", ["one again"], version=2)[0]]
        assert len(store.deletion_records("doc-1")) == 1  # the audit trail stays

    def test_reads_ignore_chunks_of_documents_that_are_not_active(self, store: FullStore) -> None:
        active = commit(store, "doc-a", ["visible"])
        hidden = commit(store, "doc-b", ["invisible"], status=DocumentStatus.DELETED)
        assert store.chunks_of("doc-b") == []
        assert store.get_chunks(ids(active) + ids(hidden)) == {c.chunk_id: c for c in active}

    def test_ingest_log_round_trip(self, store: FullStore) -> None:
        at = T0 + timedelta(seconds=30)
        outcomes = [
            IngestOutcome("doc-1", IngestStatus.INDEXED, "files", "file:///1.md", None, "", 4, 4, 0, T0),
            IngestOutcome(
                "doc-2",
                IngestStatus.REJECTED,
                "files",
                "file:///2.md",
                ErrorCode.INVALID_UTF8,
                "byte 0xff at offset 3",
                at=at,
            ),
            IngestOutcome("doc-1", IngestStatus.UPDATED, "files", "file:///1.md", None, "", 5, 2, 1, at),
        ]
        store.record_outcomes(outcomes[:1])
        store.record_outcomes(outcomes[1:])
        store.record_outcomes([])
        assert store.recent_outcomes() == list(reversed(outcomes))  # newest first
        assert store.recent_outcomes(limit=2) == [outcomes[2], outcomes[1]]
        assert store.stats().ingest_errors == 1
        assert store.outcomes_for("doc-1") == [outcomes[2], outcomes[0]]  # one document's, newest first
        assert store.outcomes_for("doc-1", limit=1) == [outcomes[2]]
        assert store.outcomes_for("doc-2") == [outcomes[1]]
        assert store.outcomes_for("doc-3") == []
        assert store.recent_errors() == [outcomes[1]]

    def test_recent_errors_outlive_later_successes(self, store: FullStore) -> None:
        # The status view lists errors by count and by the newest N: a long run of successes after a
        # rejection must not push it out of the list while the count still includes it.
        bad = [
            IngestOutcome(f"bad-{i}", IngestStatus.REJECTED, error_code=ErrorCode.MALFORMED_JSON, message=f"#L{i}")
            for i in range(3)
        ]
        store.record_outcomes(bad)
        store.record_outcomes([IngestOutcome(f"ok-{i}", IngestStatus.INDEXED) for i in range(60)])
        assert store.stats().ingest_errors == 3
        assert [o.doc_id for o in store.recent_errors()] == ["bad-2", "bad-1", "bad-0"]
        assert [o.doc_id for o in store.recent_errors(limit=2)] == ["bad-2", "bad-1"]
        assert all(o.error_code is None for o in store.recent_outcomes(50))

    def test_ingest_outcome_without_time_is_stamped(self, store: FullStore) -> None:
        store.record_outcomes([IngestOutcome("doc-1", IngestStatus.DELETED, chunks_removed=3)])
        [got] = store.recent_outcomes()
        assert got.at is not None
        assert got.at.utcoffset() == timedelta(0)
        expected = IngestOutcome("doc-1", IngestStatus.DELETED, chunks_removed=3)
        assert dataclasses.replace(got, at=None) == expected

    def test_embedding_cache_round_trip_is_exact_float32(self, store: FullStore) -> None:
        tricky = [0.1, -1 / 3, 1e-40, 3.4e38, -0.0, 1.0, 2**-149, 123456.789]
        vectors = {
            "sha256:a": tuple(f32(v) for v in tricky),
            "sha256:b": tuple(f32(i / 7) for i in range(8)),
        }
        store.put_vectors(MODEL, vectors)
        got = store.get_vectors(MODEL, ["sha256:a", "sha256:b", "sha256:missing"])
        assert got == vectors
        assert all(type(x) is float for v in got.values() for x in v)
        # bit for bit, so -0.0 keeps its sign
        assert [struct.pack("<d", x) for x in got["sha256:a"]] == [struct.pack("<d", x) for x in vectors["sha256:a"]]
        assert store.get_vectors("other-model", ["sha256:a"]) == {}
        assert store.get_vectors(MODEL, []) == {}

    def test_embedding_cache_delete(self, store: FullStore) -> None:
        store.put_vectors("m", {"h1": [0.5, 0.25], "h2": [1.0, 0.0]})
        store.put_vectors("other", {"h1": [0.5, 0.25]})
        assert store.delete_vectors("m", ["h1", "missing"]) == 1
        assert store.delete_vectors("m", []) == 0
        assert set(store.get_vectors("m", ["h1", "h2"])) == {"h2"}
        assert set(store.get_vectors("other", ["h1"])) == {"h1"}

    def test_embedding_cache_keeps_the_first_vector(self, store: FullStore) -> None:
        store.put_vectors(MODEL, {"sha256:a": (1.0, 2.0)})
        store.put_vectors(MODEL, {"sha256:a": (9.0, 9.0), "sha256:b": (3.0, 4.0)})
        store.put_vectors(MODEL, {})
        assert store.get_vectors(MODEL, ["sha256:a", "sha256:b"]) == {
            "sha256:a": (1.0, 2.0),
            "sha256:b": (3.0, 4.0),
        }

    def test_embedding_cache_handles_a_large_batch(self, store: FullStore) -> None:
        vectors = {f"sha256:{i:04d}": tuple(f32((i * 31 + d) / 97) for d in range(384)) for i in range(300)}
        store.put_vectors(MODEL, vectors)
        assert store.get_vectors(MODEL, sorted(vectors)) == vectors
        assert store.stats().cached_vectors == 300

    def test_stats_count_everything(self, store: FullStore) -> None:
        commit(store, "doc-a", ["one", "two", "three"], acl=ENG)
        commit(store, "doc-b", ["four"], acl=ALICE)
        commit(store, "doc-c", ["five", "six"], acl=ENG)
        store.mark_deleted("doc-c", DeletionRecord("doc-c", (), (), ("postgres",), T0))
        store.put_vectors(MODEL, {"sha256:a": (1.0,), "sha256:b": (2.0,)})
        store.record_outcomes(
            [
                IngestOutcome("doc-x", IngestStatus.REJECTED, error_code=ErrorCode.EMPTY_DOCUMENT),
                IngestOutcome("doc-y", IngestStatus.REJECTED, error_code=ErrorCode.DOCUMENT_TOO_LARGE),
                IngestOutcome("doc-a", IngestStatus.INDEXED, chunks_total=3),
            ]
        )
        assert store.stats() == StoreStats(
            documents=2, deleted_documents=1, chunks=4, acl_classes=2, cached_vectors=2, ingest_errors=2
        )
