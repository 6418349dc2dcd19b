"""Sentence segmentation with exact offsets, so a cited sentence maps back to document bytes."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) before whitespace, or at a
# line break: list items, table rows and headers are units of their own.
_BOUNDARY = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+|\n+")
_MARKUP = re.compile(r"^(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*|\|)")


@dataclass(frozen=True, slots=True)
class SentenceSpan:
    text: str
    start_byte: int  # relative to the text it was cut from
    end_byte: int


def split_sentences(text: str) -> list[SentenceSpan]:
    out: list[SentenceSpan] = []
    pos = 0
    for match in _BOUNDARY.finditer(text):
        _append(text, pos, match.start(), out)
        pos = match.end()
    _append(text, pos, len(text), out)
    return out


def _append(text: str, start: int, end: int, out: list[SentenceSpan]) -> None:
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return
    lead = len(piece) - len(piece.lstrip())
    begin = start + lead
    finish = begin + len(stripped)
    markup = _MARKUP.match(stripped)
    if markup and len(stripped) > markup.end():
        begin += markup.end()
        stripped = text[begin:finish]
    start_byte = len(text[:begin].encode("utf-8"))
    end_byte = start_byte + len(stripped.encode("utf-8"))
    out.append(SentenceSpan(stripped, start_byte, end_byte))
