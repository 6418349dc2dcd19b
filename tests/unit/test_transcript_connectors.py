"""Transcript connectors (WebVTT, SRT, plain) on the sample meetings: who spoke when, on every chunk."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from kgrag_adapters.connectors import iter_folder
from kgrag_core.chunking import chunk_document
from kgrag_core.chunking.locators import TRANSCRIPT_MEDIA_TYPE, Locator, annotate_spans, chunk_locator
from kgrag_core.connectors import ConnectorFailure
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode

MEETINGS = Path(__file__).resolve().parents[2] / "corpora" / "formats" / "samples" / "meetings"


def _documents() -> dict[str, SourceDocument]:
    out = {}
    for item in iter_folder(MEETINGS):
        assert isinstance(item, SourceDocument), item
        out[item.doc_id] = item
    return out


def _places(doc: SourceDocument, max_tokens: int) -> list[tuple[str, Locator | None]]:
    text = doc.body.decode("utf-8")
    spans = annotate_spans(
        doc.media_type, text, chunk_document(text, title=doc.title, max_tokens=max_tokens, overlap_tokens=4)
    )
    return [
        (
            piece := doc.body[s.start_byte : s.end_byte].decode("utf-8"),
            chunk_locator(doc.media_type, s.breadcrumb, piece),
        )
        for s in spans
    ]


def test_vtt_voices_times_and_meeting_date() -> None:
    doc = _documents()["2026-03-02-ops-sync.vtt"]
    assert doc.media_type == TRANSCRIPT_MEDIA_TYPE and doc.title == "Weekly operations sync"
    assert doc.modified_at == datetime(2026, 3, 2, tzinfo=UTC)
    assert doc.metadata["speakers"] == "Alice Chen, Bob Okafor, Tomasz Kowal"
    # Alice's two consecutive cues are one utterance, stamped with the first cue's start.
    assert doc.body.decode().startswith(
        "[00:00:04 Alice Chen] Good morning everyone, let's start with the Leeds dock. The new loading bay opens"
    )
    places = _places(doc, max_tokens=16)
    assert all(place is not None and place.speaker and place.time for _, place in places)
    near_miss = next(place for text, place in places if "near misses" in text)
    assert near_miss == Locator(speaker="Tomasz Kowal", time="00:01:02")


def test_srt_and_plain_speakers_from_the_text() -> None:
    docs = _documents()
    srt, plain = docs["2026-03-09-leeds-cutover.srt"], docs["2026-03-16-returns-standup.transcript.txt"]
    assert srt.modified_at == datetime(2026, 3, 9, tzinfo=UTC) and srt.title == "Leeds cutover (2026-03-09)"
    rollback = next(place for text, place in _places(srt, 200) if "Rollback" in text)
    assert rollback is not None and rollback.speaker in {"Grace O'Neill", "Bob Okafor"}
    assert "[00:00:12 Bob Okafor] Rollback decision is at 02:00 on Sunday" in srt.body.decode()
    assert plain.media_type == TRANSCRIPT_MEDIA_TYPE  # not plain text, although it ends in .txt
    assert "[00:00:20 Tomasz Kowal] Most of them are damaged pallets from Rotterdam. They arrive" in plain.body.decode()


def test_broken_transcripts_fail_alone(tmp_path: Path) -> None:
    shutil.copy(MEETINGS / "2026-03-02-ops-sync.vtt", tmp_path / "good.vtt")
    (tmp_path / "bad.vtt").write_text("WEBVTT\n\nthis is no cue\n", encoding="utf-8")
    (tmp_path / "notvtt.vtt").write_text("hello\n", encoding="utf-8")
    (tmp_path / "bad.srt").write_text("1\nnot a time\nhello\n", encoding="utf-8")
    (tmp_path / "nobody.transcript.txt").write_text("no speaker names here\n", encoding="utf-8")
    (tmp_path / "latin1.srt").write_bytes("1\n00:00:01,000 --> 00:00:02,000\nJosé: olá\n".encode("latin-1"))
    (tmp_path / "2026-13-40-baddate.vtt").write_text(
        "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n<v A>hi\n", encoding="utf-8"
    )
    items = {item.doc_id: item for item in iter_folder(tmp_path)}
    assert isinstance(items.pop("good.vtt"), SourceDocument)
    codes = {doc_id: item.code for doc_id, item in items.items() if isinstance(item, ConnectorFailure)}
    assert codes == {
        "bad.vtt": ErrorCode.MALFORMED_FILE,
        "notvtt.vtt": ErrorCode.MALFORMED_FILE,
        "bad.srt": ErrorCode.MALFORMED_FILE,
        "nobody.transcript.txt": ErrorCode.MALFORMED_FILE,
        "latin1.srt": ErrorCode.INVALID_UTF8,
        "2026-13-40-baddate.vtt": ErrorCode.MALFORMED_EVENT,
    }
