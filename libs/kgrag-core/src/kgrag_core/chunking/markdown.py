"""Structure-aware chunking of Markdown and plain text into byte spans.

Rules, in order of precedence:

1. A chunk never crosses a heading; a heading line opens the first chunk of its section.
2. Within a section, whole blocks are packed greedily while the chunk stays within `max_tokens`.
3. A block that does not fit on its own is split (see `split.py`): code at line ends, tables at row
   ends, prose at sentence ends, then at word ends; consecutive pieces of the same block overlap by
   about `overlap_tokens` (tables excepted: a repeated row would be a repeated fact).

Offsets are UTF-8 byte offsets into `text.encode("utf-8")`, so for every span
`text.encode()[span.start_byte:span.end_byte].decode()` is the chunk text; spans are trimmed of
surrounding whitespace. YAML front matter is never part of a chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from kgrag_core.chunking.blocks import Block, BlockKind, detect_blocks, is_list_item
from kgrag_core.chunking.lines import Line, front_matter_lines, split_lines
from kgrag_core.chunking.split import LINE, WORD, Counter, Unit, pack_units, segment_units
from kgrag_core.chunking.tokens import estimate_tokens
from kgrag_core.documents import ChunkSpan

_KIND = {
    BlockKind.HEADING: "heading",
    BlockKind.PARAGRAPH: "paragraph",
    BlockKind.QUOTE: "paragraph",
    BlockKind.LIST: "list",
    BlockKind.CODE: "code",
    BlockKind.TABLE: "table",
}
# How full a piece must be before a stronger boundary beats a later one. Code and tables always break at
# a line or row when the window holds one; prose accepts a weaker break rather than a half-empty piece.
_MIN_FILL = {BlockKind.CODE: 0.0, BlockKind.TABLE: 0.0}
_PROSE_MIN_FILL = 0.5


@dataclass(slots=True)
class _Section:
    heading: Block | None
    breadcrumb: tuple[str, ...]
    body: list[Block] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Raw:
    start: int
    end: int
    breadcrumb: tuple[str, ...]
    kind: str


def chunk_document(
    text: str,
    *,
    title: str,
    max_tokens: int = 200,
    overlap_tokens: int = 24,
    count_tokens: Callable[[str], int] = estimate_tokens,
) -> list[ChunkSpan]:
    """Chunk `text` (Markdown or plain text) into spans in document order; deterministic.

    Raises ValueError for a non-positive `max_tokens` or an `overlap_tokens` outside [0, max_tokens).
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    if not 0 <= overlap_tokens < max_tokens:
        raise ValueError(f"overlap_tokens must be in [0, {max_tokens}), got {overlap_tokens}")
    data = text.encode("utf-8")
    lines = split_lines(data)
    blocks = detect_blocks(lines, front_matter_lines(lines))
    packer = _Packer(data, lines, max_tokens, overlap_tokens, count_tokens)
    spans: list[ChunkSpan] = []
    for section in _sections(blocks, title):
        for raw in packer.section(section):
            trimmed = _trim(data, raw.start, raw.end)
            if trimmed is not None:
                spans.append(ChunkSpan(len(spans), trimmed[0], trimmed[1], raw.breadcrumb, raw.kind))
    return spans


def _sections(blocks: list[Block], title: str) -> Iterator[_Section]:
    """Split blocks at headings and attach each section's heading path."""
    base = (title.strip(),) if title.strip() else ()
    title_key = title.strip().casefold()
    path: list[tuple[int, str]] = []  # (level, text as shown; "" = hidden)
    current = _Section(None, base)
    first_heading = True
    for block in blocks:
        if block.kind is not BlockKind.HEADING:
            current.body.append(block)
            continue
        if current.heading is not None or current.body:
            yield current
        shown = " ".join(block.heading.split())
        # "# Atlas" at the top of a document titled "Atlas" would only repeat the title. It stays on the
        # path (hidden) so that its subsections still nest under it and a later H1 replaces it.
        if first_heading and shown.casefold() == title_key:
            shown = ""
        first_heading = False
        path = [entry for entry in path if entry[0] < block.level]
        path.append((block.level, shown))
        current = _Section(block, base + tuple(text for _, text in path if text))
    if current.heading is not None or current.body:
        yield current


class _Packer:
    def __init__(self, data: bytes, lines: list[Line], max_tokens: int, overlap_tokens: int, count: Counter) -> None:
        self._data = data
        self._lines = lines
        self._max = max_tokens
        self._overlap = overlap_tokens
        self._count = count

    def _measure(self, start: int, end: int) -> int:
        return self._count(self._data[start:end].decode("utf-8"))

    def section(self, section: _Section) -> list[_Raw]:
        blocks = ([section.heading] if section.heading is not None else []) + section.body
        crumb = section.breadcrumb
        out: list[_Raw] = []
        pending: list[Block] = []
        for block in blocks:
            if pending and self._measure(pending[0].start, block.end) <= self._max:
                pending.append(block)
                continue
            if self._measure(block.start, block.end) <= self._max:
                out.extend(_group(pending, crumb))
                pending = [block]
                continue
            # The block must be split. A heading waiting alone goes into the first piece, so the heading
            # words are searchable together with the text they introduce.
            prefix = pending[0] if len(pending) == 1 and pending[0].kind is BlockKind.HEADING else None
            if prefix is None:
                out.extend(_group(pending, crumb))
            pending = []
            kind = _KIND[block.kind]
            out.extend(_Raw(start, end, crumb, kind) for start, end in self._split(block, prefix))
        out.extend(_group(pending, crumb))
        return out

    def _split(self, block: Block, prefix: Block | None) -> list[tuple[int, int]]:
        units: list[Unit] = []
        if prefix is not None:
            units.extend(self._units(prefix.start, block.start, LINE))
        for start, end, strength in self._segments(block):
            units.extend(self._units(start, end, strength))
        return pack_units(
            units,
            max_tokens=self._max,
            overlap_tokens=0 if block.kind is BlockKind.TABLE else self._overlap,
            min_fill=_MIN_FILL.get(block.kind, _PROSE_MIN_FILL),
            measure=self._measure,
        )

    def _units(self, start: int, end: int, strength: int) -> list[Unit]:
        return segment_units(self._data, start, end, strength, max_tokens=self._max, count=self._count)

    def _segments(self, block: Block) -> list[tuple[int, int, int]]:
        """Contiguous (start, end, strength-after) segments covering the block."""
        if block.kind not in (BlockKind.CODE, BlockKind.TABLE, BlockKind.LIST):
            return [(block.start, block.end, LINE)]
        lines = self._lines
        segments: list[tuple[int, int, int]] = []
        for index in range(block.first, block.last + 1):
            end = lines[index + 1].start if index < block.last else block.end
            strength = LINE
            if block.kind is BlockKind.LIST and index < block.last:
                following = lines[index + 1]
                # Inside a list, a new item or a line after a blank line is a strong boundary; a wrapped
                # continuation line is just a soft line break.
                if not (lines[index].blank or following.blank or _opens_item(following.text)):
                    strength = WORD
            segments.append((lines[index].start, end, strength))
        return segments


def _opens_item(text: str) -> bool:
    return is_list_item(text.lstrip())  # nested items are indented deeper than a top-level marker may be


def _group(blocks: list[Block], crumb: tuple[str, ...]) -> list[_Raw]:
    if not blocks:
        return []
    kinds = {_KIND[b.kind] for b in blocks if b.kind is not BlockKind.HEADING}
    kind = "heading" if not kinds else kinds.pop() if len(kinds) == 1 else "mixed"
    return [_Raw(blocks[0].start, blocks[-1].end, crumb, kind)]


def _trim(data: bytes, start: int, end: int) -> tuple[int, int] | None:
    """Shrink [start, end) past surrounding whitespace (Unicode-aware); None if nothing is left."""
    text = data[start:end].decode("utf-8")
    left = text.lstrip()
    if not left:
        return None
    both = left.rstrip()
    leading = len(text[: len(text) - len(left)].encode("utf-8"))
    trailing = len(left[len(both) :].encode("utf-8"))
    return start + leading, end - trailing
