"""Validation every tier's output passes before anything is stored: nothing unverified enters the graph.

An item survives only if its quote is found verbatim in its chunk (whitespace, quote marks and dashes
normalised, nothing fuzzier), its names occur in the chunk or its heading breadcrumb, its types, triple
and attribute are allowed by the ontology and its value parses as the attribute's type. Negation and
hedging in the quote become polarity and modality instead of a plain edge, read only from the part of
the quote about the item (see `qualifiers.scoped_polarity`). Every refusal is returned with its reason,
to be counted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kgrag_core.answering.quotes import normalise_for_quote, quote_in_text
from kgrag_core.extraction.model import (
    ClaimItem,
    DroppedItem,
    DropReason,
    EntityMention,
    Modality,
    Polarity,
    RelationItem,
)
from kgrag_core.extraction.ontology import Ontology
from kgrag_core.extraction.qualifiers import scoped_modality, scoped_polarity
from kgrag_core.extraction.values import check_value


@dataclass(frozen=True, slots=True)
class ValidatedItems:
    entities: tuple[EntityMention, ...]
    relations: tuple[RelationItem, ...]
    claims: tuple[ClaimItem, ...]
    dropped: tuple[DroppedItem, ...]


class _Drop(Exception):  # internal control flow, never escapes this module
    def __init__(self, reason: DropReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


# Participants of a conversation are not entities of the domain: "the assistant suggested X" says nothing
# about who owns X.
_PARTICIPANTS = frozenset(
    {"assistant", "the assistant", "ai", "the ai", "ai assistant", "bot", "the bot", "chatbot", "user", "the user"}
    | {"i", "me", "you", "we", "us", "they", "he", "she", "someone", "somebody"}
)
_SPEECH_VERBS = (
    r"(?:asked|asks|suggested|suggests|replied|replies|answered|answers|told|tells|thanked|thanks|wrote|writes"
    r"|mentioned|mentions|said|says|pinged|pings|cc'?d|forwarded|messaged|emailed|responded|responds|recommended"
    r"|recommends|confirmed|explained|agreed|noted|proposed)"
)
# The speech verb may only be separated from the name by an adverb or a "to" ("replied to").
_AFTER_SPEAKER = _SPEECH_VERBS + r"\b"
_BEFORE_ADDRESSEE = r"\b" + _SPEECH_VERBS + r"(?: to| with)?\s+$"
# What a ticket, project or plan is about holds as a fact even when its content is planned ("Project
# Lodestar will move Beacon ..." is a plan to migrate, but that Lodestar is about Beacon is a fact).
_DESCRIPTIVE_RELATIONS = frozenset({"ABOUT"})
# A value naming the state of a plan ("Status: Approved plan", "the migration ... is cancelled") is a fact
# about the plan; wording like "planned" in its quote is the value itself, not a sign that it is intended.
_PLAN_STATES = frozenset(
    {"approved", "planned", "proposed", "draft", "cancelled", "canceled", "shelved", "postponed", "deferred"}
    | {"rejected", "on hold", "paused", "abandoned", "approved plan", "in progress", "done", "completed"}
)


def _fold(text: str) -> str:
    return normalise_for_quote(text).casefold()


def _contains_name(haystack: str, name: str) -> bool:
    needle = _fold(name)
    return bool(needle) and needle in _fold(haystack)


def _named_in(chunk_text: str, context: str, name: str) -> bool:
    """Whether the chunk or its heading breadcrumb names `name` (a section titled "LEJ-2" is about LEJ-2)."""
    return _contains_name(chunk_text, name) or _contains_name(context, name)


def _require(kind: str, **fields: str) -> None:
    missing = [name for name, value in fields.items() if not value or not value.strip()]
    if missing:
        raise _Drop(DropReason.MISSING_FIELD, f"{kind} without {', '.join(missing)}")


def _is_participant(name: str) -> bool:
    return _fold(name) in _PARTICIPANTS


def _speaks_in(quote: str, name: str) -> bool:
    """Whether `name` appears in the quote only as speaker or addressee of a conversation verb."""
    text = _fold(quote)
    folded = _fold(name)
    escaped = re.escape(folded)
    speaker = re.search(rf"\b{escaped}\b\s+(?:\w+ly\s+)?{_AFTER_SPEAKER}", text)
    addressee = re.search(rf"{_BEFORE_ADDRESSEE}", text[: text.find(folded)]) if folded in text else None
    return speaker is not None or addressee is not None


def _qualified_polarity(polarity: Polarity, quote: str, first: str, last: str) -> Polarity:
    if scoped_polarity(quote, first, last) is Polarity.NEGATIVE:
        return Polarity.NEGATIVE
    return polarity


def _qualified_modality(modality: Modality, quote: str, names: tuple[str, ...]) -> Modality:
    if modality is not Modality.FACT:
        return modality  # the extractor's own reading of a non-fact is kept
    return scoped_modality(quote, names) or Modality.FACT


def _check_quote(kind: str, quote: str, chunk_text: str) -> None:
    if not quote_in_text(quote, chunk_text):
        raise _Drop(DropReason.QUOTE_NOT_FOUND, f"{kind} quote not found in the chunk: {quote[:120]!r}")


def _check_entity_type(ontology: Ontology, type_name: str) -> None:
    if type_name not in ontology.entity_types:
        raise _Drop(DropReason.UNKNOWN_ENTITY_TYPE, f"unknown entity type {type_name!r}")


def _check_dates(item: RelationItem | ClaimItem, label: str) -> None:
    if item.valid_from and item.valid_to and item.valid_from > item.valid_to:
        raise _Drop(
            DropReason.VALUE_TYPE_INVALID, f"{label}: valid_from {item.valid_from} after valid_to {item.valid_to}"
        )


def _entity(item: EntityMention, chunk_text: str, context: str, ontology: Ontology) -> EntityMention:
    _require("entity", name=item.name, type=item.type, quote=item.quote)
    label = f"{item.type} {item.name!r}"
    _check_entity_type(ontology, item.type)
    if _is_participant(item.name):
        raise _Drop(DropReason.CONVERSATION_MECHANICS, f"{label} is a conversation participant")
    _check_quote(label, item.quote, chunk_text)
    if not _named_in(chunk_text, context, item.name):
        raise _Drop(DropReason.QUOTE_NOT_FOUND, f"{label}: the name does not occur in the chunk")
    return item


def _relation(item: RelationItem, chunk_text: str, context: str, ontology: Ontology) -> RelationItem:
    _require(
        "relation",
        subject=item.subject,
        subject_type=item.subject_type,
        relation=item.relation,
        object=item.object,
        object_type=item.object_type,
        quote=item.quote,
    )
    label = f"{item.subject!r} -{item.relation}-> {item.object!r}"
    if item.relation not in ontology.relation_types:
        raise _Drop(DropReason.UNKNOWN_RELATION, f"{label}: unknown relation {item.relation!r}")
    _check_entity_type(ontology, item.subject_type)
    _check_entity_type(ontology, item.object_type)
    if not ontology.allows_triple(item.subject_type, item.relation, item.object_type):
        raise _Drop(
            DropReason.TRIPLE_NOT_ALLOWED,
            f"{label}: ({item.subject_type}, {item.relation}, {item.object_type}) is not allowed by the ontology",
        )
    if _is_participant(item.subject) or _is_participant(item.object):
        raise _Drop(DropReason.CONVERSATION_MECHANICS, f"{label}: an endpoint is a conversation participant")
    _check_quote(label, item.quote, chunk_text)
    for name in (item.subject, item.object):
        if not _named_in(chunk_text, context, name):
            raise _Drop(DropReason.ENDPOINT_NOT_IN_QUOTE, f"{label}: {name!r} does not occur in the chunk")
    if not (_contains_name(item.quote, item.subject) or _contains_name(item.quote, item.object)):
        raise _Drop(DropReason.ENDPOINT_NOT_IN_QUOTE, f"{label}: neither endpoint occurs in the quote")
    if _speaks_in(item.quote, item.subject) or _speaks_in(item.quote, item.object):
        raise _Drop(DropReason.CONVERSATION_MECHANICS, f"{label}: the quote relates them by a conversation verb")
    _check_dates(item, label)
    names = (item.subject, item.object)
    descriptive = item.relation in _DESCRIPTIVE_RELATIONS
    return replace(
        item,
        polarity=_qualified_polarity(item.polarity, item.quote, item.subject, item.object),
        modality=item.modality if descriptive else _qualified_modality(item.modality, item.quote, names),
    )


def _claim(item: ClaimItem, chunk_text: str, context: str, ontology: Ontology) -> ClaimItem:
    _require(
        "claim",
        entity=item.entity,
        entity_type=item.entity_type,
        attribute=item.attribute,
        value=item.value,
        quote=item.quote,
    )
    label = f"{item.entity!r}.{item.attribute}={item.value!r}"
    _check_entity_type(ontology, item.entity_type)
    attribute = ontology.attributes.get(item.attribute)
    if attribute is None:
        raise _Drop(DropReason.UNKNOWN_ATTRIBUTE, f"{label}: unknown attribute {item.attribute!r}")
    if not ontology.allows_attribute(item.entity_type, item.attribute):
        raise _Drop(DropReason.ATTRIBUTE_NOT_ALLOWED, f"{label}: {item.entity_type} has no {item.attribute}")
    if _is_participant(item.entity):
        raise _Drop(DropReason.CONVERSATION_MECHANICS, f"{label}: the entity is a conversation participant")
    value = check_value(attribute.value_type, item.value)
    if value is None:
        raise _Drop(DropReason.VALUE_TYPE_INVALID, f"{label}: not a valid {attribute.value_type.value}")
    _check_quote(label, item.quote, chunk_text)
    if not _named_in(chunk_text, context, item.entity):
        raise _Drop(DropReason.QUOTE_NOT_FOUND, f"{label}: the entity does not occur in the chunk")
    _check_dates(item, label)
    if _fold(item.value) in _PLAN_STATES:
        modality = item.modality
    else:
        modality = _qualified_modality(item.modality, item.quote, (item.entity, item.value))
    return replace(
        item,
        value=value,
        polarity=_qualified_polarity(item.polarity, item.quote, item.entity, item.value),
        modality=modality,
    )


def validate(
    chunk_id: str,
    chunk_text: str,
    entities: Sequence[EntityMention],
    relations: Sequence[RelationItem],
    claims: Sequence[ClaimItem],
    ontology: Ontology,
    *,
    context: str = "",
) -> ValidatedItems:
    """Keep what the chunk and the ontology support; return the rest as dropped items with their reasons.

    `context` is the chunk's heading breadcrumb ("LEJ-2 Leipzig site profile > Capacity"): a name found
    there counts as named by the chunk, since the heading says what the chunk is about. Quotes must still
    be found in `chunk_text` itself.
    """
    dropped: list[DroppedItem] = []
    kept_entities: list[EntityMention] = []
    kept_relations: list[RelationItem] = []
    kept_claims: list[ClaimItem] = []
    for entity in entities:
        try:
            kept_entities.append(_entity(entity, chunk_text, context, ontology))
        except _Drop as drop:
            dropped.append(DroppedItem("entity", drop.reason, f"{chunk_id}: {drop.detail}"))
    for relation in relations:
        try:
            kept_relations.append(_relation(relation, chunk_text, context, ontology))
        except _Drop as drop:
            dropped.append(DroppedItem("relation", drop.reason, f"{chunk_id}: {drop.detail}"))
    for claim in claims:
        try:
            kept_claims.append(_claim(claim, chunk_text, context, ontology))
        except _Drop as drop:
            dropped.append(DroppedItem("claim", drop.reason, f"{chunk_id}: {drop.detail}"))
    return ValidatedItems(tuple(kept_entities), tuple(kept_relations), tuple(kept_claims), tuple(dropped))
