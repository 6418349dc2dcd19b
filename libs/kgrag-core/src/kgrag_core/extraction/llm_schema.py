"""The strict JSON Schema of tier 3's reply, generated from the ontology.

Sent as the endpoint's `response_format` (OpenAI structured outputs, strict mode): every object closes
with `additionalProperties: false`, every property is required, optional values are nullable, and the
ontology's names are enums so a constrained model cannot invent a type. Replies are still checked item by
item on our side (tier3.parse_reply, then validation): a schema the endpoint ignores is no guarantee.
"""

from __future__ import annotations

from typing import Any

from kgrag_core.extraction.model import Modality, Polarity
from kgrag_core.extraction.ontology import Ontology

_STRING: dict[str, Any] = {"type": "string"}
_NULLABLE_DATE: dict[str, Any] = {
    "type": ["string", "null"],
    "description": "ISO date (YYYY-MM-DD) the text gives for when this became / stopped being true, else null",
}
# No minimum/maximum: not every strict-mode endpoint accepts them; parsing clamps to [0, 1].
_CONFIDENCE: dict[str, Any] = {"type": "number", "description": "0 to 1: how sure the text makes this item"}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _enum(values: list[str]) -> dict[str, Any]:
    # An empty enum admits nothing and some endpoints reject it; validation refuses unknown names anyway.
    return {"type": "string", "enum": values} if values else dict(_STRING)


def extraction_json_schema(ontology: Ontology) -> dict[str, Any]:
    """The reply format: {"entities": [...], "relations": [...], "claims": [...]}, each item naming its chunk."""
    entity_types = _enum(sorted(ontology.entity_types))
    quote = {"type": "string", "description": "verbatim text copied from the chunk that states this item"}
    chunk_id = {"type": "string", "description": "the id of the chunk the quote is copied from"}
    modality = _enum([m.value for m in Modality])
    polarity = _enum([p.value for p in Polarity])
    entity = _object({"chunk_id": chunk_id, "name": _STRING, "type": entity_types, "quote": quote})
    relation = _object(
        {
            "chunk_id": chunk_id,
            "subject": _STRING,
            "subject_type": entity_types,
            "relation": _enum(sorted(ontology.relation_types)),
            "object": _STRING,
            "object_type": entity_types,
            "quote": quote,
            "polarity": polarity,
            "modality": modality,
            "valid_from": _NULLABLE_DATE,
            "valid_to": _NULLABLE_DATE,
            "confidence": _CONFIDENCE,
        }
    )
    claim = _object(
        {
            "chunk_id": chunk_id,
            "entity": _STRING,
            "entity_type": entity_types,
            "attribute": _enum(sorted(ontology.attributes)),
            "value": _STRING,
            "quote": quote,
            "polarity": polarity,
            "modality": modality,
            "valid_from": _NULLABLE_DATE,
            "valid_to": _NULLABLE_DATE,
            "confidence": _CONFIDENCE,
        }
    )
    return _object(
        {
            "entities": {"type": "array", "items": entity},
            "relations": {"type": "array", "items": relation},
            "claims": {"type": "array", "items": claim},
        }
    )
