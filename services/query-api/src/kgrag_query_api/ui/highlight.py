"""A document's text cut around a cited span. Spans are byte offsets of the UTF-8 encoding, so the cut is
made on the bytes: slicing the `str` would land elsewhere as soon as the text has a non-ASCII character."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Highlighted:
    before: str
    cited: str
    after: str


def highlight(text: str, start: int | None, end: int | None) -> Highlighted:
    """The text in three parts; no span (or one outside the text) highlights nothing."""
    data = text.encode("utf-8")
    if start is None or end is None or not 0 <= start < end <= len(data):
        return Highlighted(text, "", "")
    # errors="replace": a span that cuts a character in two shows the replacement mark, never fails
    return Highlighted(
        data[:start].decode("utf-8", errors="replace"),
        data[start:end].decode("utf-8", errors="replace"),
        data[end:].decode("utf-8", errors="replace"),
    )
