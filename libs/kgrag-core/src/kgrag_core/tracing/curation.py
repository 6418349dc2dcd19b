"""The curation queue's items besides feedback: conflicting claims and weakly supported edges.

Merge candidates come from resolution's review queue (kgrag_core.graph.ports.ResolutionStore); these two
are read from the authoritative graph. Both are admin views: they read every document.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kgrag_core.extraction.records import ClaimRecord, ClaimStatus

DEFAULT_EDGE_CONFIDENCE = 0.5  # an edge whose best evidence is below this is listed for review


@dataclass(frozen=True, slots=True)
class WeakEdge:
    """A relation whose strongest evidence is below the threshold (entity ids are canonical)."""

    relation_id: str
    subject_id: str
    subject_name: str
    relation: str
    object_id: str
    object_name: str
    modality: str
    polarity: str
    confidence: float
    evidence_chunk_ids: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return {
            "relation_id": self.relation_id,
            "subject": {"entity_id": self.subject_id, "name": self.subject_name},
            "relation": self.relation,
            "object": {"entity_id": self.object_id, "name": self.object_name},
            "modality": self.modality,
            "polarity": self.polarity,
            "confidence": round(self.confidence, 4),
            "evidence_chunk_ids": list(self.evidence_chunk_ids),
        }


def conflict_groups(claims: Iterable[ClaimRecord], limit: int) -> list[dict[str, object]]:
    """Claims in conflict (same attribute, same day written, different values), one item per entity,
    attribute and day, in a stable order (entity, attribute, day)."""
    groups: dict[tuple[str, str, str], list[ClaimRecord]] = {}
    for claim in claims:
        if claim.status is ClaimStatus.CONFLICT:
            day = claim.written_at.isoformat() if claim.written_at else ""
            groups.setdefault((claim.entity_id, claim.attribute, day), []).append(claim)
    out: list[dict[str, object]] = []
    for (entity_id, attribute, day), group in sorted(groups.items())[:limit]:
        ordered = sorted(group, key=lambda c: (c.value, c.claim_id, c.chunk_id))
        out.append(
            {
                "entity_id": entity_id,
                "entity_name": ordered[0].entity_name,
                "attribute": attribute,
                "written_at": day or None,
                "values": sorted({c.value for c in ordered}),
                "claims": [{"claim_id": c.claim_id, "value": c.value, "chunk_id": c.chunk_id} for c in ordered],
            }
        )
    return out
