"""Markdown block detection over lines (a pragmatic subset of CommonMark/GFM).

Recognised: ATX and single-line setext headings, fenced code (``` and ~~~), pipe tables, lists (with
nested items, indented and lazy continuation lines), blockquotes, thematic breaks, paragraphs. Plain
text comes out as paragraphs separated by blank lines. Indented code blocks are not recognised: in
plain text an indented paragraph is far more common than code, and the only cost is that such a block
is split like prose when it is too large.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from kgrag_core.chunking.lines import Line


class BlockKind(StrEnum):
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST = "list"
    CODE = "code"
    TABLE = "table"
    QUOTE = "quote"


@dataclass(frozen=True, slots=True)
class Block:
    """Lines [first, last] of the document; `start`/`end` are the byte span of their content."""

    kind: BlockKind
    first: int
    last: int
    start: int
    end: int
    level: int = 0  # headings only: 1..6
    heading: str = ""  # headings only: the heading text without markers


_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)$")
# At least three underline characters: a lone "-- " is an e-mail signature separator, not a heading.
_SETEXT = re.compile(r" {0,3}(={3,}|-{3,})[ \t]*$")
_THEMATIC = re.compile(r" {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
_LIST_ITEM = re.compile(r" {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_QUOTE = re.compile(r" {0,3}>")
_PIPE_ROW = re.compile(r" {0,3}\|")
_TABLE_DELIMITER = re.compile(r" {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_CONTINUATION_INDENT = 2  # columns of indentation that keep a line inside a list item


def indent_width(text: str) -> int:
    """Columns of leading indentation, tabs expanding to the next multiple of 4."""
    width = 0
    for char in text:
        if char == " ":
            width += 1
        elif char == "\t":
            width += 4 - width % 4
        else:
            break
    return width


def atx_heading(text: str) -> tuple[int, str] | None:
    match = _ATX.match(text)
    if match is None:
        return None
    return len(match.group(1)), _ATX_CLOSING.sub("", match.group(2) or "").strip()


def is_list_item(text: str) -> bool:
    return _LIST_ITEM.match(text) is not None and _THEMATIC.match(text) is None


def _fence(text: str) -> tuple[str, int] | None:
    match = _FENCE_OPEN.match(text)
    if match is None:
        return None
    marker, info = match.group(1), match.group(2)
    if marker[0] == "`" and "`" in info:  # a backtick fence's info string cannot hold backticks
        return None
    return marker[0], len(marker)


def _closes_fence(text: str, char: str, length: int) -> bool:
    stripped = text.strip()
    return indent_width(text) <= 3 and len(stripped) >= length and stripped == char * len(stripped)


def _starts_block(text: str) -> bool:
    """Whether `text` starts a block that interrupts a paragraph (or a lazy continuation)."""
    return (
        atx_heading(text) is not None
        or _fence(text) is not None
        or _QUOTE.match(text) is not None
        or _THEMATIC.match(text) is not None
        or _LIST_ITEM.match(text) is not None
        or _PIPE_ROW.match(text) is not None
    )


def _is_table_start(lines: list[Line], i: int) -> bool:
    text = lines[i].text
    if _PIPE_ROW.match(text):
        return True
    # A GFM table may omit the outer pipes, but then it needs its delimiter row right below the header.
    return (
        "|" in text
        and i + 1 < len(lines)
        and "|" in lines[i + 1].text
        and _TABLE_DELIMITER.match(lines[i + 1].text) is not None
    )


def detect_blocks(lines: list[Line], begin: int = 0) -> list[Block]:
    """Blocks of `lines[begin:]` in document order. Blank lines and thematic breaks belong to none."""
    blocks: list[Block] = []
    i, n = begin, len(lines)

    def add(kind: BlockKind, first: int, last: int, level: int = 0, heading: str = "") -> None:
        blocks.append(Block(kind, first, last, lines[first].start, lines[last].end, level, heading))

    while i < n:
        text = lines[i].text
        if lines[i].blank or _THEMATIC.match(text):
            i += 1
            continue
        atx = atx_heading(text)
        if atx is not None:
            add(BlockKind.HEADING, i, i, atx[0], atx[1])
            i += 1
            continue
        fence = _fence(text)
        if fence is not None:
            j = i + 1
            while j < n and not _closes_fence(lines[j].text, *fence):
                j += 1
            last = min(j, n - 1)  # an unclosed fence runs to the end of the document (as in CommonMark)
            add(BlockKind.CODE, i, last)
            i = last + 1
            continue
        if _is_table_start(lines, i):
            leading_pipe = _PIPE_ROW.match(text) is not None
            j = i + 1
            while (
                j < n
                and not lines[j].blank
                and (_PIPE_ROW.match(lines[j].text) if leading_pipe else "|" in lines[j].text)
            ):
                j += 1
            add(BlockKind.TABLE, i, j - 1)
            i = j
            continue
        if _QUOTE.match(text):
            j = i + 1
            while j < n and not lines[j].blank and (_QUOTE.match(lines[j].text) or not _starts_block(lines[j].text)):
                j += 1
            add(BlockKind.QUOTE, i, j - 1)
            i = j
            continue
        if is_list_item(text):
            j = _list_end(lines, i)
            add(BlockKind.LIST, i, j - 1)
            i = j
            continue
        # A paragraph; a one-line paragraph underlined with === or --- is a setext heading. Longer
        # paragraphs are not promoted: in plain text that would turn a whole paragraph into a heading.
        if i + 1 < n and not lines[i + 1].blank and (setext := _SETEXT.match(lines[i + 1].text)):
            add(BlockKind.HEADING, i, i + 1, 1 if setext.group(1)[0] == "=" else 2, text.strip())
            i += 2
            continue
        j = i + 1
        while j < n and not lines[j].blank and not _starts_block(lines[j].text):
            j += 1
        add(BlockKind.PARAGRAPH, i, j - 1)
        i = j
    return blocks


def _list_end(lines: list[Line], i: int) -> int:
    """Index just past the list that starts with the item on line `i`."""
    n = len(lines)
    j = i + 1
    while j < n:
        line = lines[j]
        if line.blank:
            # A blank line stays inside the list only if the list goes on after it.
            k = j + 1
            while k < n and lines[k].blank:
                k += 1
            if k < n and (is_list_item(lines[k].text) or indent_width(lines[k].text) >= _CONTINUATION_INDENT):
                j = k
                continue
            break
        if (
            is_list_item(line.text)
            or indent_width(line.text) >= _CONTINUATION_INDENT
            or not _starts_block(line.text)  # a lazy continuation of the item's paragraph
        ):
            j += 1
            continue
        break
    return j
