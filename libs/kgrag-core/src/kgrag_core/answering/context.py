"""One structured context per question: ranked chunks, the graph facts about it, paths, and what was left out.

The answerers read this instead of bare chunks, so what the claims layer knows (a value's history, a plan that
never happened, a negation, two sources that disagree) reaches the answer. Everything in it comes from the
caller's own visibility-filtered reads: claims and edges through evidence the caller may read, and each fact's
evidence chunks loaded through the hybrid searcher's ACL recheck. A fact none of whose evidence chunks could
be loaded is left out, so it can neither be cited nor leak.

Facts get the share of the token budget the graph lines get (the graph searcher's `line_share`): seed 000's
lesson that lines must not push out the chunks holding the answer holds here too.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum

from kgrag_core.extraction.claims import as_written_by, competes
from kgrag_core.extraction.identity import normalise_value
from kgrag_core.extraction.model import Modality, Polarity
from kgrag_core.extraction.ontology import Cardinality
from kgrag_core.extraction.records import ClaimRecord, ClaimStatus
from kgrag_core.graph.model import Edge
from kgrag_core.graph_retrieval.evidence import DEFAULT_ATTRIBUTE_CUES, _take, attribute_relevance
from kgrag_core.graph_retrieval.expansion import relation_relevance
from kgrag_core.graph_retrieval.facts import named_in
from kgrag_core.graph_retrieval.searcher import GraphFacts
from kgrag_core.ports import TokenCounter
from kgrag_core.search import SearchHit
from kgrag_core.text_terms import content_terms


class FactStatus(StrEnum):
    CURRENT = "current"
    SUPERSEDED = "superseded"
    PLAN = "plan"  # any modality that is not a fact: plan, proposal, hypothesis, opinion, suggestion
    NEGATED = "negated"
    CONFLICT = "conflict"


@dataclass(frozen=True, slots=True)
class Fact:
    """A claim (entity, attribute, value) or a relation (subject, relation, object) as the caller sees it."""

    fact_id: str  # F1, F2, ... in context order: the ids the LLM cites
    kind: str  # claim | relation
    subject: str
    subject_id: str
    predicate: str  # the attribute or the relation type
    value: str  # the claim's value or the relation's object
    status: FactStatus
    modality: Modality
    polarity: Polarity
    valid_from: date | None
    valid_to: date | None
    written_at: date | None
    evidence_chunk_ids: tuple[str, ...]
    quote: str = ""  # a claim's extractor quote (relations carry none)
    confidence: float = 0.0
    score: float = 0.0  # how closely it is about the question
    focus: bool = False  # names the question's entity and the attribute or relation it asks about
    subject_weight: float = 0.0  # how strongly the question links to the subject (namesakes compete on it)
    superseded_by: str | None = None  # fact id
    conflicts_with: tuple[str, ...] = ()  # fact ids
    source_id: str = ""  # the claim's or relation's own id (stable across answers: what traces record)

    @property
    def key(self) -> tuple[str, str, str]:
        """What competing facts share: claims one (entity, attribute); relations one triple, by the names of its
        ends (a relation between two entities the question names is about them whichever sense holds it)."""
        if self.kind == "claim":
            return (self.kind, self.subject_id, self.predicate)
        return (self.kind, self.subject.casefold(), f"{self.predicate}\x1f{self.value.casefold()}")

    def render(self) -> str:
        """One line for a prompt: the fact, its labels and clocks, and the chunk ids it rests on."""
        parts = [self.status.value]
        if self.modality is not Modality.FACT and self.modality.value != self.status.value:
            parts.append(self.modality.value)
        if self.polarity is Polarity.NEGATIVE and self.status is not FactStatus.NEGATED:
            parts.append("negated")
        if self.valid_from or self.valid_to:
            parts.append(f"valid {_day(self.valid_from)} to {_day(self.valid_to) if self.valid_to else 'now'}")
        parts.append(f"written {_day(self.written_at)}")
        if self.superseded_by:
            parts.append(f"superseded by {self.superseded_by}")
        if self.conflicts_with:
            parts.append("conflicts with " + ", ".join(self.conflicts_with))
        predicate = self.predicate if self.kind == "relation" else f"{self.predicate} ="
        return f"{self.fact_id}: {self.subject} {predicate} {self.value} ({'; '.join(parts)})"

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.fact_id,
            "source_id": self.source_id,
            "kind": self.kind,
            "subject": self.subject,
            "predicate": self.predicate,
            "value": self.value,
            "status": self.status.value,
            "modality": self.modality.value,
            "polarity": self.polarity.value,
            "valid_from": _iso(self.valid_from),
            "valid_to": _iso(self.valid_to),
            "written_at": _iso(self.written_at),
            "evidence_chunk_ids": list(self.evidence_chunk_ids),
        }


@dataclass(frozen=True, slots=True)
class AnswerContext:
    question: str
    chunks: tuple[SearchHit, ...]  # ranked, within the budget
    facts: tuple[Fact, ...] = ()  # focus first, then by score; within the facts' share of the budget
    paths: tuple[str, ...] = ()  # the graph walk's relation lines, as the searcher rendered them
    # Every chunk a fact rests on, loaded through the ACL recheck (chunk id -> hit): what a fact cites.
    evidence: Mapping[str, SearchHit] = field(default_factory=dict)
    as_of: date | None = None
    budget_tokens: int = 0
    chunks_left_out: int = 0
    facts_left_out: int = 0
    paths_left_out: int = 0

    @property
    def truncated(self) -> bool:
        return bool(self.chunks_left_out or self.facts_left_out or self.paths_left_out)

    def fact(self, fact_id: str) -> Fact | None:
        return next((f for f in self.facts if f.fact_id == fact_id), None)

    def left_out(self) -> dict[str, int]:
        return {"chunks": self.chunks_left_out, "facts": self.facts_left_out, "paths": self.paths_left_out}


def chunks_only(question: str, hits: Sequence[SearchHit]) -> AnswerContext:
    """The context of a question the graph told nothing about: its chunks, nothing left out."""
    return AnswerContext(question, tuple(hits))


def asks_a_known_fact(question: str, claims: Sequence[ClaimRecord]) -> bool:
    """Whether these claims hold one about an entity the question names and the attribute it asks for (the
    ontology's attribute name or a cue of it): the fact the answer should lead with."""
    return any(
        named_in(question, c.entity_name) and attribute_relevance(question, c.attribute, DEFAULT_ATTRIBUTE_CUES) >= 1.0
        for c in claims
    )


def planned_only(facts: Sequence[Fact]) -> list[Fact]:
    """The facts whose value the documents hold only as a plan, proposal or hedge: no current, past or
    disputed fact gives it (a planned "PostgreSQL 16" that a later document states as done is not one).
    One per value, in the order given."""
    stated = {
        normalise_value(f.value)
        for f in facts
        if f.status in (FactStatus.CURRENT, FactStatus.SUPERSEDED, FactStatus.CONFLICT)
    }
    out: dict[str, Fact] = {}
    for f in facts:
        value = normalise_value(f.value)
        if f.status is FactStatus.PLAN and value not in stated:
            out.setdefault(value, f)
    return list(out.values())


def merge_facts(first: GraphFacts, second: GraphFacts) -> GraphFacts:
    """The facts of a graph walk joined by those read for the entities the question names (`facts_for`):
    a walk that reached other entities, or whose retrieval missed the chunk with the current value, still
    hands the answer the named entity's timeline. Both come from the caller's own visibility-filtered reads
    and their evidence through the ACL recheck, so the join adds nothing the caller may not read."""
    claims = {c.claim_id: c for c in (*first.claims, *second.claims)}
    weights = dict(second.entity_weights)
    for entity_id, weight in first.entity_weights.items():
        weights[entity_id] = max(weight, weights.get(entity_id, 0.0))
    evidence = {h.chunk_id: h for h in (*second.fact_evidence, *first.fact_evidence)}
    edges = {e.relation_id: e for e in (*first.edges, *second.edges)}
    return GraphFacts(tuple(claims.values()), weights, tuple(evidence.values()), tuple(edges.values()))


def build_context(
    question: str,
    hits: Sequence[SearchHit],
    *,
    claims: Sequence[ClaimRecord] = (),
    edges: Sequence[Edge] = (),
    paths: Sequence[str] = (),
    evidence: Mapping[str, SearchHit] | None = None,
    entity_weights: Mapping[str, float] | None = None,
    budget_tokens: int = 8000,
    fact_share: float = 0.15,
    counter: TokenCounter,
    as_of: date | None = None,
    cardinality: Mapping[str, Cardinality] | None = None,
) -> AnswerContext:
    """Select and order the facts about the question and fit facts, paths and chunks into one budget.

    `evidence` holds the ACL-rechecked chunks the facts may cite (hits count too). With `as_of`, claims are
    re-read as the documents stood that day (`as_written_by`), and nothing written after it is used.
    """
    if budget_tokens <= 0 or not 0.0 <= fact_share <= 1.0:
        raise ValueError("budget_tokens must be positive and fact_share within [0, 1]")
    loaded: dict[str, SearchHit] = {h.chunk_id: h for h in hits}
    loaded.update(evidence or {})
    if as_of is not None:
        loaded = {c: h for c, h in loaded.items() if _written_by(h, as_of)}
        hits = [h for h in hits if h.chunk_id in loaded]
        claims = as_written_by(claims, as_of, cardinality or {})
        edges = [e for e in edges if e.first_written is None or e.first_written <= as_of]
    weights = entity_weights or {}
    facts = _changed_attribute_in_focus(question, _claim_facts(question, sequenced(claims), loaded, weights))
    facts += _relation_facts(question, edges, loaded)
    facts.sort(key=lambda f: (not f.focus, -f.score, f.key, _STATUS_RANK[f.status], f.subject, f.value))
    facts = _number(facts)

    fact_cap = int(budget_tokens * fact_share)
    # pack_context's fill rule, shared so both budgets agree: stop at the first item that does not fit.
    kept_facts, fact_tokens = _take(facts, [f.render() for f in facts], fact_cap, counter)
    kept_facts = _close_links(kept_facts)
    kept_paths, path_tokens = _take(list(paths), list(paths), fact_cap - fact_tokens, counter)
    rest = budget_tokens - fact_tokens - path_tokens
    kept_hits, _ = _take(list(hits), [h.text for h in hits], rest, counter)
    cited = {c for f in kept_facts for c in f.evidence_chunk_ids}
    return AnswerContext(
        question=question,
        chunks=tuple(kept_hits),
        facts=tuple(kept_facts),
        paths=tuple(kept_paths),
        evidence={c: h for c, h in loaded.items() if c in cited},
        as_of=as_of,
        budget_tokens=budget_tokens,
        chunks_left_out=len(hits) - len(kept_hits),
        facts_left_out=len(facts) - len(kept_facts),
        paths_left_out=len(paths) - len(kept_paths),
    )


def sequenced(claims: Sequence[ClaimRecord]) -> list[ClaimRecord]:
    """Claims held in conflict that each say when their value became true, on different days, are a timeline,
    not a dispute: "headcount is 61 as of 1 March 2025; we ended June 2024 at 58" is written once, so neither
    value is newer by the document clock, but the valid-time clock orders them. The latest is current, each
    earlier one superseded by the next. Values that share a start day, or any side without one (a reposted
    note that changes a name, two regions' targets), stay in conflict: nothing says which came later."""
    groups: dict[tuple[str, str], list[ClaimRecord]] = {}
    for claim in claims:
        if claim.status is ClaimStatus.CONFLICT:
            groups.setdefault((claim.entity_id, claim.attribute), []).append(claim)
    changed: dict[str, ClaimRecord] = {}
    for members in groups.values():
        starts: dict[str, set[date]] = {}
        for claim in members:
            starts.setdefault(normalise_value(claim.value), set()).add(claim.valid_from or date.min)
        days = [min(d) for d in starts.values()]
        if len(starts) < 2 or date.min in days or len(set(days)) < len(days):
            continue
        order = sorted(starts, key=lambda v: min(starts[v]))
        first_of = {v: next(c for c in members if normalise_value(c.value) == v) for v in order}
        for claim in members:
            position = order.index(normalise_value(claim.value))
            if position == len(order) - 1:
                changed[claim.claim_id] = dataclasses.replace(
                    claim, status=ClaimStatus.CURRENT, superseded_by=None, conflicts_with=()
                )
            else:
                later = first_of[order[position + 1]]
                changed[claim.claim_id] = dataclasses.replace(
                    claim, status=ClaimStatus.SUPERSEDED, superseded_by=later.claim_id, conflicts_with=()
                )
    return [changed.get(c.claim_id, c) for c in claims]


_STATUS_RANK = {
    FactStatus.CURRENT: 0,
    FactStatus.CONFLICT: 1,
    FactStatus.NEGATED: 2,
    FactStatus.PLAN: 3,
    FactStatus.SUPERSEDED: 4,
}


def _claim_status(claim: ClaimRecord) -> FactStatus:
    if claim.status is ClaimStatus.SUPERSEDED:
        return FactStatus.SUPERSEDED
    if claim.status is ClaimStatus.CONFLICT:
        return FactStatus.CONFLICT
    if claim.status is ClaimStatus.NOT_A_FACT or not competes(claim):
        return FactStatus.NEGATED if claim.polarity is Polarity.NEGATIVE else FactStatus.PLAN
    return FactStatus.CURRENT


def _claim_facts(
    question: str, claims: Sequence[ClaimRecord], loaded: Mapping[str, SearchHit], weights: Mapping[str, float]
) -> list[Fact]:
    out: list[Fact] = []
    for claim in claims:
        if claim.chunk_id not in loaded:
            continue  # its evidence did not pass the recheck: nothing to cite, nothing to show
        fit = attribute_relevance(question, claim.attribute, DEFAULT_ATTRIBUTE_CUES)
        named = named_in(question, claim.entity_name)
        out.append(
            Fact(
                fact_id=claim.claim_id,  # renumbered once ordered; links are rewritten with it
                source_id=claim.claim_id,
                kind="claim",
                subject=claim.entity_name,
                subject_id=claim.entity_id,
                predicate=claim.attribute,
                value=claim.value,
                status=_claim_status(claim),
                modality=claim.modality,
                polarity=claim.polarity,
                valid_from=claim.valid_from,
                valid_to=claim.valid_to,
                written_at=claim.written_at,
                evidence_chunk_ids=(claim.chunk_id,),
                quote=claim.quote,
                confidence=claim.confidence,
                score=round(max(weights.get(claim.entity_id, 0.0), 1.0 if named else 0.0) * fit, 6),
                focus=named and fit >= 1.0,
                subject_weight=weights.get(claim.entity_id, 0.0),
                superseded_by=claim.superseded_by,
                conflicts_with=claim.conflicts_with,
            )
        )
    return out


def _changed_attribute_in_focus(question: str, facts: list[Fact]) -> list[Fact]:
    """A question that names one entity and none of its attributes ("Is the travel freeze still on?", "Did the
    AMR pilot run?") asks about what changed: when exactly one of the entity's attributes has a timeline (a
    superseded value), that attribute is the focus, as if the question had named it."""
    names = {f.subject_id: set(content_terms(f.subject)) for f in facts if named_in(question, f.subject)}
    # "Brio Robotics" inside "Brio Robotics AMR pilot" is not a second thing the question names.
    named = {i for i, terms in names.items() if not any(terms < other for other in names.values())}
    if len(named) != 1 or any(f.focus for f in facts):
        return facts  # two named things ("Is Northwind acquiring Baltic Haulage?"): nothing says whose change
    subjects = {f.subject_id: f.subject for f in facts}
    # A possessive names what the question is about by its owner ("Support's four-day week trial"): the
    # owner's own changes are not asked.
    named = {i for i in named if not re.search(rf"{re.escape(subjects[i])}['’]s?\b", question, re.IGNORECASE)}
    out = list(facts)
    for subject_id in named:
        changed = {f.predicate for f in facts if f.subject_id == subject_id and f.status is FactStatus.SUPERSEDED}
        if len(changed) != 1:
            continue
        (attribute,) = changed
        out = [
            dataclasses.replace(f, focus=True, score=max(f.score, f.subject_weight, 1.0))
            if f.subject_id == subject_id and f.predicate == attribute
            else f
            for f in out
        ]
    return out


def _relation_facts(question: str, edges: Sequence[Edge], loaded: Mapping[str, SearchHit]) -> list[Fact]:
    asked = relation_relevance(question).relevant
    out: list[Fact] = []
    seen: set[str] = set()
    for edge in edges:
        if edge.relation_id in seen:
            continue
        seen.add(edge.relation_id)
        chunk_ids = tuple(c for c in edge.evidence_chunk_ids if c in loaded)
        if not chunk_ids:
            continue
        named = sum(named_in(question, end.name) for end in (edge.subject, edge.object))
        focus = named == 2 or (named == 1 and edge.relation in asked)
        if edge.polarity is Polarity.NEGATIVE:
            status = FactStatus.NEGATED
        elif edge.modality not in (Modality.FACT, Modality.REPORTED):
            status = FactStatus.PLAN
        elif edge.valid_to is not None:
            status = FactStatus.SUPERSEDED
        else:
            status = FactStatus.CURRENT
        out.append(
            Fact(
                fact_id=edge.relation_id,
                source_id=edge.relation_id,
                kind="relation",
                subject=edge.subject.name,
                subject_id=edge.subject.entity_id,
                predicate=edge.relation,
                value=edge.object.name,
                status=status,
                modality=edge.modality,
                polarity=edge.polarity,
                valid_from=edge.valid_from,
                valid_to=edge.valid_to,
                written_at=edge.latest_written,
                evidence_chunk_ids=chunk_ids,
                confidence=edge.confidence,
                score=round((named + (1 if edge.relation in asked else 0)) / 3, 6),
                focus=focus,
            )
        )
    return out


def _number(facts: list[Fact]) -> list[Fact]:
    """Give facts short ids in order and rewrite their links to them (a link to a fact not kept is dropped)."""
    ids = {f.fact_id: f"F{i}" for i, f in enumerate(facts, start=1)}
    return [
        dataclasses.replace(
            f,
            fact_id=ids[f.fact_id],
            superseded_by=ids.get(f.superseded_by) if f.superseded_by else None,
            conflicts_with=tuple(ids[c] for c in f.conflicts_with if c in ids),
        )
        for f in facts
    ]


def _close_links(facts: list[Fact]) -> list[Fact]:
    kept = {f.fact_id for f in facts}
    return [
        dataclasses.replace(
            f,
            superseded_by=f.superseded_by if f.superseded_by in kept else None,
            conflicts_with=tuple(c for c in f.conflicts_with if c in kept),
        )
        for f in facts
    ]


def _written_by(hit: SearchHit, day: date) -> bool:
    return hit.doc_time is None or hit.doc_time.date() <= day


def _day(value: date | None) -> str:
    return value.isoformat() if value else "?"


def _iso(value: date | None) -> str | None:
    return value.isoformat() if value else None
