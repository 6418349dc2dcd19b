"""The fast path end to end on the embedded runtime: idempotence, incremental re-embedding, deletion."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

import pytest

from kgrag_adapters.connectors import iter_path
from kgrag_core.acl import Caller
from kgrag_core.documents import DocumentStatus
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.events import DOCUMENTS_CHANGED
from kgrag_core.ingest import IngestStatus
from kgrag_runtime.app import KgragApp
from tests.pipeline.corpus import ATLAS, corpus, doc

ADMIN = Caller(admin=True)


def _index_counts(kg: KgragApp) -> tuple[int, int, int]:
    status = kg.status()
    return int(status["chunks"]), int(status["vector_points"]), int(status["keyword_docs"])  # type: ignore[call-overload]


def test_ingest_twice_changes_nothing(kg: KgragApp) -> None:
    first = kg.ingest(corpus())
    assert {o.status for o in first} == {IngestStatus.INDEXED}
    counts = _index_counts(kg)
    assert counts[0] == counts[1] == counts[2] > 3
    second = kg.ingest(corpus())
    assert {o.status for o in second} == {IngestStatus.UNCHANGED}
    assert _index_counts(kg) == counts
    assert sum(o.chunks_embedded for o in second) == 0


def test_chunk_text_is_exactly_the_document_bytes(kg: KgragApp) -> None:
    kg.ingest(corpus())
    for source in corpus():
        for chunk in kg.searcher.documents.chunks_of(source.doc_id):
            assert source.body[chunk.start_byte : chunk.end_byte].decode("utf-8") == chunk.text


def test_edit_reembeds_only_the_changed_section(kg: KgragApp) -> None:
    kg.ingest(corpus())
    before = {c.chunk_id for c in kg.searcher.documents.chunks_of("atlas")}
    edited = ATLAS.replace("Priya Raman since March 2024", "Tomás Ortega since June 2025")
    (outcome,) = kg.ingest([doc("atlas", edited, title="Atlas routing engine")])
    after = {c.chunk_id for c in kg.searcher.documents.chunks_of("atlas")}
    assert outcome.status is IngestStatus.UPDATED
    assert outcome.chunks_embedded == 1
    assert outcome.chunks_removed == 1
    assert len(before - after) == 1 and len(after - before) == 1
    assert kg.searcher.vectors.ids_for_doc("atlas") == sorted(after)
    assert kg.searcher.keywords.ids_for_doc("atlas") == sorted(after)
    stored = kg.searcher.documents.get_document("atlas")
    assert stored is not None and stored.version == 2
    hits = kg.search("Who is the on-call owner of Atlas?", ADMIN).hits
    assert any("Tomás Ortega" in h.text for h in hits)
    assert not any("Priya Raman" in h.text for h in hits)


def test_delete_removes_the_document_from_every_store(kg: KgragApp) -> None:
    kg.ingest(corpus())
    question = "How long was Harbor down in May 2024?"
    assert kg.ask(question, ADMIN)["answered"] is True
    chunk_ids = [c.chunk_id for c in kg.searcher.documents.chunks_of("harbor")]
    assert chunk_ids

    outcome = kg.delete("harbor")

    assert outcome.status is IngestStatus.DELETED
    assert outcome.chunks_removed == len(chunk_ids)
    store = kg.searcher.documents
    stored = store.get_document("harbor")
    assert stored is not None and stored.status is DocumentStatus.DELETED
    assert store.chunks_of("harbor") == []
    assert store.get_chunks(chunk_ids) == {}
    assert kg.searcher.vectors.ids_for_doc("harbor") == []
    assert kg.searcher.keywords.ids_for_doc("harbor") == []
    assert not any(h.doc_id == "harbor" for h in kg.search("Harbor warehouse outage certificate", ADMIN).hits)
    after = kg.ask(question, ADMIN)
    assert after["cached"] is False
    assert all(c["doc_id"] != "harbor" for c in after["citations"])  # type: ignore[union-attr]
    (record,) = store.deletion_records("harbor")
    assert sorted(record.chunk_ids) == sorted(chunk_ids)
    assert len(record.object_keys) == 1
    assert "object_store" in record.stores and "embedding_cache" in record.stores
    assert kg.status()["cached_vectors"] == kg.status()["chunks"]  # the deleted text's vectors are gone
    # Deleting again is a clear error, not a silent success.
    again = kg.delete("harbor")
    assert again.error_code is ErrorCode.DOCUMENT_NOT_FOUND


def test_bad_documents_get_codes_and_lose_nothing_else(kg: KgragApp) -> None:
    kg.ingest(corpus())
    atlas_chunks = kg.searcher.documents.chunks_of("atlas")
    bad_utf8 = replace(doc("atlas", "x"), body=b"ok \xff\xfe")
    outcomes = kg.ingest(
        [
            bad_utf8,
            doc("empty", "   \n"),
            doc("huge", "word " * 10_000),
            doc("fresh", "# Fresh\n\nA perfectly good new document about pallets."),
        ]
    )
    codes = {o.doc_id: o.error_code for o in outcomes}
    assert codes == {
        "atlas": ErrorCode.INVALID_UTF8,
        "empty": ErrorCode.EMPTY_DOCUMENT,
        "huge": ErrorCode.DOCUMENT_TOO_LARGE,
        "fresh": None,
    }
    assert kg.searcher.documents.chunks_of("atlas") == atlas_chunks  # the stored version survives
    assert kg.searcher.documents.get_document("fresh") is not None
    logged = {o.doc_id: o.error_code for o in kg.ingest_log.recent_outcomes(20) if o.error_code}
    assert logged["empty"] is ErrorCode.EMPTY_DOCUMENT


def test_a_connector_document_with_a_control_character_in_title_or_uri_is_rejected_alone(
    kg: KgragApp, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "nul-title.md").write_text('---\ntitle: "Q3\\0plan"\n---\n# Plan\n\nPallets.\n', encoding="utf-8")
    (folder / "good.md").write_text("# Good\n\nA good note about pallets.\n", encoding="utf-8")
    lines = [
        {"id": "bad-uri", "title": "Bad uri", "uri": "wiki://a\u0007b", "text": "Pallets and forklifts."},
        {"id": "bad-title", "title": "Bad\u0000title", "text": "Pallets and forklifts."},
        {"id": "good-line", "title": "Good line", "text": "Pallets and forklifts."},
    ]
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    outcomes = kg.ingest([*iter_path(folder), *iter_path(records)])
    codes = {o.doc_id: o.error_code for o in outcomes}
    assert codes == {
        "nul-title.md": ErrorCode.MALFORMED_EVENT,
        "bad-uri": ErrorCode.MALFORMED_EVENT,
        "bad-title": ErrorCode.MALFORMED_EVENT,
        "good.md": None,
        "good-line": None,
    }, [o.as_dict() for o in outcomes]
    documents = kg.searcher.documents
    assert documents.get_document("good.md") is not None and documents.get_document("good-line") is not None
    assert all(documents.get_document(d) is None for d in ("nul-title.md", "bad-uri", "bad-title"))


def test_malformed_event_goes_to_the_dead_letter_topic_and_the_partition_moves_on(kg: KgragApp) -> None:
    good = doc("pallets", "# Pallets\n\nEuro pallets measure 1200 by 800 millimetres.")
    kg.ingestion.bus.publish(DOCUMENTS_CHANGED, "pallets", {"doc_id": "pallets", "title": 7})
    kg.ingestion.bus.publish(
        DOCUMENTS_CHANGED,
        "pallets",
        {
            "doc_id": "pallets",
            "source": "t",
            "uri": "t://p",
            "title": "Pallets",
            "body_b64": base64.b64encode(good.body).decode(),
            "acl_principals": ["public"],
        },
    )
    report = kg.ingestion.bus.drain(kg.ingestion.handlers[0])
    assert [d.error_code for d in report.dead_letters] == ["MALFORMED_EVENT"]
    assert "title" in report.dead_letters[0].reason
    assert len(kg.ingestion.bus.dead_letters["chunk-indexer.dlq"]) == 1
    assert kg.searcher.documents.get_document("pallets") is not None


def test_index_persists_across_restarts_and_one_process_holds_it(open_kg) -> None:  # type: ignore[no-untyped-def]
    with open_kg() as first:
        first.ingest(corpus())
        expected = [h.chunk_id for h in first.search("Atlas routes per night", ADMIN).hits]
        with pytest.raises(KgragError, match="Another kgrag process"), open_kg():
            pass
    with open_kg() as second:
        assert [h.chunk_id for h in second.search("Atlas routes per night", ADMIN).hits] == expected
        assert {o.status for o in second.ingest(corpus())} == {IngestStatus.UNCHANGED}
    assert expected


def test_events_older_than_the_store_are_skipped(kg: KgragApp) -> None:
    """Across topics Kafka gives no order: a late, older change must not resurrect a deleted document,
    and a late, older deletion must not delete a newer version."""
    from datetime import UTC, datetime, timedelta

    before = datetime.now(UTC) - timedelta(minutes=5)
    kg.ingest(corpus())
    kg.delete("harbor")
    stale_change = replace(next(d for d in corpus() if d.doc_id == "harbor"), observed_at=before)
    (outcome,) = kg.ingest([stale_change])
    assert outcome.status is IngestStatus.UNCHANGED and "later" in outcome.message
    stored = kg.searcher.documents.get_document("harbor")
    assert stored is not None and stored.status is DocumentStatus.DELETED

    indexer = kg.ingestion.handlers[0].indexer  # type: ignore[attr-defined]
    skipped = indexer.delete("atlas", observed_at=before)
    assert skipped.status is IngestStatus.UNCHANGED
    assert kg.searcher.documents.chunks_of("atlas")
    # A change made after the deletion brings the document back.
    (back,) = kg.ingest([next(d for d in corpus() if d.doc_id == "harbor")])
    assert back.status is IngestStatus.UPDATED
