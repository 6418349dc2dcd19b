"""Pages and speaker/time travel with chunks of paged and timed formats, and citations read them back."""

from __future__ import annotations

from kgrag_core.answering.model import cite
from kgrag_core.chunking import chunk_document
from kgrag_core.chunking.locators import (
    PAGE_BREAK,
    PDF_MEDIA_TYPE,
    TRANSCRIPT_MEDIA_TYPE,
    Locator,
    annotate_spans,
    chunk_locator,
    marker,
)
from kgrag_core.search import SearchHit

PAGED = PAGE_BREAK.join(
    ["Intro text on page one.", "Second page paragraph.\n\n# Returns\n\nReturns are accepted.", "Last."]
)
TIMED = "\n\n".join(
    [
        marker("00:00:05", "Alice Chen") + "Welcome everyone to the sync.",
        marker("00:01:10", "Bob") + "The dock moves to Leeds.",
        marker(None, "Carol") + "No time here.",
    ]
)


def _chunks(media_type: str, text: str, max_tokens: int) -> list[tuple[tuple[str, ...], str]]:
    spans = annotate_spans(media_type, text, chunk_document(text, title="T", max_tokens=max_tokens, overlap_tokens=0))
    data = text.encode("utf-8")
    return [(s.breadcrumb, data[s.start_byte : s.end_byte].decode("utf-8")) for s in spans]


def test_every_pdf_chunk_names_the_page_it_starts_on() -> None:
    chunks = _chunks(PDF_MEDIA_TYPE, PAGED, max_tokens=8)
    pages = [chunk_locator(PDF_MEDIA_TYPE, crumb, text) for crumb, text in chunks]
    assert [p.page if p else None for p in pages] == [1, 2, 2, 3]
    assert chunks[2][0] == ("T", "Returns", "p. 2")


def test_a_chunk_across_a_page_break_spans_both_pages_and_a_quote_gets_its_own() -> None:
    [(crumb, text)] = _chunks(PDF_MEDIA_TYPE, PAGED, max_tokens=200)[:1]
    whole = chunk_locator(PDF_MEDIA_TYPE, crumb, text)
    assert whole == Locator(page=1, page_end=2)
    hit = SearchHit("c", "d", "T", "u", "s", crumb, 0, len(text.encode()), text, 1.0, locator=whole)
    start = text.encode().index(b"Second")
    assert cite(1, hit, start, start + 6, "Second").page == 2
    assert cite(1, hit, 0, 5, "Intro").page == 1
    assert hit.as_dict()["page"] == 1 and hit.as_dict()["page_end"] == 2


def test_transcript_chunks_and_quotes_carry_speaker_and_time() -> None:
    chunks = _chunks(TRANSCRIPT_MEDIA_TYPE, TIMED, max_tokens=6)
    places = [chunk_locator(TRANSCRIPT_MEDIA_TYPE, crumb, text) for crumb, text in chunks]
    assert {(p.speaker, p.time) for p in places if p} == {
        ("Alice Chen", "00:00:05"),
        ("Bob", "00:01:10"),
        ("Carol", None),
    }
    # A piece split off inside Alice's turn still says it is hers.
    continuation = next(text for crumb, text in chunks if not text.startswith("[") and "sync" in text)
    crumb = next(c for c, t in chunks if t == continuation)
    assert chunk_locator(TRANSCRIPT_MEDIA_TYPE, crumb, continuation) == Locator(speaker="Alice Chen", time="00:00:05")
    [(crumb, text)] = _chunks(TRANSCRIPT_MEDIA_TYPE, TIMED, max_tokens=200)
    hit = SearchHit(
        "c",
        "d",
        "T",
        "u",
        "s",
        crumb,
        0,
        len(text.encode()),
        text,
        1.0,
        locator=chunk_locator(TRANSCRIPT_MEDIA_TYPE, crumb, text),
    )
    start = text.encode().index(b"The dock")
    citation = cite(1, hit, start, start + 8, "The dock").as_dict()
    assert (citation["speaker"], citation["time"]) == ("Bob", "00:01:10")


def test_other_formats_get_no_place_and_unchanged_output() -> None:
    text = "# A\n\nPlain [00:01:10 Bob] text.\n"
    spans = chunk_document(text, title="T")
    assert annotate_spans("text/markdown", text, spans) == spans
    hit = SearchHit("c", "d", "T", "u", "s", ("T", "A"), 0, 4, "text", 1.0)
    assert cite(1, hit, 0, 4, "text").as_dict().keys() == {"id", "chunk_id", "doc_id", "title", "uri", "span", "quote"}
    assert "page" not in hit.as_dict() and "speaker" not in hit.as_dict()


def test_a_heading_in_brackets_is_not_read_as_a_speaker() -> None:
    assert chunk_locator(TRANSCRIPT_MEDIA_TYPE, ("T", "[Draft] notes"), "x") is None
    assert chunk_locator(PDF_MEDIA_TYPE, ("T", "Returns"), "x") is None
