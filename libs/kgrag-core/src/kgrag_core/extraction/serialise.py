"""ChunkExtraction <-> plain JSON-ready dicts: the form the extraction cache stores.

The cache outlives code versions, so the form is explicit (enum values, ISO dates) and carries a format
number; a stored entry of an unknown format is an error to report, not data to guess at.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.model import (
    ChunkExtraction,
    ClaimItem,
    DroppedItem,
    DropReason,
    EntityMention,
    ExtractionKey,
    Modality,
    Polarity,
    RelationItem,
    SkipReason,
    Tier,
)

FORMAT = 1


def _day(value: date | None) -> str | None:
    return value.isoformat() if value is not None else None


def _parse_day(value: object) -> date | None:
    return date.fromisoformat(str(value)) if value else None


def extraction_to_dict(result: ChunkExtraction) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "chunk_id": result.chunk_id,
        "key": {
            "content_hash": result.key.content_hash,
            "extractor_version": result.key.extractor_version,
            "ontology_version": result.key.ontology_version,
        },
        "tier": int(result.tier),
        "entities": [
            {
                "name": e.name,
                "type": e.type,
                "quote": e.quote,
                "confidence": e.confidence,
                "strong_ids": [[kind, value] for kind, value in e.strong_ids],
            }
            for e in result.entities
        ],
        "relations": [
            {
                "subject": r.subject,
                "subject_type": r.subject_type,
                "relation": r.relation,
                "object": r.object,
                "object_type": r.object_type,
                "quote": r.quote,
                "confidence": r.confidence,
                "polarity": r.polarity.value,
                "modality": r.modality.value,
                "valid_from": _day(r.valid_from),
                "valid_to": _day(r.valid_to),
            }
            for r in result.relations
        ],
        "claims": [
            {
                "entity": c.entity,
                "entity_type": c.entity_type,
                "attribute": c.attribute,
                "value": c.value,
                "quote": c.quote,
                "confidence": c.confidence,
                "polarity": c.polarity.value,
                "modality": c.modality.value,
                "valid_from": _day(c.valid_from),
                "valid_to": _day(c.valid_to),
            }
            for c in result.claims
        ],
        "dropped": [{"kind": d.kind, "reason": d.reason.value, "detail": d.detail} for d in result.dropped],
        "skip_reason": result.skip_reason.value if result.skip_reason is not None else None,
        "representative_chunk_id": result.representative_chunk_id,
        "pending_llm": result.pending_llm,
    }


def _items(data: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    items = data.get(name, [])
    if not isinstance(items, list):
        raise TypeError(f"{name} must be a list")
    return items


def extraction_from_dict(data: Mapping[str, Any]) -> ChunkExtraction:
    """The inverse of `extraction_to_dict`; MALFORMED_JSON if the entry is not one it wrote."""
    if data.get("format") != FORMAT:
        raise KgragError(ErrorCode.MALFORMED_JSON, f"cached extraction has format {data.get('format')!r}")
    try:
        key = data["key"]
        skip = data.get("skip_reason")
        return ChunkExtraction(
            chunk_id=str(data["chunk_id"]),
            key=ExtractionKey(str(key["content_hash"]), str(key["extractor_version"]), str(key["ontology_version"])),
            tier=Tier(int(data["tier"])),
            entities=tuple(
                EntityMention(
                    name=e["name"],
                    type=e["type"],
                    quote=e["quote"],
                    confidence=float(e["confidence"]),
                    strong_ids=tuple((str(k), str(v)) for k, v in e.get("strong_ids", [])),
                )
                for e in _items(data, "entities")
            ),
            relations=tuple(
                RelationItem(
                    subject=r["subject"],
                    subject_type=r["subject_type"],
                    relation=r["relation"],
                    object=r["object"],
                    object_type=r["object_type"],
                    quote=r["quote"],
                    confidence=float(r["confidence"]),
                    polarity=Polarity(r["polarity"]),
                    modality=Modality(r["modality"]),
                    valid_from=_parse_day(r.get("valid_from")),
                    valid_to=_parse_day(r.get("valid_to")),
                )
                for r in _items(data, "relations")
            ),
            claims=tuple(
                ClaimItem(
                    entity=c["entity"],
                    entity_type=c["entity_type"],
                    attribute=c["attribute"],
                    value=c["value"],
                    quote=c["quote"],
                    confidence=float(c["confidence"]),
                    polarity=Polarity(c["polarity"]),
                    modality=Modality(c["modality"]),
                    valid_from=_parse_day(c.get("valid_from")),
                    valid_to=_parse_day(c.get("valid_to")),
                )
                for c in _items(data, "claims")
            ),
            dropped=tuple(
                DroppedItem(kind=d["kind"], reason=DropReason(d["reason"]), detail=d["detail"])
                for d in _items(data, "dropped")
            ),
            skip_reason=SkipReason(skip) if skip is not None else None,
            representative_chunk_id=data.get("representative_chunk_id"),
            pending_llm=bool(data.get("pending_llm", False)),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise KgragError(ErrorCode.MALFORMED_JSON, f"cached extraction is malformed: {err!r}") from err
