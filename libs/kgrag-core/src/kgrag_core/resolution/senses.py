"""Namesakes inside one extracted entity: which documents' mentions of a name stand for another thing.

Extraction keys a mention by type + normalised name (or strong identifier), so every "Acme" Organization is
one entity row: the name's mentions are pre-grouped, and resolution compares the group as one candidate (a
common name named by hundreds of documents stays one cheap block, not hundreds of pairs). Inside the group
each document keeps its own identity and context: a document-level profile (what that document's mentions
carried, its claims, a little of its text). Documents are placed into senses in order, the most-mentioning
first; a document joins the first sense it is not kept apart from, judged against that sense's first
document by the resolver's own rules (hard constraints, then the score). Only a disagreement can start a
sense: conflicting strong identifiers, or conflicting attributes with a context that does not corroborate
(an exact name with no such evidence always merges), so a document that says nothing new costs no
comparison and no embedding. Every sense but the first becomes a split the store applies and logs; the
sense and what it was split from are queued for review when the decision was a score between the thresholds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kgrag_core.graph.model import DecisionKind, DocumentProfile, EntityProfile, PairDecision
from kgrag_core.resolution.constraints import AliasIndex, hard_stop
from kgrag_core.resolution.features import attribute_agreement
from kgrag_core.resolution.resolver import Resolver

# Attribute agreement at or above this cannot pull an exact name below the merge threshold (the attribute
# weight is 0.15 either way of neutral, the context's as much), so such a document joins without a score.
_AGREEING = 0.5
MAX_SENSES = 4  # per entity and pass: a name that needs more is a curator's job (the review queue)


@dataclass(frozen=True, slots=True)
class ProposedSplit:
    from_id: str
    doc_ids: tuple[str, ...]
    basis: PairDecision  # why the first of doc_ids was kept apart from the entity's first sense


@dataclass(slots=True)
class _Sense:
    head: DocumentProfile
    docs: list[str] = field(default_factory=list)


Vectors = Callable[[Sequence[EntityProfile]], Mapping[str, Sequence[float]]]


def plan_senses(
    resolver: Resolver, documents: Sequence[DocumentProfile], vectors: Vectors | None = None
) -> list[ProposedSplit]:
    """The splits that keep namesakes apart, over the document profiles of any number of entities."""
    by_entity: dict[str, list[DocumentProfile]] = {}
    for document in documents:
        by_entity.setdefault(document.entity_id, []).append(document)
    out: list[ProposedSplit] = []
    for entity_id in sorted(by_entity):
        docs = sorted(by_entity[entity_id], key=lambda d: (-d.profile.mentions, d.doc_id))
        if len(docs) > 1:
            out.extend(_senses_of(resolver, entity_id, docs, vectors))
    return out


def _senses_of(
    resolver: Resolver, entity_id: str, docs: Sequence[DocumentProfile], vectors: Vectors | None
) -> list[ProposedSplit]:
    senses = [_Sense(docs[0], [docs[0].doc_id])]
    reasons: dict[int, PairDecision] = {}
    for document in docs[1:]:
        placed = False
        first_refusal: PairDecision | None = None
        for sense in senses:
            decision = _judge(resolver, document.profile, sense.head.profile, vectors)
            if decision is None or decision.kind is DecisionKind.MERGE:
                sense.docs.append(document.doc_id)
                placed = True
                break
            first_refusal = first_refusal or decision
        if not placed and len(senses) < MAX_SENSES and first_refusal is not None:
            reasons[len(senses)] = first_refusal
            senses.append(_Sense(document, [document.doc_id]))
        elif not placed:
            senses[0].docs.append(document.doc_id)  # too many senses: left with the first, for a person
    return [
        ProposedSplit(entity_id, tuple(sorted(sense.docs)), reasons[index])
        for index, sense in enumerate(senses)
        if index > 0
    ]


def _judge(
    resolver: Resolver, document: EntityProfile, head: EntityProfile, vectors: Vectors | None
) -> PairDecision | None:
    """None when the document plainly belongs to the sense (no disagreement to weigh), else the decision."""
    stop = hard_stop(document, head)
    agreement = attribute_agreement(document, head, resolver.settings.multi_valued_attributes)
    if stop is None and (agreement is None or agreement >= _AGREEING):
        return None
    pair = [document, head]
    found = vectors(pair) if vectors is not None and stop is None else None
    return resolver.decide(document, head, alias_index=AliasIndex(pair), vectors=found)
