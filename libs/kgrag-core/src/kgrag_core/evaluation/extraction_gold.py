"""The labelled extraction set: one gold chunk per JSONL line (see corpora/northwind/extraction/README.md).

A gold chunk names its chunk by a verbatim `anchor` inside one document, so the labels survive re-chunking as
long as the anchor stays inside a single chunk. Parsing checks the shape; `check_against_ontology` checks that
every label is something the ontology allows, so a gold set never scores an extractor on an impossible item.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.model import Modality, Polarity
from kgrag_core.extraction.ontology import Ontology, ValueType


@dataclass(frozen=True, slots=True)
class GoldEntity:
    name: str
    type: str


@dataclass(frozen=True, slots=True)
class GoldRelation:
    subject: str
    subject_type: str
    relation: str
    object: str
    object_type: str
    polarity: Polarity = Polarity.POSITIVE
    modality: Modality = Modality.FACT
    valid_from: date | None = None
    valid_to: date | None = None


@dataclass(frozen=True, slots=True)
class GoldClaim:
    entity: str
    entity_type: str
    attribute: str
    value: str
    modality: Modality = Modality.FACT
    polarity: Polarity = Polarity.POSITIVE
    valid_from: date | None = None
    valid_to: date | None = None


@dataclass(frozen=True, slots=True)
class GoldChunk:
    id: str
    doc_id: str
    anchor: str  # verbatim text of the document that lies inside exactly one chunk
    entities: tuple[GoldEntity, ...]
    relations: tuple[GoldRelation, ...]
    claims: tuple[GoldClaim, ...]
    notes: str = ""


def _text(raw: Mapping[str, object], key: str) -> str:
    value = raw[key]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key!r} must be a non-empty string")
    return value


def _date(raw: Mapping[str, object], key: str) -> date | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key!r} must be an ISO date or null")
    return date.fromisoformat(value)


def _items(raw: Mapping[str, object], key: str) -> list[Mapping[str, object]]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise ValueError(f"{key!r} must be a list of objects")
    return value


def _entity(raw: Mapping[str, object]) -> GoldEntity:
    return GoldEntity(_text(raw, "name"), _text(raw, "type"))


def _relation(raw: Mapping[str, object]) -> GoldRelation:
    return GoldRelation(
        subject=_text(raw, "subject"),
        subject_type=_text(raw, "subject_type"),
        relation=_text(raw, "relation"),
        object=_text(raw, "object"),
        object_type=_text(raw, "object_type"),
        polarity=Polarity(_text(raw, "polarity")),
        modality=Modality(_text(raw, "modality")),
        valid_from=_date(raw, "valid_from"),
        valid_to=_date(raw, "valid_to"),
    )


def _claim(raw: Mapping[str, object]) -> GoldClaim:
    return GoldClaim(
        entity=_text(raw, "entity"),
        entity_type=_text(raw, "entity_type"),
        attribute=_text(raw, "attribute"),
        value=_text(raw, "value"),
        modality=Modality(_text(raw, "modality")),
        polarity=Polarity(_text(raw, "polarity")),
        valid_from=_date(raw, "valid_from"),
        valid_to=_date(raw, "valid_to"),
    )


def _chunk(raw: object) -> GoldChunk:
    if not isinstance(raw, Mapping):
        raise ValueError("a gold line must be a JSON object")
    notes = raw.get("notes", "")
    if not isinstance(notes, str):
        raise ValueError("'notes' must be a string")
    return GoldChunk(
        id=_text(raw, "id"),
        doc_id=_text(raw, "doc_id"),
        anchor=_text(raw, "anchor"),
        entities=tuple(_entity(e) for e in _items(raw, "entities")),
        relations=tuple(_relation(r) for r in _items(raw, "relations")),
        claims=tuple(_claim(c) for c in _items(raw, "claims")),
        notes=notes,
    )


def parse_gold(lines: Iterable[str]) -> list[GoldChunk]:
    """Parse gold JSONL (blank lines skipped); MALFORMED_JSON or MISSING_FIELD name the line that is wrong."""
    out: list[GoldChunk] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as err:
            raise KgragError(ErrorCode.MALFORMED_JSON, f"gold line {number}: {err.msg}") from err
        try:
            chunk = _chunk(raw)
        except (KeyError, TypeError, ValueError) as err:
            raise KgragError(
                ErrorCode.MISSING_FIELD,
                f"gold line {number}: {err}",
                hint="see corpora/northwind/extraction/README.md for the gold line format",
            ) from err
        if chunk.id in seen:
            raise KgragError(ErrorCode.MISSING_FIELD, f"gold line {number}: duplicate id {chunk.id!r}")
        seen.add(chunk.id)
        out.append(chunk)
    return out


_INTEGER = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_PERCENT = re.compile(rf"(?:{_NUMBER})\s?%")
_MONEY = re.compile(rf"(?:[€$£]\s?(?:{_NUMBER})|(?:{_NUMBER})\s?(?:EUR|USD|GBP))")
_DURATION = re.compile(rf"(?:{_NUMBER})\s?[A-Za-z][A-Za-z ]*")


def _value_ok(value_type: ValueType, value: str) -> bool:
    """Gold values are written in one canonical shape per type, so a plain pattern check is enough here."""
    if value_type is ValueType.INTEGER:
        return _INTEGER.fullmatch(value) is not None
    if value_type is ValueType.NUMBER:
        return re.fullmatch(_NUMBER, value) is not None
    if value_type is ValueType.PERCENT:
        return _PERCENT.fullmatch(value) is not None
    if value_type is ValueType.MONEY:
        return _MONEY.fullmatch(value) is not None
    if value_type is ValueType.DURATION:
        return _DURATION.fullmatch(value) is not None
    if value_type is ValueType.DATE:
        try:
            date.fromisoformat(value)
        except ValueError:
            return False
        return True
    return bool(value.strip())


def check_against_ontology(gold: Iterable[GoldChunk], ontology: Ontology) -> list[str]:
    """Every problem that would make a gold label impossible under `ontology`; an empty list means none.

    Also checks internal consistency: relation endpoints and claim subjects must be listed among the chunk's
    entities with the same type, so entity recall and relation recall are measured over the same mentions.
    """
    problems: list[str] = []
    for chunk in gold:
        where = chunk.id
        listed = {(e.name, e.type) for e in chunk.entities}
        for entity in chunk.entities:
            if entity.type not in ontology.entity_types:
                problems.append(f"{where}: entity {entity.name!r} has unknown type {entity.type!r}")
        for rel in chunk.relations:
            label = f"{rel.subject} {rel.relation} {rel.object}"
            if rel.relation not in ontology.relation_types:
                problems.append(f"{where}: unknown relation {rel.relation!r} ({label})")
            elif not ontology.allows_triple(rel.subject_type, rel.relation, rel.object_type):
                problems.append(
                    f"{where}: ({rel.subject_type}, {rel.relation}, {rel.object_type}) is not allowed ({label})"
                )
            for name, type_ in ((rel.subject, rel.subject_type), (rel.object, rel.object_type)):
                if (name, type_) not in listed:
                    problems.append(f"{where}: relation endpoint {name!r} ({type_}) is not among the entities")
        for claim in chunk.claims:
            label = f"{claim.entity}.{claim.attribute}={claim.value!r}"
            attribute = ontology.attributes.get(claim.attribute)
            if attribute is None:
                problems.append(f"{where}: unknown attribute {claim.attribute!r} ({label})")
            elif not ontology.allows_attribute(claim.entity_type, claim.attribute):
                problems.append(f"{where}: {claim.entity_type} may not have {claim.attribute!r} ({label})")
            elif not _value_ok(attribute.value_type, claim.value):
                problems.append(f"{where}: value is not a {attribute.value_type.value} ({label})")
            if (claim.entity, claim.entity_type) not in listed:
                problems.append(
                    f"{where}: claim subject {claim.entity!r} ({claim.entity_type}) is not among the entities"
                )
    return problems
