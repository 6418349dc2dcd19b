"""Where a chunk or a quote sits in its source: the page of a PDF, the speaker and time of a transcript or chat.

Connectors of paged and timed formats render their text so the place is in the text itself, never in
side metadata that a re-index from the stored body would lose:

- paged (`PAGED_MEDIA_TYPES`): pages are separated by a line holding only a form feed (U+000C), so the
  page of byte offset b is 1 + the number of form feeds before b;
- timed (`TIMED_MEDIA_TYPES`): every utterance starts a line with a marker `[TIME SPEAKER] ` (either part
  may be missing, not both), e.g. `[00:01:23 Alice Chen] We ship on Friday.`

The indexer appends the place where a chunk starts to its breadcrumb as one last element (`p. 3`,
`[00:01:23 Alice Chen]`), so a chunk read back alone (a search hit) still knows it; the breadcrumb is sealed
with the chunk, so a speaker's name is protected like the text. A quote's own place is the chunk's place
moved on by the page breaks and markers inside the chunk before the quote.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kgrag_core.documents import ChunkSpan

PDF_MEDIA_TYPE = "application/pdf"
TRANSCRIPT_MEDIA_TYPE = "text/x-kgrag-transcript"
CHAT_MEDIA_TYPE = "text/x-kgrag-chat"
PAGED_MEDIA_TYPES = frozenset({PDF_MEDIA_TYPE})
TIMED_MEDIA_TYPES = frozenset({TRANSCRIPT_MEDIA_TYPE, CHAT_MEDIA_TYPE})

PAGE_BREAK = "\n\f\n"  # what a paged connector writes between two pages
_FORM_FEED = "\f"
_PAGE_CRUMB = re.compile(r"^p\. ([1-9][0-9]*)$")
_TIME = r"[0-9]{1,2}(?::[0-9]{2}){1,2}(?:[.,][0-9]{1,3})?"
_MARKER = re.compile(rf"^\[(?:(?P<time>{_TIME})(?: (?P<a>[^\]\n]+))?|(?P<b>[^\]\n\d][^\]\n]*))\] ", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Locator:
    """A place in a source: pages (first and last, for a span crossing a page break) or speaker and time."""

    page: int | None = None
    page_end: int | None = None
    speaker: str | None = None
    time: str | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.page is not None:
            out["page"] = self.page
            if self.page_end is not None and self.page_end != self.page:
                out["page_end"] = self.page_end
        if self.speaker is not None:
            out["speaker"] = self.speaker
        if self.time is not None:
            out["time"] = self.time
        return out

    def label(self) -> str:
        """How a reader sees it: `p. 3`, `pp. 3-4`, `00:01:23 Alice Chen`."""
        if self.page is not None:
            last = self.page_end if self.page_end is not None else self.page
            return f"p. {self.page}" if last == self.page else f"pp. {self.page}-{last}"
        return " ".join(part for part in (self.time, self.speaker) if part)


def marker(time: str | None, speaker: str | None) -> str:
    """The line prefix a timed connector writes before an utterance. Raises ValueError for neither part."""
    speaker = " ".join((speaker or "").replace("]", ")").replace("[", "(").split()) or None
    if time is not None and not re.fullmatch(_TIME, time):
        raise ValueError(f"time {time!r} is not H:MM, HH:MM:SS or HH:MM:SS.mmm")
    if time is None and speaker is None:
        raise ValueError("a marker needs a time or a speaker")
    if time is None and speaker is not None and speaker[0].isdigit():
        speaker = f"({speaker})"  # a leading digit would read as a time
    return f"[{' '.join(part for part in (time, speaker) if part)}] "


def is_located(media_type: str) -> bool:
    return media_type in PAGED_MEDIA_TYPES or media_type in TIMED_MEDIA_TYPES


def annotate_spans(media_type: str, text: str, spans: Sequence[ChunkSpan]) -> list[ChunkSpan]:
    """Spans with the place each starts at appended to its breadcrumb; unchanged for other media types."""
    if not is_located(media_type):
        return list(spans)
    data = text.encode("utf-8")
    out: list[ChunkSpan] = []
    for span in spans:
        found = _place_before(media_type, data, span.start_byte)
        crumb = _crumb(found)
        out.append(replace(span, breadcrumb=(*span.breadcrumb, crumb)) if crumb else span)
    return out


def chunk_locator(media_type: str, breadcrumb: Sequence[str], chunk_text: str) -> Locator | None:
    """The place of a whole chunk (as a search hit shows it); None for media types without places."""
    start = _from_crumb(media_type, breadcrumb)
    if start is None:
        return None
    if start.page is not None:
        return replace(start, page_end=start.page + chunk_text.count(_FORM_FEED))
    return start


def quote_locator(chunk: Locator | None, chunk_text: str, offset: int) -> Locator | None:
    """The place of a quote starting `offset` bytes into the chunk text (a citation), from the chunk's own
    place (`chunk_locator`); None when the chunk has none."""
    if chunk is None:
        return None
    before = chunk_text.encode("utf-8")[: max(0, offset)].decode("utf-8", errors="ignore")
    if chunk.page is not None:
        return Locator(page=chunk.page + before.count(_FORM_FEED))
    # The last marker whose line starts at or before the quote (the quote may start at the marker itself).
    line_start = before.rfind("\n") + 1
    head = before[:line_start] + chunk_text[line_start:].split("\n", 1)[0]
    last = None
    for match in _MARKER.finditer(head):
        last = match
    return _from_marker(last) if last is not None else chunk


def _place_before(media_type: str, data: bytes, offset: int) -> Locator | None:
    if media_type in PAGED_MEDIA_TYPES:
        return Locator(page=1 + data.count(b"\f", 0, offset))
    text = data[:offset].decode("utf-8", errors="ignore")
    line_end = data.find(b"\n", offset)
    text += data[offset : len(data) if line_end < 0 else line_end].decode("utf-8", errors="ignore")
    last = None
    for match in _MARKER.finditer(text):
        last = match
    return _from_marker(last) if last is not None else None


def _from_marker(match: re.Match[str]) -> Locator:
    speaker = match.group("a") or match.group("b")
    if speaker and speaker.startswith("(") and speaker.endswith(")") and speaker[1:2].isdigit():
        speaker = speaker[1:-1]
    return Locator(speaker=speaker or None, time=match.group("time"))


def _crumb(found: Locator | None) -> str:
    if found is None:
        return ""
    if found.page is not None:
        return f"p. {found.page}"
    return marker(found.time, found.speaker).strip()


def _from_crumb(media_type: str, breadcrumb: Sequence[str]) -> Locator | None:
    if not breadcrumb or not is_located(media_type):
        return None
    last = breadcrumb[-1]
    if media_type in PAGED_MEDIA_TYPES:
        match = _PAGE_CRUMB.match(last)
        return Locator(page=int(match.group(1))) if match else None
    found = _MARKER.match(f"{last} ")
    return _from_marker(found) if found and found.end() == len(last) + 1 else None
