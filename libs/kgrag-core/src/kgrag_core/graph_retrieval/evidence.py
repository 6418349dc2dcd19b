"""Graph evidence: short, dated lines for claims and relations, their chunks as candidates, one budget.

Seed 000 lost twice to its own graph before this shape held: lines that flooded the context pushed out
chunks that already held the answer (so lines get a capped share of one budget, never a reserved one),
and fetching earlier versions of a claim promoted exactly the outdated documents (so a superseded claim is
listed after the current one and marked, and its chunk is never a candidate).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from types import MappingProxyType
from typing import TypeVar

from kgrag_core.extraction.model import Modality, Polarity
from kgrag_core.extraction.records import ClaimRecord, ClaimStatus
from kgrag_core.graph.model import Traversal
from kgrag_core.graph_retrieval.expansion import edge_labels
from kgrag_core.graph_retrieval.router import QuestionKind
from kgrag_core.ports import TokenCounter
from kgrag_core.search import RouteHit, SearchHit
from kgrag_core.text_terms import content_terms

# Question words that ask for an attribute without naming it (stemmed like content_terms).
DEFAULT_ATTRIBUTE_CUES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "price": ("pay", "cost", "fee", "charge", "per"),
        "monthly_spend": ("bill", "spend", "cost", "paid"),
        "sla": ("availability", "uptime", "sla"),
        "capacity_pallets": ("pallet", "capacity", "position"),
        "headcount": ("headcount", "staff", "employee", "people"),
        "contract_end": ("contract", "until", "expire", "renew"),
        "response_target": ("response", "first-response", "target"),
        "role": ("role", "responsible", "job", "title", "work"),
        "email": ("email", "address", "contact"),
        "database": ("database", "db", "migrate"),
        "status": ("status", "done", "finish", "complete", "launch"),
    }
)

_STATUS_ORDER = {
    ClaimStatus.CURRENT: 0,
    ClaimStatus.CONFLICT: 1,
    ClaimStatus.NOT_A_FACT: 2,
    ClaimStatus.SUPERSEDED: 3,
}
_IRRELEVANT_ATTRIBUTE = 0.3
_CHUNKS_PER_RELATION = 3
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class GraphLine:
    text: str
    kind: str  # claim | relation
    chunk_ids: tuple[str, ...]
    score: float
    marks: tuple[str, ...] = ()  # superseded, conflict, not_a_fact, negated, plan, ...

    def as_dict(self) -> dict[str, object]:
        return {"text": self.text, "kind": self.kind, "chunk_ids": list(self.chunk_ids), "marks": list(self.marks)}


@dataclass(frozen=True, slots=True)
class GraphEvidence:
    lines: tuple[GraphLine, ...]  # in reading order: best first, a claim's current value before its older ones
    chunks: tuple[RouteHit, ...]  # the graph route: evidence chunks of the selected claims and edges, ranked


def _day(value: date | None) -> str:
    return value.isoformat() if value else "?"


def attribute_relevance(question: str, attribute: str, cues: Mapping[str, Sequence[str]]) -> float:
    asked = set(content_terms(question))
    named = set(content_terms(attribute.replace("_", " "))) | set(cues.get(attribute, ()))
    return 1.0 if asked & named else _IRRELEVANT_ATTRIBUTE


def _claim_text(claim: ClaimRecord, by_id: Mapping[str, ClaimRecord]) -> tuple[str, tuple[str, ...]]:
    parts = [claim.status.value]
    marks: list[str] = []
    if claim.status is not ClaimStatus.CURRENT:
        marks.append(claim.status.value)
    if claim.modality is not Modality.FACT:
        parts.append(claim.modality.value)
        marks.append(claim.modality.value)
    if claim.polarity is Polarity.NEGATIVE:
        parts.append("negated")
        marks.append("negated")
    if claim.superseded_by:
        newer = by_id.get(claim.superseded_by)
        parts.append(
            f"superseded by {newer.value!r} (written {_day(newer.written_at)})"
            if newer
            else f"superseded by {claim.superseded_by}"
        )
    if claim.conflicts_with:
        others = [by_id[c].value for c in claim.conflicts_with if c in by_id]
        shown = [repr(v) for v in others] if others else list(claim.conflicts_with)
        parts.append("conflicts with " + ", ".join(shown))
    if claim.valid_from or claim.valid_to:
        parts.append(f"valid {_day(claim.valid_from)} to {_day(claim.valid_to) if claim.valid_to else 'now'}")
    parts.append(f"written {_day(claim.written_at)}")
    text = f"{claim.entity_name} {claim.attribute} = {claim.value} ({'; '.join(parts)}) [{claim.chunk_id}]"
    return _one_line(text), tuple(marks)


def gather_evidence(
    traversal: Traversal,
    claims: Sequence[ClaimRecord],
    *,
    question: str,
    kind: QuestionKind,
    entity_weights: Mapping[str, float],
    attribute_cues: Mapping[str, Sequence[str]] = DEFAULT_ATTRIBUTE_CUES,
    max_chunks: int = 30,
) -> GraphEvidence:
    """Lines and candidate chunks from a traversal and the claims about the entities it reached.

    `entity_weights` is how strongly each entity is tied to the question (link score for seeds, path score
    for entities reached on the way); a claim's score is that weight times its attribute's fit.
    """
    by_id = {c.claim_id: c for c in claims}
    groups: dict[tuple[str, str], list[ClaimRecord]] = {}
    for claim in claims:
        groups.setdefault((claim.entity_id, claim.attribute), []).append(claim)

    # Each entry: (score, order within its group, line); a group's lines share its score so they stay
    # together and in status order whatever else is scored between them.
    ranked: list[tuple[float, str, int, GraphLine]] = []
    chunk_scores: dict[str, float] = {}
    for (entity_id, attribute), members in groups.items():
        weight = entity_weights.get(entity_id, 0.0)
        group_score = round(weight * attribute_relevance(question, attribute, attribute_cues), 6)
        members.sort(key=lambda c: (_STATUS_ORDER[c.status], -(c.written_at or date.min).toordinal(), c.claim_id))
        for order, claim in enumerate(members):
            text, marks = _claim_text(claim, by_id)
            ranked.append(
                (
                    group_score,
                    f"c:{entity_id}:{attribute}",
                    order,
                    GraphLine(text, "claim", (claim.chunk_id,), group_score, marks),
                )
            )
            factor = _candidate_factor(claim, kind)
            if factor > 0:
                _offer(chunk_scores, claim.chunk_id, group_score * factor)

    for step in traversal.steps:
        edge = step.edge
        labels = edge_labels(edge)
        detail = [*labels, f"confidence {edge.confidence:.2f}", f"{edge.evidence_count} evidence"]
        if edge.valid_from or edge.valid_to:
            detail.append(f"valid {_day(edge.valid_from)} to {_day(edge.valid_to) if edge.valid_to else 'now'}")
        if edge.latest_written:
            detail.append(f"written {_day(edge.latest_written)}")
        shown = edge.evidence_chunk_ids[:_CHUNKS_PER_RELATION]
        text = f"{edge.subject.name} {edge.relation} {edge.object.name} ({'; '.join(detail)}) [{', '.join(shown)}]"
        line = GraphLine(_one_line(text), "relation", shown, step.score, labels)
        ranked.append((step.score, f"r:{edge.relation_id}", 0, line))
        for chunk_id in shown:
            _offer(chunk_scores, chunk_id, step.score)

    ranked.sort(key=lambda r: (-r[0], r[1], r[2]))
    lines = tuple(r[3] for r in ranked)
    ordered = sorted(chunk_scores.items(), key=lambda cs: (-cs[1], cs[0]))[:max_chunks]
    chunks = tuple(RouteHit(chunk_id, score, rank) for rank, (chunk_id, score) in enumerate(ordered, start=1))
    return GraphEvidence(lines, chunks)


def _candidate_factor(claim: ClaimRecord, kind: QuestionKind) -> float:
    """How far a claim's chunk should be pushed as a candidate; 0 keeps it out of the graph route."""
    if claim.status is ClaimStatus.SUPERSEDED:
        return 0.0  # listed and marked in the lines; its chunk is the outdated distractor
    if claim.status is ClaimStatus.NOT_A_FACT:
        return 0.8 if kind is QuestionKind.MODALITY else 0.4
    if claim.status is ClaimStatus.CONFLICT:
        return 0.9
    return 1.0


def _offer(scores: dict[str, float], chunk_id: str, score: float) -> None:
    if score > scores.get(chunk_id, -1.0):
        scores[chunk_id] = score


@dataclass(frozen=True, slots=True)
class ContextPack:
    """What fits in one token budget: graph lines (capped at a share) first, then chunks in rank order."""

    lines: tuple[GraphLine, ...]
    hits: tuple[SearchHit, ...]
    budget_tokens: int
    line_tokens: int
    chunk_tokens: int
    lines_left_out: int
    hits_left_out: int

    def as_dict(self) -> dict[str, object]:
        return {
            "budget_tokens": self.budget_tokens,
            "line_tokens": self.line_tokens,
            "chunk_tokens": self.chunk_tokens,
            "lines_left_out": self.lines_left_out,
            "hits_left_out": self.hits_left_out,
        }


def pack_context(
    lines: Sequence[GraphLine],
    hits: Sequence[SearchHit],
    *,
    budget_tokens: int,
    counter: TokenCounter,
    line_share: float = 0.25,
) -> ContextPack:
    """Fill one budget: lines up to `line_share` of it, chunks in the rest (including what lines left).

    Both stop at the first item that does not fit rather than skipping ahead: a later line could be the
    superseded value of a claim whose current line was cut, and a later chunk ranks lower by definition.
    """
    if budget_tokens <= 0 or not 0.0 <= line_share <= 1.0:
        raise ValueError("budget_tokens must be positive and line_share within [0, 1]")
    line_cap = int(budget_tokens * line_share)
    kept_lines, line_tokens = _take(lines, (line.text for line in lines), line_cap, counter)
    kept_hits, chunk_tokens = _take(hits, (hit.text for hit in hits), budget_tokens - line_tokens, counter)
    return ContextPack(
        tuple(kept_lines),
        tuple(kept_hits),
        budget_tokens,
        line_tokens,
        chunk_tokens,
        len(lines) - len(kept_lines),
        len(hits) - len(kept_hits),
    )


def _take(items: Sequence[_T], texts: Iterable[str], cap: int, counter: TokenCounter) -> tuple[list[_T], int]:
    kept: list[_T] = []
    used = 0
    for item, text in zip(items, texts, strict=True):
        cost = counter.count_tokens(text)
        if used + cost > cap:
            break
        kept.append(item)
        used += cost
    return kept, used


def _one_line(text: str) -> str:
    # Values and names come from documents; a newline in one would split a line the reader sees as one.
    return re.sub(r"\s+", " ", text).strip()
