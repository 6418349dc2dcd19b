"""The GLOBAL route: map-reduce over the caller's views of the communities a question is about.

Choose: score each candidate community's visible text (title, member names, key sentences) against the
question and keep the best few. Map: each chosen community contributes its key sentences that bear on the
question, with their citations. Reduce: communities that cite the same sentence are one theme; themes are
ranked, their citations renumbered once for the whole answer. Everything is read through `view_of` (the
caller's view, ADR 0009), so nothing restricted can choose, rank or fill a theme. Bounded in communities
read and in time; what was skipped is reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from kgrag_core.answering.model import Answer, AnswerMode, AnswerSentence, Citation
from kgrag_core.communities.model import Community
from kgrag_core.communities.view import CommunityPoint, CommunityView
from kgrag_core.text_terms import content_terms

# (question, texts) -> one score per text, higher is closer (an embedding's cosine, or `lexical_relevance`).
Relevance = Callable[[str, Sequence[str]], Sequence[float]]

GLOBAL_NOTICE = (
    "Themes across your documents, each from a group of related entities (a community) and quoted as written."
)
NO_THEMES = "The documents I can see have no recurring themes on this."


@dataclass(frozen=True, slots=True)
class GlobalSettings:
    max_communities: int = 40  # candidate communities whose view is read, per question
    map_communities: int = 8  # of those, the most relevant ones mapped to points
    points_per_theme: int = 3
    max_themes: int = 6
    time_budget_s: float = 2.0  # reading views stops here; the rest is reported as skipped


@dataclass(frozen=True, slots=True)
class ThemePoint:
    text: str
    citation_ids: tuple[int, ...]

    def as_dict(self) -> dict[str, object]:
        return {"text": self.text, "citations": list(self.citation_ids)}


@dataclass(frozen=True, slots=True)
class Theme:
    title: str
    points: tuple[ThemePoint, ...]
    community_ids: tuple[str, ...]
    doc_ids: tuple[str, ...]
    score: float

    def as_dict(self) -> dict[str, object]:
        return {
            "title": self.title,
            "points": [p.as_dict() for p in self.points],
            "community_ids": list(self.community_ids),
            "doc_ids": list(self.doc_ids),
        }


@dataclass(frozen=True, slots=True)
class GlobalResult:
    question: str
    themes: tuple[Theme, ...]
    citations: tuple[Citation, ...]
    communities_used: tuple[str, ...]  # the communities behind the themes, in theme order
    communities_read: int  # candidate views read (visible or not)
    skipped: dict[str, int] = field(default_factory=dict)  # over_limit, time_budget, themes

    def as_dict(self) -> dict[str, object]:
        return {
            "themes": [t.as_dict() for t in self.themes],
            "communities_used": list(self.communities_used),
            "communities_read": self.communities_read,
            "skipped": dict(self.skipped),
        }

    def answer(self) -> Answer:
        """The themes as an answer: each point a sentence citing its quotes (what verification checks)."""
        sentences = tuple(AnswerSentence(p.text, p.citation_ids) for t in self.themes for p in t.points)
        if not sentences:
            return Answer(self.question, AnswerMode.ABSTAINED, (), (), NO_THEMES, "LOW")
        confidence = "MEDIUM" if len(self.themes) > 1 else "LOW"
        chunk_ids = tuple(dict.fromkeys(c.chunk_id for c in self.citations))
        return Answer(
            self.question,
            AnswerMode.EXTRACTIVE,
            sentences,
            self.citations,
            GLOBAL_NOTICE,
            confidence,
            evidence_chunk_ids=chunk_ids,
        )


def lexical_relevance(question: str, texts: Sequence[str]) -> list[float]:
    """Share of the question's content terms each text holds (the relevance without an embedder)."""
    asked = set(content_terms(question))
    if not asked:
        return [0.0 for _ in texts]
    return [len(asked & set(content_terms(t))) / len(asked) for t in texts]


def global_themes(
    question: str,
    candidates: Sequence[Community],
    view_of: Callable[[Community], CommunityView | None],
    relevance: Relevance = lexical_relevance,
    settings: GlobalSettings | None = None,
    clock: Callable[[], float] = time.perf_counter,
    prior: Callable[[CommunityView], float] | None = None,
) -> GlobalResult:
    """Ranked, deduplicated, cited themes for a corpus-wide question. `candidates` must come in an order
    that depends on nothing the caller cannot see (e.g. by community id); `prior` adds to a view's score
    what else the caller's own search says of it (e.g. how many of its documents hybrid search returned)."""
    cfg = settings or GlobalSettings()
    skipped: dict[str, int] = {}
    pool = list(candidates[: cfg.max_communities])
    if len(candidates) > len(pool):
        skipped["over_limit"] = len(candidates) - len(pool)
    started = clock()
    views: list[CommunityView] = []
    read = 0
    for community in pool:
        if clock() - started > cfg.time_budget_s:
            skipped["time_budget"] = len(pool) - read
            break
        read += 1
        view = view_of(community)
        if view is not None:
            views.append(view)
    if not views:
        return GlobalResult(question, (), (), (), read, skipped)
    scores = list(relevance(question, [v.text() for v in views]))
    if prior is not None:
        scores = [s + prior(v) for s, v in zip(scores, views, strict=True)]
    ranked = sorted(zip(scores, views, strict=True), key=lambda sv: (-sv[0], sv[1].community_id))
    chosen = [(s, v) for s, v in ranked[: cfg.map_communities] if s > 0]
    drafts = [d for d in (_map(question, s, v, cfg) for s, v in chosen) if d is not None]
    themes, citations = _reduce(drafts)
    if len(themes) > cfg.max_themes:
        skipped["themes"] = len(themes) - cfg.max_themes
        themes = themes[: cfg.max_themes]
        themes, citations = _renumber(themes, citations)
    used = tuple(dict.fromkeys(c for t in themes for c in t.community_ids))
    return GlobalResult(question, tuple(themes), tuple(citations), used, read, skipped)


@dataclass(frozen=True, slots=True)
class _Draft:
    view: CommunityView
    points: tuple[CommunityPoint, ...]
    score: float


def _map(question: str, score: float, view: CommunityView, cfg: GlobalSettings) -> _Draft | None:
    """The community's key sentences that bear on the question (its strongest one if none names a term)."""
    fit = lexical_relevance(question, [p.text for p in view.points])
    order = sorted(range(len(view.points)), key=lambda i: (-fit[i], -view.points[i].score, i))
    points = tuple(view.points[i] for i in order[: cfg.points_per_theme])
    if not points:
        return None
    return _Draft(view, points, score + sum(fit[i] for i in order[: cfg.points_per_theme]) / len(points))


def _reduce(drafts: Sequence[_Draft]) -> tuple[list[Theme], list[Citation]]:
    """Drafts citing one sentence merge into one theme (the stronger one's title); citations numbered once."""
    groups: list[list[_Draft]] = []
    spans: list[set[tuple[str, int, int]]] = []
    for draft in sorted(drafts, key=lambda d: (-d.score, d.view.community_id)):
        mine = {_span(draft.view, p) for p in draft.points}
        home = next((i for i, s in enumerate(spans) if s & mine), None)
        if home is None:
            groups.append([draft])
            spans.append(mine)
        else:
            groups[home].append(draft)
            spans[home] |= mine
    numbering: dict[tuple[str, int, int], Citation] = {}
    themes: list[Theme] = []
    for group in groups:
        points: list[ThemePoint] = []
        seen: set[tuple[str, int, int]] = set()
        for draft in group:
            for point in draft.points:
                key = _span(draft.view, point)
                if key in seen:
                    continue
                seen.add(key)
                source = _citation(draft.view, point)
                cited = numbering.setdefault(key, replace(source, id=len(numbering) + 1))
                points.append(ThemePoint(point.text, (cited.id,)))
        docs = tuple(dict.fromkeys(numbering[_span(d.view, p)].doc_id for d in group for p in d.points))
        ids = tuple(d.view.community_id for d in group)
        themes.append(Theme(group[0].view.title, tuple(points), ids, docs, group[0].score))
    return themes, list(numbering.values())


def _renumber(themes: Sequence[Theme], citations: Sequence[Citation]) -> tuple[list[Theme], list[Citation]]:
    """After themes were cut: only the citations they still use, numbered 1.. in order."""
    by_id = {c.id: c for c in citations}
    kept: dict[int, Citation] = {}
    out: list[Theme] = []
    for theme in themes:
        points = []
        for point in theme.points:
            ids = []
            for old in point.citation_ids:
                new = kept.setdefault(old, replace(by_id[old], id=len(kept) + 1))
                ids.append(new.id)
            points.append(ThemePoint(point.text, tuple(ids)))
        out.append(replace(theme, points=tuple(points)))
    return out, list(kept.values())


def _citation(view: CommunityView, point: CommunityPoint) -> Citation:
    return next(c for c in view.citations if c.id == point.citation_id)


def _span(view: CommunityView, point: CommunityPoint) -> tuple[str, int, int]:
    c = _citation(view, point)
    return (c.chunk_id, c.start_byte, c.end_byte)
