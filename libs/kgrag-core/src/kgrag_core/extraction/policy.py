"""Which chunks reach tier 3: a policy, not everything (the LLM is the dominant cost).

A chunk goes when its source is a priority, when the lower tiers disagree with themselves, when what they
found is unsure, or when it names many entities (where relations are likely and NER proposes few). The
reason is returned so reports and previews can say why a chunk cost a call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kgrag_core.extraction.model import ClaimItem, EntityMention, RelationItem

ALL_SOURCES = "*"  # in priority_sources: every source is a priority (an evaluation or a full LLM pass)


@dataclass(frozen=True, slots=True)
class Tier3Policy:
    priority_sources: frozenset[str] = frozenset()
    min_entities: int = 4
    low_confidence: float = 0.5
    # Attributes that may hold several values at once (the ontology's multi cardinality): never a conflict.
    multi_valued_attributes: frozenset[str] = frozenset()

    def reason(
        self, source: str, lower: tuple[Sequence[EntityMention], Sequence[RelationItem], Sequence[ClaimItem]]
    ) -> str | None:
        """Why the chunk should go to tier 3 given its validated lower-tier items, or None to stop at them."""
        entities, relations, claims = lower
        if ALL_SOURCES in self.priority_sources or source in self.priority_sources:
            return "priority_source"
        if _conflicting(relations, claims, self.multi_valued_attributes):
            return "conflicting"
        confidences = [e.confidence for e in entities] + [r.confidence for r in relations]
        confidences += [c.confidence for c in claims]
        if any(c < self.low_confidence for c in confidences):
            return "low_confidence"
        if len({(e.type, e.name.casefold()) for e in entities}) >= self.min_entities:
            return "entity_dense"
        return None


def _conflicting(relations: Sequence[RelationItem], claims: Sequence[ClaimItem], multi: frozenset[str]) -> bool:
    """Two lower-tier items that cannot both hold: a value given twice differently, or an edge both ways."""
    values: dict[tuple[str, str], set[str]] = {}
    for claim in claims:
        if claim.attribute in multi:
            continue
        values.setdefault((claim.entity.casefold(), claim.attribute), set()).add(claim.value)
    if any(len(seen) > 1 for seen in values.values()):
        return True
    polarities: dict[tuple[str, str, str], set[str]] = {}
    for rel in relations:
        key = (rel.subject.casefold(), rel.relation, rel.object.casefold())
        polarities.setdefault(key, set()).add(rel.polarity.value)
    return any(len(seen) > 1 for seen in polarities.values())
