"""Ports of communities. Reads here are raw (an administrator's view); what a caller sees is filtered by
the graph reader's visibility (`kgrag_core.communities.visible`), never by this store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from kgrag_core.communities.model import Community, GraphEdge


@runtime_checkable
class LevelSizes(Protocol):
    """A store that counts a level without reading its communities (at 100k entities, thousands of them with
    every member): what the GLOBAL route asks before each question."""

    def level_size(self, level: int) -> int: ...


def level_size(store: CommunityStore, level: int) -> int:
    """How many communities the level holds: the store's own count, else the length of its listing."""
    if isinstance(store, LevelSizes):
        return store.level_size(level)
    return len(store.communities(level))


@runtime_checkable
class CommunityStore(Protocol):
    """Every adapter passes `kgrag_testing.contracts.community_store`."""

    def replace_all(self, communities: Sequence[Community]) -> None:
        """A full build: drop every community and write these, in one transaction."""
        ...

    def replace(self, removed_ids: Sequence[str], communities: Sequence[Community]) -> None:
        """An incremental build: drop these communities (and their descendants) and upsert the new ones,
        in one transaction; the rest are untouched."""
        ...

    def communities(self, level: int | None = None) -> list[Community]:
        """All communities (of this level), largest first, then by id."""
        ...

    def community(self, community_id: str) -> Community | None: ...

    def communities_of(self, entity_ids: Sequence[str], level: int | None = None) -> list[Community]:
        """The communities with any of these canonical entities as a member, largest first."""
        ...

    def children(self, community_id: str) -> list[Community]: ...

    def mark_stale(self, entity_ids: Sequence[str]) -> list[str]:
        """Mark every community with any of these members stale; return their ids, sorted."""
        ...

    def stale(self) -> list[Community]: ...

    def delete_touching(self, entity_ids: Sequence[str]) -> list[str]:
        """Drop every community with any of these members (and its descendants); return the ids, sorted."""
        ...

    def counts(self) -> Mapping[str, int]:
        """{"communities", "stale", "levels"} for metrics and status."""
        ...


@runtime_checkable
class CommunityGraphSource(Protocol):
    """The resolved entity graph as clustering needs it: canonical ids only, every active document counts
    (like resolution: clusters are global; visibility is applied when a caller reads them)."""

    def graph_version(self) -> int: ...

    def community_edges(self, entity_ids: Sequence[str] | None = None) -> list[GraphEdge]:
        """Aggregated undirected edges between canonical entities (only edges with both ends in
        `entity_ids` when given), sorted by (a, b). Self-loops (a merge's members) are dropped."""
        ...

    def community_entities(self, entity_ids: Sequence[str] | None = None) -> list[str]:
        """Canonical entities with live evidence (of these ids when given), sorted; isolated ones included."""
        ...

    def hub_entities(self) -> set[str]:
        """Canonical entities labelled hubs (`ResolutionStore.label_hubs`)."""
        ...

    def entities_of_documents(self, doc_ids: Sequence[str]) -> list[str]:
        """Canonical entities with a mention or an edge endpoint in these documents' chunks, sorted."""
        ...


@runtime_checkable
class CommunityDetector(Protocol):
    """A clustering library behind a port: partitions one level of a weighted graph, deterministically."""

    @property
    def version(self) -> str: ...

    def partition(
        self, nodes: Sequence[str], edges: Sequence[GraphEdge], *, seed: int, resolution: float
    ) -> list[list[str]]:
        """Disjoint groups covering `nodes`, each sorted, the list sorted by (-size, first member)."""
        ...
