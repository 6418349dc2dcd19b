"""The GLOBAL route: map-reduce over the caller's views of the communities a question is about.

Choose: score each candidate community's visible text (title, member names, key sentences) against the
question and keep the best few. Map: each chosen community contributes its key sentences that bear on the
question, with their citations. Reduce: communities that cite the same sentence are one theme; themes are
ranked, their citations renumbered once for the whole answer. Everything is read through `view_of` (the
caller's view, ADR 0009), so nothing restricted can choose, rank or fill a theme. Bounded in communities
read and in time; what was skipped is reported.

Fused with the caller's hybrid answer (`with_passages`): every passage that answer cites either supports a
community theme of the same document or becomes a theme of its own, and themes are ordered by reciprocal
rank fusion of the community ranking and the hybrid ranking of their documents. The GLOBAL answer then cites
every document the hybrid answer cites, so by construction its theme and document recall are never below
hybrid's; the passages are the caller's own search, so they too rest only on what the caller may read.
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
    rrf_k: int = 60  # reciprocal rank fusion of community themes and hybrid passages: 1 / (k + rank)


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
    # Points quoted from the caller's hybrid answer (`with_passages`); a theme with no community behind it
    # is made of them alone.
    passages: int = 0
    # A community behind it changed since it was built (its refresh is pending): the answer says so.
    stale: bool = False

    def as_dict(self) -> dict[str, object]:
        return {
            "title": self.title,
            "points": [p.as_dict() for p in self.points],
            "community_ids": list(self.community_ids),
            "doc_ids": list(self.doc_ids),
            "source": "communities" if self.community_ids else "passages",
            "stale": self.stale,
        }


@dataclass(frozen=True, slots=True)
class GlobalResult:
    question: str
    themes: tuple[Theme, ...]
    citations: tuple[Citation, ...]
    communities_used: tuple[str, ...]  # the communities behind the themes, in theme order
    communities_read: int  # candidate views read (visible or not)
    skipped: dict[str, int] = field(default_factory=dict)  # over_limit, time_budget, themes
    passages: int = 0  # points quoted from the caller's hybrid answer (`with_passages`)
    # With a chat model: how the mapped communities were summarised ("abstractive", or the reason their
    # extractive sentences stood in: a model failure, no supported sentence, a stale community).
    summaries: dict[str, int] = field(default_factory=dict)
    # A model failure among them (a fallback reason): the answer carries it, so it is not cached.
    fallback: str | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "themes": [t.as_dict() for t in self.themes],
            "communities_used": list(self.communities_used),
            "communities_read": self.communities_read,
            "skipped": dict(self.skipped),
            "passages": self.passages,
        }
        if self.summaries:
            out["summaries"] = dict(self.summaries)
        return out

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
            fallback=self.fallback,
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
    summarise: Callable[[CommunityView], CommunityView] | None = None,
) -> GlobalResult:
    """Ranked, deduplicated, cited themes for a corpus-wide question. `candidates` must come in an order
    that depends on nothing the caller cannot see (e.g. by community id); `prior` adds to a view's score
    what else the caller's own search says of it (e.g. how many of its documents hybrid search returned);
    `summarise` turns each chosen view into the one its points are mapped from (with a chat model: its
    verified abstractive summary), after choosing, so only the communities mapped cost a model call."""
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
    if summarise is not None:
        chosen = [(s, summarise(v)) for s, v in chosen]
    drafts = [d for d in (_map(question, s, v, cfg) for s, v in chosen) if d is not None]
    themes, citations = _reduce(drafts)
    if len(themes) > cfg.max_themes:
        skipped["themes"] = len(themes) - cfg.max_themes
        themes = themes[: cfg.max_themes]
        themes, citations = _renumber(themes, citations)
    used = tuple(dict.fromkeys(c for t in themes for c in t.community_ids))
    return GlobalResult(question, tuple(themes), tuple(citations), used, read, skipped)


def with_passages(
    result: GlobalResult, passages: Sequence[Citation], ranked_docs: Sequence[str], rrf_k: int = 60
) -> GlobalResult:
    """The themes fused with the caller's hybrid answer: `passages` are that answer's citations (quotes of the
    caller's own search), `ranked_docs` the documents in the hybrid ranking. A passage already quoted is
    skipped; one from a theme's document supports that theme; the rest of a document's passages make a theme
    titled by it. Themes are ordered by RRF of their community rank and their best document's hybrid rank
    (documents the ranking lacks come after it, in citation order); citations are renumbered 1.. in order."""
    if not result.themes:
        return result
    order = {d: i for i, d in enumerate(dict.fromkeys([*ranked_docs, *(c.doc_id for c in passages)]))}
    spans = {(c.chunk_id, c.start_byte, c.end_byte) for c in result.citations}
    citations = list(result.citations)
    extra: dict[int, list[ThemePoint]] = {}
    own: dict[str, list[ThemePoint]] = {}
    titles: dict[str, str] = {}
    for passage in passages:
        key = (passage.chunk_id, passage.start_byte, passage.end_byte)
        if key in spans or not passage.quote.strip():
            continue
        spans.add(key)
        cited = replace(passage, id=len(citations) + 1)
        citations.append(cited)
        point = ThemePoint(passage.quote, (cited.id,))
        home = next((i for i, t in enumerate(result.themes) if passage.doc_id in t.doc_ids), None)
        if home is None:
            own.setdefault(passage.doc_id, []).append(point)
            titles.setdefault(passage.doc_id, passage.title or passage.doc_id)
        else:
            extra.setdefault(home, []).append(point)

    def doc_part(docs: Sequence[str]) -> float:
        ranks = [order[d] for d in docs if d in order]
        return 1 / (rrf_k + 1 + min(ranks)) if ranks else 0.0

    scored: list[tuple[float, int, Theme]] = []
    for rank, theme in enumerate(result.themes):
        added = extra.get(rank, [])
        fused = replace(theme, points=(*theme.points, *added), passages=len(added))
        scored.append((1 / (rrf_k + 1 + rank) + doc_part(theme.doc_ids), rank, fused))
    for at, (doc_id, points) in enumerate(own.items(), start=len(result.themes)):
        theme = Theme(titles[doc_id], tuple(points), (), (doc_id,), 0.0, passages=len(points))
        scored.append((doc_part((doc_id,)), at, theme))
    ranked = [replace(t, score=round(s, 6)) for s, _, t in sorted(scored, key=lambda x: (-x[0], x[1]))]
    themes, renumbered = _renumber(ranked, citations)
    quoted = sum(t.passages for t in themes)
    return replace(result, themes=tuple(themes), citations=tuple(renumbered), passages=quoted)


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
        mine = {_span(c) for p in draft.points for c in _citations(draft.view, p)}
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
        seen: set[tuple[tuple[str, int, int], ...]] = set()
        for draft in group:
            for point in draft.points:
                sources = _citations(draft.view, point)
                key = tuple(_span(c) for c in sources)
                if key in seen:
                    continue
                seen.add(key)
                cited = tuple(numbering.setdefault(_span(c), replace(c, id=len(numbering) + 1)).id for c in sources)
                points.append(ThemePoint(point.text, cited))
        docs = tuple(
            dict.fromkeys(numbering[_span(c)].doc_id for d in group for p in d.points for c in _citations(d.view, p))
        )
        ids = tuple(d.view.community_id for d in group)
        stale = any(d.view.stale for d in group)
        themes.append(Theme(group[0].view.title, tuple(points), ids, docs, group[0].score, stale=stale))
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


def _citations(view: CommunityView, point: CommunityPoint) -> list[Citation]:
    by_id = {c.id: c for c in view.citations}
    return [by_id[i] for i in point.cited]


def _span(c: Citation) -> tuple[str, int, int]:
    return (c.chunk_id, c.start_byte, c.end_byte)
