"""Building and refreshing communities: a full rebuild, or a local re-run over the affected subgraph.

Incremental refresh: the level-0 communities that have a changed entity as a member are the affected
ones; their members plus the changed entities (a document's new relation has both its ends among them,
so a new tie between two communities pulls both in) are reclustered alone, with the edges among them,
and replace exactly those communities (and their children). The rest are untouched: not read, not
rewritten. A full rebuild (`kgrag communities rebuild`, or the periodic job) re-partitions everything."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from kgrag_core.communities.building import BuildSettings, build_hierarchy, roots_of
from kgrag_core.communities.model import BuildReport, Community, GraphEdge, RebuildPlan
from kgrag_core.communities.ports import CommunityDetector, CommunityGraphSource, CommunityStore


def _now() -> datetime:
    return datetime.now(UTC)


class CommunityService:
    def __init__(
        self,
        store: CommunityStore,
        source: CommunityGraphSource,
        detector: CommunityDetector,
        settings: BuildSettings | None = None,
        *,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self.store = store
        self.source = source
        self.detector = detector
        self.settings = settings or BuildSettings()
        self._clock = clock

    def plan(self, *, full: bool = True) -> RebuildPlan:
        """What `rebuild` (full) or `refresh_stale` (not full) would recluster; reads only, writes nothing."""
        stale = self.store.stale()
        if full:
            entities = self.source.community_entities()
            return RebuildPlan(
                True, len(self.store.communities()), len(entities), len(self.source.community_edges()), len(stale)
            )
        roots = [c for c in stale if c.level == 0]
        nodes = self.source.community_entities(sorted({m for c in roots for m in c.member_ids}))
        removed = roots_of(stale) + [c.community_id for c in stale if c.level > 0]
        return RebuildPlan(False, len(set(removed)), len(nodes), len(self.source.community_edges(nodes)), len(stale))

    def rebuild(self) -> BuildReport:
        started = time.perf_counter()
        version = self.source.graph_version()
        nodes = self.source.community_entities()
        edges = self.source.community_edges()
        built = self._build(nodes, edges, version)
        removed = len(self.store.communities())
        self.store.replace_all(built)
        return self._report(True, version, removed, built, len(nodes), len(edges), started)

    def mark_documents_changed(self, doc_ids: Sequence[str]) -> list[str]:
        """Mark stale the communities whose members these documents name; the ids marked."""
        return self.store.mark_stale(self.source.entities_of_documents(doc_ids))

    def refresh(self, entity_ids: Sequence[str]) -> BuildReport:
        """Recluster only the level-0 communities with any of these (canonical) entities as a member."""
        started = time.perf_counter()
        version = self.source.graph_version()
        roots = self.store.communities_of(entity_ids, level=0)
        return self._recluster(roots, entity_ids, version, started)

    def refresh_stale(self) -> BuildReport:
        """Recluster the stale communities (the background job after a deletion or an ACL change)."""
        started = time.perf_counter()
        version = self.source.graph_version()
        # Marking stale reaches every level a member is in, so the stale level-0 ones cover the rest.
        roots = [c for c in self.store.stale() if c.level == 0]
        return self._recluster(roots, (), version, started)

    def _recluster(
        self, roots: Sequence[Community], entity_ids: Sequence[str], version: int, started: float
    ) -> BuildReport:
        candidates = sorted({m for c in roots for m in c.member_ids} | set(entity_ids))
        nodes = self.source.community_entities(candidates) if candidates else []
        edges = self.source.community_edges(nodes) if nodes else []
        built = self._build(nodes, edges, version)
        removed = [c.community_id for c in roots]
        self.store.replace(removed, built)
        return self._report(False, version, len(removed), built, len(nodes), len(edges), started)

    def _build(self, nodes: Sequence[str], edges: Sequence[GraphEdge], version: int) -> list[Community]:
        hubs = self.source.hub_entities()
        return build_hierarchy(
            nodes, edges, hubs, self.detector, self.settings, graph_version=version, built_at=self._clock()
        )

    @staticmethod
    def _report(
        full: bool, version: int, removed: int, built: Sequence[Community], nodes: int, edges: int, started: float
    ) -> BuildReport:
        levels = 1 + max((c.level for c in built), default=-1)
        return BuildReport(full, version, removed, len(built), nodes, edges, levels, time.perf_counter() - started)
