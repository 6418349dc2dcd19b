"""Bounded expansion from the linked entities: a scored beam search, never a breadth-first flood.

Work is bounded by beam width x depth, not degree^depth (seed 003, 6.3): each expanded entity keeps its
best `fan_out` edges, each hop keeps its best `beam_width` new entities, and a wall-clock budget stops the
search with what it has. A hub may be where the search starts (it was named in the question), but a hub
reached on the way is never expanded: one hop through "the company" reaches half the graph. Every cut is
recorded in `Traversal.truncated`, so an evaluation can see whether the bounds cost answers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from types import MappingProxyType

from kgrag_core.extraction.model import Modality, Polarity
from kgrag_core.graph.model import Edge, EntityRef, EntitySummary, Traversal, TraversalStep, hub_not_passed
from kgrag_core.graph.ports import GraphReader
from kgrag_core.graph_retrieval.router import QuestionKind

# Question cue (a regex over the lowercased question) -> the relation types it asks about.
DEFAULT_RELATION_CUES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        r"\bown(?:s|ed|er|ers|ing|ership)?\b": ("OWNS",),
        r"\b(?:lead|leads|led|leader|leading|head|heads|manager|manages|managed|runs|run by)\b": ("LEADS",),
        r"\bon[- ]call\b": ("ON_CALL_FOR",),
        r"\b(?:customer|customers|client|clients|account)\b": ("SERVED_AT", "CUSTOMER_OF"),
        r"\b(?:vendor|vendors|supplier|suppliers|makes|made|contract)\b": ("VENDOR_OF",),
        r"\b(?:team|teams|member|members)\b": ("MEMBER_OF",),
        r"\b(?:works at|based|office|warehouse|site|stored|stores|located)\b": ("WORKS_AT", "LOCATED_IN", "SERVED_AT"),
        r"\b(?:reports to|boss|manager)\b": ("REPORTS_TO",),
        r"\b(?:uses|use|using|built on|runs on|database)\b": ("USES", "DEPENDS_ON"),
        r"\b(?:depends|dependency|dependencies)\b": ("DEPENDS_ON",),
        r"\b(?:migrate|migrated|migration|move to|moved to)\b": ("MIGRATES_TO",),
        r"\b(?:incident|incidents|outage|outages|affected|caused|blocked|dropped|behind|involved|failure)\b": (
            "AFFECTED",
        ),
        r"\b(?:ticket|tickets|complaint|complaints|reported|support)\b": ("REPORTED", "ABOUT"),
    }
)

DEFAULT_DEPTH: Mapping[QuestionKind, int] = MappingProxyType(
    {
        QuestionKind.LOOKUP: 0,
        QuestionKind.ENTITY: 1,
        QuestionKind.TEMPORAL: 1,
        QuestionKind.MODALITY: 1,
        QuestionKind.MULTI_HOP: 3,
        QuestionKind.GLOBAL: 1,
    }
)

# An edge's own standing: confidence, support and recency. How well it fits the question multiplies that:
# added in (0.35 of the score) it let a well-supported edge of a type nobody asked about outrank the hop the
# question names, and on the bundled multi-hop questions the beam filled with "X REPORTED ticket" edges.
_W_CONFIDENCE, _W_EVIDENCE, _W_RECENCY = 0.45, 0.3, 0.25
_RELEVANT, _UNRELATED, _NO_CUE = 1.0, 0.25, 0.6
# Kept but ranked lower: a negated statement or a plan is evidence about the question, not the fact.
_NEGATED_FACTOR = 0.5
_MODALITY_FACTOR: Mapping[Modality, float] = MappingProxyType(
    {
        Modality.FACT: 1.0,
        Modality.REPORTED: 0.85,
        Modality.PLAN: 0.6,
        Modality.OPINION: 0.5,
        Modality.HYPOTHETICAL: 0.4,
        Modality.AI_SUGGESTION: 0.4,
    }
)
_RECENCY_HALF_LIFE_DAYS = 365.0
_ABOUT_HALF_LIFE_DAYS = 90.0


@dataclass(frozen=True, slots=True)
class ExpansionSettings:
    depth_by_kind: Mapping[QuestionKind, int] = field(default_factory=lambda: dict(DEFAULT_DEPTH))
    fan_out: int = 8  # edges kept per expanded entity
    hub_fan_out: int = 4  # edges kept from a hub seed, along relevant relation types when the question names any
    fetch_per_entity: int = 32  # edges asked of the graph per entity before rescoring against the question
    beam_width: int = 6  # new entities carried to the next hop
    max_seeds: int = 6
    time_budget_s: float = 0.25
    relation_cues: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_RELATION_CUES))


@dataclass(frozen=True, slots=True)
class RelationRelevance:
    relevant: frozenset[str]  # relation types the question's wording asks about (empty: no cue)

    def of(self, relation: str) -> float:
        if not self.relevant:
            return _NO_CUE
        return _RELEVANT if relation in self.relevant else _UNRELATED


def relation_relevance(question: str, cues: Mapping[str, Sequence[str]] = DEFAULT_RELATION_CUES) -> RelationRelevance:
    text = question.casefold()
    found: set[str] = set()
    for pattern, relations in cues.items():
        if re.search(pattern, text):
            found.update(relations)
    return RelationRelevance(frozenset(found))


def edge_labels(edge: Edge) -> tuple[str, ...]:
    """Why an edge is not a plain fact: "negated", or its modality ("plan", "reported", ...)."""
    labels: list[str] = []
    if edge.polarity is Polarity.NEGATIVE:
        labels.append("negated")
    if edge.modality is not Modality.FACT:
        labels.append(edge.modality.value)
    return tuple(labels)


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")  # fmt: skip
_QUESTION_DATE = re.compile(r"\b(?:(\d{1,2})\s+)?(" + "|".join(_MONTHS) + r")\s+((?:19|20)\d{2})\b")


def question_date(question: str) -> date | None:
    """The day a question is about when it names one ("the October 2023 outage", "on 4 June 2024")."""
    found = _QUESTION_DATE.search(question.casefold())
    if found is None:
        return None
    day, month, year = found.groups()
    try:
        return date(int(year), _MONTHS.index(month) + 1, int(day) if day else 1)
    except ValueError:
        return None


def edge_score(edge: Edge, relevance: RelationRelevance, newest: date | None, *, about: date | None = None) -> float:
    """0..1: confidence, evidence count and timeliness, times relation fit. Timeliness is recency (relative
    to the newest edge seen), or, for a question about a given day, closeness of the evidence to that day:
    "the October 2023 outage" must not be read as the latest outage."""
    evidence = 1.0 - 1.0 / (1.0 + edge.evidence_count)  # 1 chunk 0.5, 3 chunks 0.75: more support, less gain
    if about is not None and edge.first_written is not None and edge.latest_written is not None:
        nearest = min(abs((edge.first_written - about).days), abs((edge.latest_written - about).days))
        recency = math.pow(0.5, nearest / _ABOUT_HALF_LIFE_DAYS)
    elif edge.latest_written is None or newest is None:
        recency = 0.5
    else:
        age = max(0, (newest - edge.latest_written).days)
        recency = math.pow(0.5, age / _RECENCY_HALF_LIFE_DAYS)
    confidence = min(1.0, max(0.0, edge.confidence))
    score = (_W_CONFIDENCE * confidence + _W_EVIDENCE * evidence + _W_RECENCY * recency) * relevance.of(edge.relation)
    if edge.polarity is Polarity.NEGATIVE:
        score *= _NEGATED_FACTOR
    return score * _MODALITY_FACTOR.get(edge.modality, 0.5)


@dataclass(frozen=True, slots=True)
class _Node:
    entity: EntityRef
    score: float
    depth: int
    is_hub: bool


def expand(
    seeds: Sequence[tuple[EntitySummary, float]],
    graph: GraphReader,
    acl_class_ids: Sequence[str] | None,
    *,
    question: str,
    kind: QuestionKind,
    settings: ExpansionSettings | None = None,
    clock: Callable[[], float],
) -> Traversal:
    """Beam search from `seeds` (entity, link score), best first; path score = link score x edge scores."""
    cfg = settings or ExpansionSettings()
    started = clock()
    traversal = Traversal(seeds=[s.entity for s, _ in seeds[: cfg.max_seeds]])
    if len(seeds) > cfg.max_seeds:
        traversal.truncated.append(f"seeds: kept {cfg.max_seeds} of {len(seeds)} linked entities")
    max_depth = cfg.depth_by_kind.get(kind, 1)
    relevance = relation_relevance(question, cfg.relation_cues)
    # A temporal question wants the latest value even when it names a starting point ("since early 2023").
    about = None if kind is QuestionKind.TEMPORAL else question_date(question)
    frontier = [_Node(s.entity, score, 0, s.is_hub) for s, score in seeds[: cfg.max_seeds]]
    visited = {n.entity.entity_id for n in frontier}
    seen_edges: set[str] = set()

    for depth in range(1, max_depth + 1):
        if not frontier:
            break
        candidates: list[tuple[float, Edge, EntityRef]] = []
        # Each frontier entity's best unvisited neighbour gets a place in the beam before the rest compete on
        # score: a weakly linked seed (an entity only a passage named) may hold the chain's next hop, and
        # scores scaled by the stronger seeds' links would always crowd it out.
        reserved: list[str] = []
        for node in frontier:
            if clock() - started > cfg.time_budget_s:
                elapsed_ms = round((clock() - started) * 1000)
                traversal.truncated.append(f"time budget: stopped at depth {depth} after {elapsed_ms} ms")
                return traversal
            found = _expand_node(node, graph, acl_class_ids, relevance, about, seen_edges, cfg, traversal)
            best = next((o.entity_id for _, _, o in found if o.entity_id not in visited), None)
            if best is not None and best not in reserved and len(reserved) < cfg.beam_width:
                reserved.append(best)
            candidates.extend(found)
        candidates.sort(key=lambda c: (-c[0], c[1].relation_id))
        kept = set(reserved)
        next_frontier: list[_Node] = []
        left_out = 0
        for score, edge, other in candidates:
            if edge.relation_id in seen_edges:  # reached from both of its ends
                continue
            seen_edges.add(edge.relation_id)
            traversal.steps.append(TraversalStep(edge, depth, round(score, 6)))
            if other.entity_id in visited:
                continue
            if other.entity_id in kept or len(next_frontier) + len(kept) < cfg.beam_width:
                kept.discard(other.entity_id)
                visited.add(other.entity_id)
                next_frontier.append(_Node(other, score, depth, is_hub=False))
            else:
                left_out += 1
        if left_out and depth < max_depth:
            traversal.truncated.append(f"beam: {left_out} entities beyond width {cfg.beam_width} at depth {depth}")
        frontier = next_frontier
    return traversal


def _expand_node(
    node: _Node,
    graph: GraphReader,
    acl_class_ids: Sequence[str] | None,
    relevance: RelationRelevance,
    about: date | None,
    seen_edges: set[str],
    cfg: ExpansionSettings,
    traversal: Traversal,
) -> list[tuple[float, Edge, EntityRef]]:
    is_hub = node.is_hub
    # A reached entity is a hub only by the edges this caller sees (docs/security.md, section 2); the reader
    # counts them only for labelled hubs, and only up to the threshold (a full `entity()` count took 80-100
    # ms on a 5,000-edge hub at 100k entities).
    if node.depth >= 1 and graph.hubs_among([node.entity.entity_id], acl_class_ids):
        traversal.truncated.append(hub_not_passed(node.entity.name))
        return []
    # From a hub seed follow only what the question asks about, if it asks about anything (seed 003, 6.3).
    relations = sorted(relevance.relevant) if is_hub and relevance.relevant else None
    # One edge more than the cap tells whether the graph had more to give, without counting them all.
    edges = graph.neighbours(node.entity.entity_id, acl_class_ids, relations=relations, limit=cfg.fetch_per_entity + 1)
    if len(edges) > cfg.fetch_per_entity:
        traversal.truncated.append(f"fan-out: {node.entity.name} has more than {cfg.fetch_per_entity} edges")
        edges = edges[: cfg.fetch_per_entity]
    newest = max((e.latest_written for e in edges if e.latest_written is not None), default=None)
    scored = sorted(
        (
            (node.score * edge_score(e, relevance, newest, about=about), e)
            for e in edges
            if e.relation_id not in seen_edges
        ),
        key=lambda se: (-se[0], se[1].relation_id),
    )
    cap = cfg.hub_fan_out if is_hub else cfg.fan_out
    if len(scored) > cap:
        traversal.truncated.append(f"fan-out: kept {cap} of {len(scored)} edges of {node.entity.name}")
    out: list[tuple[float, Edge, EntityRef]] = []
    for score, edge in scored[:cap]:
        other = edge.object if edge.subject.entity_id == node.entity.entity_id else edge.subject
        out.append((score, edge, other))
    return out
