"""Metrics of global questions (issue 12): theme recall, document recall across citations, and the check that
a caller's themes rest on nothing that caller cannot read.

A gold theme is a short label with the documents that support it (`gold_themes` in a question file). An
answer covers a gold theme when it cites at least one of those documents: judged by supporting documents,
not by wording, so an extractive answer and a model's are scored alike. For a caller who cannot read every
document, the gold is what that caller could know: themes with at least one readable supporting document.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from kgrag_core.errors import ErrorCode, KgragError


@dataclass(frozen=True, slots=True)
class GoldTheme:
    theme: str
    docs: tuple[str, ...]


def parse_gold_themes(lines: Iterable[str]) -> dict[str, tuple[GoldTheme, ...]]:
    """Question id -> its gold themes, from a question file's `gold_themes` (questions without them left out)."""
    out: dict[str, tuple[GoldTheme, ...]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        raw = json.loads(line)
        themes = raw.get("gold_themes")
        if themes is None:
            continue
        if not isinstance(themes, list) or not all(isinstance(t, dict) and t.get("docs") for t in themes):
            raise KgragError(ErrorCode.MISSING_FIELD, f"line {number}: gold_themes must list {{theme, docs}} objects")
        out[str(raw["id"])] = tuple(GoldTheme(str(t["theme"]), tuple(str(d) for d in t["docs"])) for t in themes)
    return out


def visible_themes(themes: Sequence[GoldTheme], readable_docs: Collection[str]) -> tuple[GoldTheme, ...]:
    """The gold as a caller could know it: each theme's readable documents; a theme with none is dropped."""
    out = []
    for theme in themes:
        docs = tuple(d for d in theme.docs if d in readable_docs)
        if docs:
            out.append(GoldTheme(theme.theme, docs))
    return tuple(out)


def theme_recall(themes: Sequence[GoldTheme], cited_docs: Collection[str]) -> float:
    """Share of gold themes at least one of whose supporting documents the answer cites (0 with no gold)."""
    if not themes:
        return 0.0
    cited = set(cited_docs)
    return sum(bool(cited & set(t.docs)) for t in themes) / len(themes)


def document_recall(themes: Sequence[GoldTheme], cited_docs: Collection[str]) -> float:
    """Share of all the gold themes' supporting documents the answer cites."""
    gold = {d for t in themes for d in t.docs}
    return len(gold & set(cited_docs)) / len(gold) if gold else 0.0


def unreadable_themes(answer_theme_docs: Sequence[Collection[str]], readable_docs: Collection[str]) -> int:
    """How many of an answer's themes rest only on documents the caller cannot read (must be 0)."""
    readable = set(readable_docs)
    return sum(1 for docs in answer_theme_docs if docs and not set(docs) & readable)
