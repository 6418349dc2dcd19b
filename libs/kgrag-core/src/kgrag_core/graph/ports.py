"""Ports of the knowledge graph: resolution state and graph reads. PostgreSQL is authoritative for both;
Neo4j serves the reads in distributed mode. Every adapter passes `kgrag_testing.contracts.graph_store`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kgrag_core.extraction.records import ClaimRecord
from kgrag_core.graph.model import (
    DocumentProfile,
    Edge,
    EntityProfile,
    EntitySummary,
    MergeRecord,
    PairDecision,
    SenseSplit,
)


@runtime_checkable
class GraphReader(Protocol):
    """Reads over canonical entities; `acl_class_ids=None` means an administrator (everything)."""

    def entities_named(
        self, names: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, list[EntitySummary]]:
        """Alias index: normalised name -> the visible canonical entities known by it (ambiguity kept)."""
        ...

    def entity(self, entity_id: str, acl_class_ids: Sequence[str] | None) -> EntitySummary | None:
        """A canonical entity (a member's id resolves to its canonical one) as this caller sees it: id, name,
        type, aliases and strong ids from visible members only. None when no visible evidence names
        `entity_id` itself, exactly as for an unknown id."""
        ...

    def hubs_among(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> set[str]:
        """Which of these visible ids (members resolve to their canonical id) name a hub to this caller:
        labelled one by `label_hubs` AND with at least the labelling degree of edges the caller sees. The
        label narrows the count to the few hubs; an invisible id is never a hub."""
        ...

    def neighbours(
        self,
        entity_id: str,
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> list[Edge]:
        """Edges touching the entity with at least one visible evidence chunk, strongest first ([] when no
        visible evidence names `entity_id`)."""
        ...

    def claims_of(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> list[ClaimRecord]:
        """Claims about canonical entities, with status computed over visible claims."""
        ...

    def entities_by_id(
        self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, EntitySummary]:
        """`entity` for many ids in one read (one snapshot): each given id whose `entity` is not None, keyed
        by the id as given; an id `entity` answers None for is absent, exactly as an unknown one."""
        ...

    def neighbours_by_id(
        self,
        entity_ids: Sequence[str],
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> dict[str, list[Edge]]:
        """`neighbours` for many ids in one read: every given id maps to what `neighbours` returns for it
        with the same `limit` (per id), [] for an invisible or unknown one."""
        ...

    def edges_among(
        self,
        entity_ids: Sequence[str],
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> dict[str, list[Edge]]:
        """The visible edges inside a set of entities (a community's members), in one read: every given id
        maps to what `neighbours` returns for it with no limit, kept to the edges whose other end is the
        canonical entity of a visible given id, then cut to the strongest `limit`; [] for an invisible or
        unknown id. No far end outside the set is read or named (a hub's name costs a read of its evidence)."""
        ...


@runtime_checkable
class ContextVectorSource(Protocol):
    """The vectors the indexer already computed for the chunks an entity is mentioned in."""

    def context_chunk_vectors(
        self, entity_ids: Sequence[str], model_id: str, limit: int
    ) -> dict[str, list[tuple[float, ...]]]:
        """For each entity, the stored `model_id` vectors of up to `limit` distinct chunks that mention it,
        its most confident mention's chunk first (the chunks `profiles` quotes). Like `profiles`, every
        active document counts, whatever its ACL: resolution is global, and the vectors only ever reach a
        merge decision. An entity none of whose chunks has a stored vector is left out. No model is called.
        """
        ...


@dataclass(frozen=True, slots=True)
class ResolutionScope:
    """What an incremental pass reads (`entities`) and which of those its documents changed (`changed`)."""

    changed: tuple[str, ...]  # the entities the documents' chunks name now
    entities: tuple[str, ...]  # those, their block-mates and their clusters' members, sorted


@runtime_checkable
class ResolutionStore(Protocol):
    def profiles(self, entity_ids: Sequence[str] | None = None) -> list[EntityProfile]:
        """Mention-level entities to resolve (all when None), with names, ids, attributes, neighbours."""
        ...

    def entities_near_documents(self, doc_ids: Sequence[str]) -> list[str]:
        """What an incremental pass after these documents changed must compare: the entities their chunks
        name now, every entity whose name or surface form shares a name token with theirs or that shares a
        strong identifier with one of them, and every member of those entities' clusters; sorted."""
        ...

    def incremental_scope(self, doc_ids: Sequence[str], max_token_entities: int) -> ResolutionScope:
        """As `entities_near_documents`, but a name token is followed only within the entity's type and only
        while at most `max_token_entities` entities of that type hold it (blocking skips a larger block, so
        its members could never pair through it), and the documents' own entities are told apart."""
        ...

    def canonical_of(self, entity_ids: Sequence[str]) -> dict[str, str]: ...

    def apply_merge(self, record: MergeRecord) -> None: ...

    def apply_merges(self, records: Sequence[MergeRecord]) -> None:
        """`apply_merge` for each, in order and as one write (what a resolution pass applies)."""
        ...

    def revert_merge(self, merge_id: str, *, by: str | None = None) -> MergeRecord:
        """Undo a merge exactly: its members map to themselves again. Raises ENTITY_NOT_FOUND if unknown."""
        ...

    def merge_log(self, limit: int = 100) -> list[MergeRecord]: ...

    def queue_for_review(self, pairs: Sequence[PairDecision]) -> None: ...

    def review_queue(self, limit: int = 100) -> list[PairDecision]: ...

    def decide_review(self, a: str, b: str, same: bool) -> None: ...

    def label_hubs(self, min_degree: int) -> int:
        """Mark canonical entities with at least this many distinct edges as hubs; return how many."""
        ...

    def split_mentions(
        self,
        entity_id: str,
        doc_ids: Sequence[str],
        *,
        decided_by: str = "override",
        reason: str = "",
        basis: Sequence[PairDecision] = (),
    ) -> SenseSplit:
        """Move the entity's mentions (and facts) in these documents to a sense of their own, logged, and key
        those documents' later mentions of it into that sense (namesakes)."""
        ...

    def document_profiles(self, entity_ids: Sequence[str]) -> list[DocumentProfile]:
        """Per entity named in two documents or more, one profile per document: what that document's mentions
        carried (names, strong ids), its claims' attributes and a little of its text (namesake detection)."""
        ...

    def kept_apart(self) -> list[tuple[str, str]]:
        """(entity, sense) of every split: pairs resolution must not merge on its own."""
        ...
