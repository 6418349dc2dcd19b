"""Graph reads from the Neo4j projection while it is caught up; from PostgreSQL otherwise.

PostgreSQL is authoritative. The projection answers a read only when the watermark it holds (the graph
version the graph-writer last applied) has reached PostgreSQL's current graph version: any lag may be a
deletion or an ACL change not yet projected, so a projection that is behind by even one change, or does
not answer, is not read, and the read goes to PostgreSQL instead. Every read reports where it went and
why (`on_read`), so a fallback is counted, never silent.

The projection joins each merge cluster whole (its edges hang on canonical nodes), while PostgreSQL shows
a merge that rests on restricted evidence only to readers of that evidence (er_canonical.requires,
docs/security.md section 1). So a caller for whom such a merge exists is answered by PostgreSQL too
(`MERGE_SCOPED`): the projection answers only those to whom every cluster is shown whole.

The check costs three small reads per call (the sequence's value, one node by key); it is made per call, not
cached, because a cached "caught up" would serve the projection after a deletion committed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, TypeVar, runtime_checkable

from kgrag_core.extraction.records import ClaimRecord
from kgrag_core.graph import light
from kgrag_core.graph.model import Edge, EntityRef, EntitySummary
from kgrag_core.graph.ports import GraphReader

_T = TypeVar("_T")


@runtime_checkable
class VersionedGraph(GraphReader, Protocol):
    """The authoritative graph, with its current version."""

    def graph_version(self) -> int: ...

    def merges_shown_whole(self, acl_class_ids: Sequence[str] | None) -> bool:
        """Whether a caller reading these classes (None: every class) is shown every merge whole."""
        ...


@runtime_checkable
class ProjectedGraph(GraphReader, Protocol):
    """A projection of it, with the version it has applied (None before the first)."""

    def watermark(self) -> int | None: ...


class Route(StrEnum):
    PROJECTION = "projection"  # caught up: the projection answered
    BEHIND = "behind"  # the watermark is below the current version, or absent: PostgreSQL answered
    UNAVAILABLE = "unavailable"  # the projection raised: PostgreSQL answered
    MERGE_SCOPED = "merge_scoped"  # a merge this caller may not be shown exists: PostgreSQL answered


@dataclass
class RoutedGraphReader:
    """A GraphReader answering from `projection` while it is caught up with `primary`, else from `primary`.

    `unavailable` are the projection's connection and server errors: they send the read to `primary`;
    anything else (a bug) propagates. `on_read(route)` is called once per read.
    """

    primary: VersionedGraph
    projection: ProjectedGraph
    unavailable: tuple[type[Exception], ...]
    on_read: Callable[[Route], None] | None = None
    _counts: dict[Route, int] = field(default_factory=lambda: dict.fromkeys(Route, 0))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def counts(self) -> dict[Route, int]:
        """Reads so far, by route."""
        with self._lock:
            return dict(self._counts)

    def lag(self) -> int | None:
        """How many graph versions the projection is behind; None when it holds no watermark."""
        mark = self.projection.watermark()
        return None if mark is None else max(0, self.primary.graph_version() - mark)

    def _read(self, read: Callable[[GraphReader], _T], acl_class_ids: Sequence[str] | None) -> _T:
        try:
            # The version is read AFTER the watermark: a change committed in between makes it larger, never
            # smaller, so a race between the two reads can only send a read to PostgreSQL.
            mark = self.projection.watermark()
            if mark is None or mark < self.primary.graph_version():
                route = Route.BEHIND
            elif not self.primary.merges_shown_whole(acl_class_ids):
                route = Route.MERGE_SCOPED
            else:
                answer = read(self.projection)
                self._report(Route.PROJECTION)
                return answer
        except self.unavailable:
            route = Route.UNAVAILABLE
        self._report(route)
        return read(self.primary)

    def _report(self, route: Route) -> None:
        with self._lock:
            self._counts[route] += 1
        if self.on_read is not None:
            self.on_read(route)

    # --- GraphReader ----------------------------------------------------------------------------------------

    def entities_named(
        self, names: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, list[EntitySummary]]:
        return self._read(lambda g: g.entities_named(names, acl_class_ids), acl_class_ids)

    def entity(self, entity_id: str, acl_class_ids: Sequence[str] | None) -> EntitySummary | None:
        return self._read(lambda g: g.entity(entity_id, acl_class_ids), acl_class_ids)

    def hubs_among(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> set[str]:
        return self._read(lambda g: g.hubs_among(entity_ids, acl_class_ids), acl_class_ids)

    def neighbours(
        self,
        entity_id: str,
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> list[Edge]:
        return self._read(
            lambda g: g.neighbours(entity_id, acl_class_ids, relations=relations, limit=limit), acl_class_ids
        )

    def claims_of(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> list[ClaimRecord]:
        return self._read(lambda g: g.claims_of(entity_ids, acl_class_ids), acl_class_ids)

    def entities_by_id(
        self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, EntitySummary]:
        return self._read(lambda g: g.entities_by_id(entity_ids, acl_class_ids), acl_class_ids)

    def neighbours_by_id(
        self,
        entity_ids: Sequence[str],
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> dict[str, list[Edge]]:
        return self._read(
            lambda g: g.neighbours_by_id(entity_ids, acl_class_ids, relations=relations, limit=limit), acl_class_ids
        )

    def edges_among(
        self,
        entity_ids: Sequence[str],
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> dict[str, list[Edge]]:
        return self._read(
            lambda g: g.edges_among(entity_ids, acl_class_ids, relations=relations, limit=limit), acl_class_ids
        )

    # --- LightGraphReads (kgrag_core.graph.light): routed like every read, each side's own or its full reads --

    def entity_ids_named(self, names: Sequence[str], acl_class_ids: Sequence[str] | None) -> dict[str, list[str]]:
        return self._read(lambda g: light.ids_named(g, names, acl_class_ids), acl_class_ids)

    def entity_refs_by_id(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> dict[str, EntityRef]:
        return self._read(lambda g: light.refs_by_id(g, entity_ids, acl_class_ids), acl_class_ids)

    def edges_among_named(
        self, named: Mapping[str, EntityRef], acl_class_ids: Sequence[str] | None, *, limit: int = 50
    ) -> dict[str, list[Edge]]:
        return self._read(lambda g: light.edges_among_named(g, named, acl_class_ids, limit=limit), acl_class_ids)

    def claims_of_named(self, named: Mapping[str, EntityRef], acl_class_ids: Sequence[str] | None) -> list[ClaimRecord]:
        return self._read(lambda g: light.claims_of_named(g, named, acl_class_ids), acl_class_ids)
