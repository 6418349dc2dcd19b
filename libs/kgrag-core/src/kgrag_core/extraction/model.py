"""What extraction produces: typed mentions, relations and claims, each bound to a verbatim quote of its chunk.

Every tier returns the same shapes, so validation, caching, storage and evaluation treat them alike. Items
name entities by surface form and type; turning names into canonical entities is entity resolution's job,
not extraction's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from enum import IntEnum, StrEnum


class Tier(IntEnum):
    FILTER = 0  # boilerplate, low-information or duplicate: no extraction of its own
    MAPPING = 1  # deterministic mapping of structured records
    NER = 2  # statistical NER + entity ruler, within-sentence relation proposals
    LLM = 3  # schema-guided LLM extraction


class Modality(StrEnum):
    FACT = "fact"
    REPORTED = "reported"
    PLAN = "plan"
    OPINION = "opinion"
    HYPOTHETICAL = "hypothetical"
    AI_SUGGESTION = "ai_suggestion"


class Polarity(StrEnum):
    POSITIVE = "positive"
    NEGATIVE = "negative"


class SkipReason(StrEnum):
    """Why tier 0 kept a chunk away from the extractors (it stays searchable either way)."""

    BOILERPLATE = "boilerplate"
    LOW_INFORMATION = "low_information"
    EXACT_DUPLICATE = "exact_duplicate"
    NEAR_DUPLICATE = "near_duplicate"


class DropReason(StrEnum):
    """Why validation refused an item. Stable: reports and metrics count by these names."""

    QUOTE_NOT_FOUND = "quote_not_found"
    UNKNOWN_ENTITY_TYPE = "unknown_entity_type"
    UNKNOWN_RELATION = "unknown_relation"
    TRIPLE_NOT_ALLOWED = "triple_not_allowed"
    UNKNOWN_ATTRIBUTE = "unknown_attribute"
    ATTRIBUTE_NOT_ALLOWED = "attribute_not_allowed"
    VALUE_TYPE_INVALID = "value_type_invalid"
    CONVERSATION_MECHANICS = "conversation_mechanics"
    MISSING_FIELD = "missing_field"
    UNKNOWN_CHUNK = "unknown_chunk"
    ENDPOINT_NOT_IN_QUOTE = "endpoint_not_in_quote"


@dataclass(frozen=True, slots=True)
class EntityMention:
    name: str
    type: str
    quote: str
    confidence: float
    # Strong identifiers (email, domain, account id, ...) as (kind, value) pairs, sorted.
    strong_ids: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class RelationItem:
    subject: str
    subject_type: str
    relation: str
    object: str
    object_type: str
    quote: str
    confidence: float
    polarity: Polarity = Polarity.POSITIVE
    modality: Modality = Modality.FACT
    valid_from: date | None = None
    valid_to: date | None = None


@dataclass(frozen=True, slots=True)
class ClaimItem:
    """A dated statement about one attribute of one entity. The date it was written is the chunk's."""

    entity: str
    entity_type: str
    attribute: str
    value: str
    quote: str
    confidence: float
    polarity: Polarity = Polarity.POSITIVE
    modality: Modality = Modality.FACT
    valid_from: date | None = None
    valid_to: date | None = None


@dataclass(frozen=True, slots=True)
class DroppedItem:
    kind: str  # entity | relation | claim
    reason: DropReason
    detail: str


@dataclass(frozen=True, slots=True)
class ExtractionKey:
    """The cache key: an unchanged chunk under the same extractor and ontology never costs a second call."""

    content_hash: str
    extractor_version: str
    ontology_version: str


@dataclass(frozen=True, slots=True)
class ChunkExtraction:
    """The validated outcome of extracting one chunk (or of reusing its representative's extraction)."""

    chunk_id: str
    key: ExtractionKey
    tier: Tier
    entities: tuple[EntityMention, ...] = ()
    relations: tuple[RelationItem, ...] = ()
    claims: tuple[ClaimItem, ...] = ()
    dropped: tuple[DroppedItem, ...] = ()
    skip_reason: SkipReason | None = None
    # For a duplicate: the chunk whose extraction this one reuses (evidence is still checked in this chunk).
    representative_chunk_id: str | None = None
    # Tier 3 wanted this chunk but could not run (no model configured, budget spent, reply quarantined).
    pending_llm: bool = False

    @property
    def item_count(self) -> int:
        return len(self.entities) + len(self.relations) + len(self.claims)


@dataclass(frozen=True, slots=True)
class Quarantined:
    """A model reply that never became data: not JSON after one retry, or not the shape the schema asks for."""

    chunk_ids: tuple[str, ...]
    reason: str
    reply: str
    extractor_version: str


@dataclass(slots=True)
class DropCounts:
    """Dropped items by (tier, reason): what validation refused, reported next to what it kept."""

    counts: dict[tuple[int, str], int] = field(default_factory=dict)

    def add(self, tier: Tier, dropped: tuple[DroppedItem, ...]) -> None:
        for item in dropped:
            key = (int(tier), item.reason.value)
            self.counts[key] = self.counts.get(key, 0) + 1
