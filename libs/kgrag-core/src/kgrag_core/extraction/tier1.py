"""Tier 1: structured records mapped to entities, relations and claims by declarative rules.

The rules (`schemas/mappings/*.yaml`) say, per record type, which entity the record describes, which field
names it, which fields are strong identifiers, which are attributes and which name related entities. They
are checked against the ontology when loaded, so a rule can never produce a type, attribute or triple the
ontology refuses. Mapped items are the graph's high-precision backbone: confidence 1.0, modality fact,
each quoting the exact record line it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.model import ClaimItem, EntityMention, Modality, RelationItem
from kgrag_core.extraction.ontology import Cardinality, Ontology
from kgrag_core.extraction.records_text import RecordLine, field_key, record_lines

LIST_SPLIT = ";"


class Direction(StrEnum):
    SUBJECT = "subject"  # the record's entity is the subject: (record) -REL-> (field value)
    OBJECT = "object"  # the record's entity is the object: (field value) -REL-> (record)


@dataclass(frozen=True, slots=True)
class AttributeRule:
    field: str
    attribute: str
    multi: bool  # a multi-valued attribute: the value is split on ";" into one claim per item


@dataclass(frozen=True, slots=True)
class RelationRule:
    field: str
    relation: str
    type: str  # the entity type of the entities the field names
    direction: Direction


@dataclass(frozen=True, slots=True)
class RecordRule:
    record_type: str
    entity_type: str
    name_field: str
    strong_ids: tuple[tuple[str, str], ...]  # (identifier kind, field)
    attributes: tuple[AttributeRule, ...]
    relations: tuple[RelationRule, ...]


@dataclass(frozen=True, slots=True)
class MappingRules:
    version: str
    ontology_version: str
    rules: Mapping[str, RecordRule]


MappedItems = tuple[list[EntityMention], list[RelationItem], list[ClaimItem]]


def _invalid(message: str) -> KgragError:
    return KgragError(
        ErrorCode.ONTOLOGY_INVALID,
        message,
        hint="fix the mapping rules (schemas/mappings/*.yaml) so they name only what the ontology defines",
    )


def _mapping(value: object, where: str) -> Mapping[str, object]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise _invalid(f"{where} must be a mapping")
    return value


def _name(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _invalid(f"{where} must be a non-empty string")
    return value.strip()


def _field(value: object, where: str) -> str:
    name = _name(value, where)
    if field_key(name) != name:
        raise _invalid(f"{where}: {name!r} is not a record field key (lowercase letters, digits and '_')")
    return name


def _record_rule(record_type: str, raw: object, ontology: Ontology) -> RecordRule:
    where = f"mapping rule {record_type!r}"
    spec = _mapping(raw, where)
    entity_type = _name(spec.get("entity_type"), f"{where}.entity_type")
    known = ontology.entity_types.get(entity_type)
    if known is None:
        raise _invalid(f"{where}: unknown entity type {entity_type!r}")
    name_field = _field(spec.get("name_field"), f"{where}.name_field")

    strong_ids = []
    for kind, field in _mapping(spec.get("strong_ids"), f"{where}.strong_ids").items():
        if kind not in known.strong_ids:
            allowed = ", ".join(known.strong_ids) or "none"
            raise _invalid(f"{where}: {entity_type} has no strong identifier {kind!r} (allowed: {allowed})")
        strong_ids.append((kind, _field(field, f"{where}.strong_ids.{kind}")))

    attributes = []
    for field, attribute in _mapping(spec.get("attributes"), f"{where}.attributes").items():
        attribute_name = _name(attribute, f"{where}.attributes.{field}")
        if attribute_name not in ontology.attributes:
            raise _invalid(f"{where}.attributes.{field}: unknown attribute {attribute_name!r}")
        if not ontology.allows_attribute(entity_type, attribute_name):
            raise _invalid(f"{where}.attributes.{field}: {entity_type} may not have attribute {attribute_name!r}")
        multi = ontology.attributes[attribute_name].cardinality is Cardinality.MULTI
        attributes.append(AttributeRule(_field(field, f"{where}.attributes"), attribute_name, multi))

    relations = []
    for field, raw_relation in _mapping(spec.get("relations"), f"{where}.relations").items():
        rwhere = f"{where}.relations.{field}"
        rspec = _mapping(raw_relation, rwhere)
        relation = _name(rspec.get("relation"), f"{rwhere}.relation")
        other = _name(rspec.get("type"), f"{rwhere}.type")
        try:
            direction = Direction(str(rspec.get("direction", Direction.SUBJECT.value)))
        except ValueError as err:
            raise _invalid(f"{rwhere}.direction must be 'subject' or 'object'") from err
        if relation not in ontology.relation_types:
            raise _invalid(f"{rwhere}: unknown relation {relation!r}")
        if other not in ontology.entity_types:
            raise _invalid(f"{rwhere}: unknown entity type {other!r}")
        subject, obj = (entity_type, other) if direction is Direction.SUBJECT else (other, entity_type)
        if not ontology.allows_triple(subject, relation, obj):
            raise _invalid(f"{rwhere}: the ontology does not allow ({subject})-[{relation}]->({obj})")
        relations.append(RelationRule(_field(field, rwhere), relation, other, direction))

    return RecordRule(record_type, entity_type, name_field, tuple(strong_ids), tuple(attributes), tuple(relations))


def load_mapping_rules(data: object, ontology: Ontology) -> MappingRules:
    """Validate parsed YAML/JSON rules against the ontology, or raise ONTOLOGY_INVALID saying where."""
    if not isinstance(data, Mapping):
        raise _invalid("the mapping rules must be a mapping with 'version' and 'record_types'")
    version = data.get("version")
    if not isinstance(version, str | int) or isinstance(version, bool) or not str(version).strip():
        raise _invalid("the mapping rules need a version")
    record_types = _mapping(data.get("record_types"), "record_types")
    if not record_types:
        raise _invalid("the mapping rules need a non-empty 'record_types' mapping")
    rules: dict[str, RecordRule] = {}
    for record_type, raw in record_types.items():
        key = field_key(record_type)
        if key != record_type:
            raise _invalid(f"record type {record_type!r} must be written as {key!r}")
        rules[record_type] = _record_rule(record_type, raw, ontology)
    return MappingRules(str(version).strip(), ontology.version, rules)


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(LIST_SPLIT) if part.strip()]


def map_record(text: str, rules: MappingRules) -> MappedItems:
    """The record's entity, its attributes as claims and its relations, each quoting its own line; empty for
    text that is not a record, a record type without a rule, or a record without its name field."""
    parsed = record_lines(text)
    if parsed is None or parsed[0] not in rules.rules:
        return [], [], []
    rule = rules.rules[parsed[0]]
    lines = parsed[1]
    name_line = next((line for line in lines if line.key == rule.name_field), None)
    if name_line is None:
        return [], [], []
    name = name_line.value
    by_field: dict[str, list[RecordLine]] = {}
    for line in lines:
        by_field.setdefault(line.key, []).append(line)

    strong_ids = sorted(
        {(kind, line.value) for kind, field in rule.strong_ids for line in by_field.get(field, ())},
    )
    entities = [EntityMention(name, rule.entity_type, name_line.line, 1.0, tuple(strong_ids))]
    seen_entities = {(name, rule.entity_type)}

    claims = [
        ClaimItem(name, rule.entity_type, attr.attribute, value, line.line, 1.0, modality=Modality.FACT)
        for attr in rule.attributes
        for line in by_field.get(attr.field, ())
        for value in (_split(line.value) if attr.multi else [line.value])
    ]

    relations = []
    for rel in rule.relations:
        for line in by_field.get(rel.field, ()):
            for other in _split(line.value):
                if (other, rel.type) == (name, rule.entity_type):
                    continue  # a record naming itself is no relation
                if (other, rel.type) not in seen_entities:
                    seen_entities.add((other, rel.type))
                    entities.append(EntityMention(other, rel.type, line.line, 1.0))
                if rel.direction is Direction.SUBJECT:
                    ends = (name, rule.entity_type, other, rel.type)
                else:
                    ends = (other, rel.type, name, rule.entity_type)
                relations.append(
                    RelationItem(
                        ends[0], ends[1], rel.relation, ends[2], ends[3], line.line, 1.0, modality=Modality.FACT
                    )
                )
    return entities, relations, claims
