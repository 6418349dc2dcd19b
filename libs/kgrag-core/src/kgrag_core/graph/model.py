"""The knowledge graph as readers see it: canonical entities, edges and claims, each visible through evidence.

Extraction stores mention-level entities keyed deterministically (type + name or a strong identifier).
Entity resolution groups them into canonical entities without rewriting any fact: a mapping layer with a
merge log, so a split restores exactly what was there. Every edge and claim is visible to a caller only
through evidence chunks the caller may read; counts and degrees use visible evidence only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date
from enum import StrEnum

from kgrag_core.extraction.model import Modality, Polarity


@dataclass(frozen=True, slots=True)
class EntityProfile:
    """One mention-level entity as resolution sees it: its names, identifiers, type and context."""

    entity_id: str
    type: str
    name: str
    aliases: tuple[str, ...] = ()  # other surface forms it was mentioned by
    strong_ids: tuple[tuple[str, str], ...] = ()
    attributes: tuple[tuple[str, str], ...] = ()  # (attribute, value) from its claims
    neighbours: tuple[str, ...] = ()  # entity ids it shares an edge with
    context: str = ""  # a little text around its mentions, for the context embedding
    mentions: int = 1
    # What each ACL class's evidence says of it (names, identifiers): whether a merge rests on evidence a
    # reader who sees both sides can read (docs/security.md, section 1). Empty: not known, judged as one scope.
    scopes: tuple[ScopedEvidence, ...] = ()


@dataclass(frozen=True, slots=True)
class ScopedEvidence:
    """The names and strong identifiers one ACL class's chunks give an entity (mentions; relation and claim
    evidence name it by the entity's visible name)."""

    acl_class_id: str
    names: tuple[str, ...]
    strong_ids: tuple[tuple[str, str], ...] = ()


class DecisionKind(StrEnum):
    MERGE = "merge"
    REVIEW = "review"  # "possibly same as": queued for a person
    SEPARATE = "separate"


@dataclass(frozen=True, slots=True)
class PairDecision:
    a: str
    b: str
    kind: DecisionKind
    score: float
    features: tuple[tuple[str, float], ...]
    rule: str  # the hard constraint or threshold that decided it
    # A merge resting on evidence some reader who sees both sides cannot read: the ACL classes a reader must
    # hold (all of them) to be shown it. Empty: everyone who sees both sides may see the merge.
    requires: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MergeRecord:
    """One entry of the merge log: enough to undo the merge exactly."""

    merge_id: str
    canonical_id: str
    members: tuple[str, ...]  # the entity ids moved under canonical_id by this merge
    basis: tuple[PairDecision, ...]
    decided_by: str  # auto | review | override
    reverted: bool = False
    decider: str | None = None  # the admin token's `sub` that decided it (None: resolution, the CLI)
    reverted_by: str | None = None  # the `sub` that split it


@dataclass(frozen=True, slots=True)
class EntityRef:
    entity_id: str  # canonical
    name: str
    type: str


@dataclass(frozen=True, slots=True)
class Edge:
    """A relation between canonical entities with the evidence the caller may see (never empty)."""

    relation_id: str
    subject: EntityRef
    relation: str
    object: EntityRef
    polarity: Polarity
    modality: Modality
    valid_from: date | None
    valid_to: date | None
    evidence_chunk_ids: tuple[str, ...]
    confidence: float
    latest_written: date | None = None  # the newest date among its visible evidence
    first_written: date | None = None  # the oldest: when the documents first said so

    @property
    def evidence_count(self) -> int:
        return len(self.evidence_chunk_ids)


@dataclass(frozen=True, slots=True)
class EntitySummary:
    entity: EntityRef
    aliases: tuple[str, ...] = ()
    strong_ids: tuple[tuple[str, str], ...] = ()
    degree: int = 0  # visible edges
    is_hub: bool = False
    members: tuple[str, ...] = ()  # mention-level entity ids resolved into it


@dataclass(frozen=True, slots=True)
class TraversalStep:
    edge: Edge
    depth: int
    score: float


def hub_not_passed(name: str) -> str:
    """How a walk that stopped at a hub says so: one wording for the graph layer and the entity reads."""
    return f"hub not passed: {name}"


@dataclass(slots=True)
class Traversal:
    """What a bounded expansion found, and what it had to leave out."""

    seeds: list[EntityRef] = field(default_factory=list)
    steps: list[TraversalStep] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)  # e.g. "fan-out", "time budget", hub_not_passed("Atlas")


@dataclass(frozen=True, slots=True)
class SenseSplit:
    """One entry of the split log: the mentions of `from_id` in `doc_ids` stand for `entity_id` instead.

    Namesakes ("Acme" the customer, "Acme" the vendor) are one extracted entity until a split separates their
    documents; extraction keys those documents' mentions into the sense again on every later save.
    """

    split_id: str
    from_id: str
    entity_id: str
    doc_ids: tuple[str, ...]
    decided_by: str  # auto (resolution) | override (a curator)
    reason: str = ""
    basis: tuple[PairDecision, ...] = ()


@dataclass(frozen=True, slots=True)
class DocumentProfile:
    """What one document says about one extracted entity (its namesake check); `profile.entity_id` is
    `<entity>@<doc>`, so two documents' profiles of one entity can be compared like two entities."""

    entity_id: str
    doc_id: str
    profile: EntityProfile


def document_profile(entity_id: str, doc_id: str, profile: EntityProfile) -> DocumentProfile:
    return DocumentProfile(entity_id, doc_id, replace(profile, entity_id=f"{entity_id}@{doc_id}"))
