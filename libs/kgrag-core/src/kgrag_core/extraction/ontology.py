"""The ontology: which entity types, relations and attributes the graph may hold.

Loaded from `schemas/ontology/*.yaml` (or a `PUT /v1/admin/ontology` body) and validated before use: every
relation's endpoint types must exist, every attribute names existing entity types, a known value type and
a cardinality. Extraction results record the version that produced them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from kgrag_core.errors import ErrorCode, KgragError


class ValueType(StrEnum):
    STRING = "string"
    INTEGER = "integer"
    NUMBER = "number"
    PERCENT = "percent"
    MONEY = "money"
    DATE = "date"
    DURATION = "duration"


class Cardinality(StrEnum):
    SINGLE = "single"  # a later value supersedes an earlier one; same-date disagreement is a conflict
    MULTI = "multi"


@dataclass(frozen=True, slots=True)
class EntityType:
    name: str
    description: str = ""
    strong_ids: tuple[str, ...] = ()  # identifier kinds that name one entity for sure (email, domain, ...)


@dataclass(frozen=True, slots=True)
class RelationType:
    name: str
    subject_types: tuple[str, ...]
    object_types: tuple[str, ...]
    description: str = ""


@dataclass(frozen=True, slots=True)
class AttributeType:
    name: str
    entity_types: tuple[str, ...]
    value_type: ValueType
    cardinality: Cardinality
    description: str = ""


@dataclass(frozen=True, slots=True)
class Ontology:
    version: str
    entity_types: Mapping[str, EntityType]
    relation_types: Mapping[str, RelationType]
    attributes: Mapping[str, AttributeType]

    def allows_triple(self, subject_type: str, relation: str, object_type: str) -> bool:
        rel = self.relation_types.get(relation)
        return rel is not None and subject_type in rel.subject_types and object_type in rel.object_types

    def allows_attribute(self, entity_type: str, attribute: str) -> bool:
        attr = self.attributes.get(attribute)
        return attr is not None and entity_type in attr.entity_types

    @property
    def fingerprint(self) -> str:
        """Hash of the content (not the label): two bodies with one version label are told apart."""
        return hashlib.sha256(json.dumps(ontology_to_dict(self), sort_keys=True).encode()).hexdigest()[:16]


def _invalid(message: str) -> KgragError:
    return KgragError(
        ErrorCode.ONTOLOGY_INVALID, message, hint="fix the ontology file (see docs/extraction.md) and load it again"
    )


def _str_list(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _invalid(f"{where} must be a list of names")
    return tuple(value)


def _section(data: Mapping[str, object], name: str) -> Mapping[str, object]:
    section = data.get(name)
    if not isinstance(section, Mapping) or not section:
        raise _invalid(f"the ontology needs a non-empty '{name}' mapping")
    return section


def _spec(value: object, where: str) -> Mapping[str, object]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _invalid(f"{where} must be a mapping")
    return value


def parse_ontology(data: object) -> Ontology:
    """Validate a parsed YAML/JSON body and build the ontology, or raise ONTOLOGY_INVALID saying where."""
    if not isinstance(data, Mapping):
        raise _invalid("the ontology must be a mapping with version, entity_types, relation_types, attributes")
    version = data.get("version")
    if not isinstance(version, (str, int)) or not str(version).strip():
        raise _invalid("the ontology needs a version")
    entity_types: dict[str, EntityType] = {}
    for name, raw in _section(data, "entity_types").items():
        spec = _spec(raw, f"entity type {name}")
        entity_types[name] = EntityType(
            name, str(spec.get("description", "")), _str_list(spec.get("strong_ids"), f"{name}.strong_ids")
        )
    relation_types: dict[str, RelationType] = {}
    for name, raw in _section(data, "relation_types").items():
        spec = _spec(raw, f"relation {name}")
        subjects = _str_list(spec.get("subject"), f"{name}.subject")
        objects = _str_list(spec.get("object"), f"{name}.object")
        if not subjects or not objects:
            raise _invalid(f"relation {name} needs subject and object types")
        for t in subjects + objects:
            if t not in entity_types:
                raise _invalid(f"relation {name} names an unknown entity type {t!r}")
        relation_types[name] = RelationType(name, subjects, objects, str(spec.get("description", "")))
    attributes: dict[str, AttributeType] = {}
    for name, raw in _spec(data.get("attributes"), "attributes").items():
        spec = _spec(raw, f"attribute {name}")
        owners = _str_list(spec.get("entity_types"), f"{name}.entity_types")
        if not owners:
            raise _invalid(f"attribute {name} needs entity_types")
        for t in owners:
            if t not in entity_types:
                raise _invalid(f"attribute {name} names an unknown entity type {t!r}")
        try:
            value_type = ValueType(str(spec.get("type", "string")))
            cardinality = Cardinality(str(spec.get("cardinality", "single")))
        except ValueError as err:
            raise _invalid(f"attribute {name}: {err}") from err
        attributes[name] = AttributeType(name, owners, value_type, cardinality, str(spec.get("description", "")))
    return Ontology(str(version).strip(), entity_types, relation_types, attributes)


def ontology_to_dict(ontology: Ontology) -> dict[str, object]:
    """The inverse of parse_ontology: what is stored per version and returned by the admin API."""
    return {
        "version": ontology.version,
        "entity_types": {
            t.name: {"description": t.description, "strong_ids": list(t.strong_ids)}
            for t in ontology.entity_types.values()
        },
        "relation_types": {
            r.name: {"subject": list(r.subject_types), "object": list(r.object_types), "description": r.description}
            for r in ontology.relation_types.values()
        },
        "attributes": {
            a.name: {
                "entity_types": list(a.entity_types),
                "type": a.value_type.value,
                "cardinality": a.cardinality.value,
                "description": a.description,
            }
            for a in ontology.attributes.values()
        },
    }
