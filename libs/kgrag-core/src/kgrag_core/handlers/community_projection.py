"""Keep a projection of the communities (Neo4j in distributed mode) equal to PostgreSQL.

PostgreSQL is authoritative (`kg_communities`, `kg_community_members`, migration 0027); the projection is
a read model rebuilt from it. Every sync compares the two stores' headers (id, level, parent, stale flag,
graph version, content hash: no member list), deletes what PostgreSQL no longer holds, and rewrites only
the communities whose header differs. A community's id is a hash of its level and members, so a change of
membership is a new id (the old one is removed) and an unchanged header means unchanged members: one sync
after any number of builds, replays or lost runs leaves the projection equal to PostgreSQL, and syncing
an empty projection is the rebuild.

Who runs it: the community-builder, after each batch's PostgreSQL commit (it is the only writer of
communities, so no topic is needed). A deletion or ACL change marks communities stale in PostgreSQL in its
own transaction and reaches the builder as the graph.changed its re-extraction announces; the builder
reclusters them and the sync that follows drops the old ones from the projection too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kgrag_core.communities.model import Community
from kgrag_core.events import ENTITIES_CHANGED, GRAPH_CHANGED
from kgrag_core.handlers.protocol import HandlerResult

# Communities written per projection call: bounds one Neo4j transaction (members included).
WRITE_BATCH = 500


@dataclass(frozen=True, slots=True)
class CommunityHeader:
    """What tells two copies of a community apart (members follow from the id)."""

    community_id: str
    level: int
    parent_id: str | None
    stale: bool
    graph_version: int
    content_hash: str


def header_of(c: Community) -> CommunityHeader:
    return CommunityHeader(c.community_id, c.level, c.parent_id, c.stale, c.graph_version, c.content_hash)


@runtime_checkable
class CommunitySource(Protocol):
    """The authoritative communities (PostgreSQL)."""

    def community_headers(self) -> list[CommunityHeader]: ...

    def communities_by_id(self, community_ids: Sequence[str]) -> list[Community]: ...

    def exclusive(self, name: str) -> AbstractContextManager[None]:
        """Hold the lock `name` while the block runs: a sync reads the source, then writes the projection,
        and two syncs interleaving could leave the older read written last."""
        ...


@runtime_checkable
class CommunityProjection(Protocol):
    """The projected communities (Neo4j)."""

    @property
    def namespace(self) -> str: ...

    def community_headers(self) -> list[CommunityHeader]: ...

    def members(self, community_id: str) -> list[str]:
        """The projected members of one community, sorted."""
        ...

    def put_communities(self, communities: Sequence[Community]) -> None:
        """Upsert each community with exactly its members and its parent link."""
        ...

    def drop_communities(self, community_ids: Sequence[str]) -> None:
        """Remove them, and every member node no remaining community holds."""
        ...


@dataclass(frozen=True, slots=True)
class CommunitySyncReceipt:
    written: int
    removed: int
    unchanged: int


def sync_communities(source: CommunitySource, target: CommunityProjection) -> CommunitySyncReceipt:
    with source.exclusive(f"kgrag-community-projection:{target.namespace}"):
        have = {h.community_id: h for h in target.community_headers()}
        want = {h.community_id: h for h in source.community_headers()}
        removed = sorted(set(have) - set(want))
        # Parents (lower levels) first, so a child's PARENT link finds its parent already written.
        changed = sorted((h for i, h in want.items() if have.get(i) != h), key=lambda h: (h.level, h.community_id))
        if removed:
            target.drop_communities(removed)
        ids = [h.community_id for h in changed]
        for start in range(0, len(ids), WRITE_BATCH):
            target.put_communities(source.communities_by_id(ids[start : start + WRITE_BATCH]))
    return CommunitySyncReceipt(len(changed), len(removed), len(want) - len(changed))


@dataclass(slots=True)
class CommunityProjectionHandler:
    """After the community builder (same batch, same consumer): sync the projection. The events' payloads
    are the builder's to check; any batch means communities may have changed."""

    source: CommunitySource
    target: CommunityProjection
    name: str = "community-projection"
    topics: tuple[str, ...] = (GRAPH_CHANGED, ENTITIES_CHANGED)
    last_receipt: CommunitySyncReceipt | None = None

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        if batch:
            self.last_receipt = sync_communities(self.source, self.target)
        return HandlerResult()
