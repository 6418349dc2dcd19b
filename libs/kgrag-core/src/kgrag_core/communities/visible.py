"""A community as one caller may see it: members filtered by the graph reader's visibility (the entity is
visible, and an edge the caller sees ties it to another member), the size counted over those members
only, and nothing at all when no member is left (as for an unknown id).

What a caller never gets: members only restricted evidence names, the edge weight and the content hash
(both follow restricted edges too), and a size or a ranking that counts what they cannot see. Summaries per
access scope build on this (G2, docs/communities.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from kgrag_core.communities.model import Community
from kgrag_core.graph.model import EntityRef
from kgrag_core.graph.ports import GraphReader

TIE_EDGES = 200  # a member's strongest visible edges looked through for a tie inside its community


@dataclass(frozen=True, slots=True)
class VisibleCommunity:
    community_id: str
    level: int
    parent_id: str | None
    members: tuple[EntityRef, ...]  # visible canonical entities, by name then id
    stale: bool
    built_at: datetime
    graph_version: int
    weight: float | None = None  # administrators only
    content_hash: str | None = None  # administrators only

    @property
    def size(self) -> int:
        return len(self.members)

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "community_id": self.community_id,
            "level": self.level,
            "parent_id": self.parent_id,
            "size": self.size,
            "members": [{"entity_id": m.entity_id, "name": m.name, "type": m.type} for m in self.members],
            "stale": self.stale,
            "built_at": self.built_at.isoformat(),
            "graph_version": self.graph_version,
        }
        if self.weight is not None:
            out["weight"] = self.weight
            out["content_hash"] = self.content_hash
        return out


def visible_community(
    community: Community, reader: GraphReader, acl_class_ids: Sequence[str] | None
) -> VisibleCommunity | None:
    """`acl_class_ids=None`: an administrator (every member, weight and hash)."""
    members: list[EntityRef] = []
    inside = set(community.member_ids)
    for entity_id in community.member_ids:
        summary = reader.entity(entity_id, acl_class_ids)
        if summary is not None and (acl_class_ids is None or _tied_visibly(reader, entity_id, inside, acl_class_ids)):
            members.append(summary.entity)
    if not members:
        return None
    admin = acl_class_ids is None
    return VisibleCommunity(
        community_id=community.community_id,
        level=community.level,
        parent_id=community.parent_id,
        members=tuple(sorted(members, key=lambda m: (m.name.casefold(), m.entity_id))),
        stale=community.stale,
        built_at=community.built_at,
        graph_version=community.graph_version,
        weight=community.weight if admin else None,
        content_hash=community.content_hash if admin else None,
    )


def _tied_visibly(reader: GraphReader, entity_id: str, inside: set[str], acl_class_ids: Sequence[str]) -> bool:
    """Whether an edge the caller sees ties the entity to another member: membership that rests only on
    restricted edges would tell the caller those entities are related. Fails closed past `TIE_EDGES`."""
    for edge in reader.neighbours(entity_id, acl_class_ids, limit=TIE_EDGES):
        other = edge.object if edge.subject.entity_id == entity_id else edge.subject
        if other.entity_id != entity_id and other.entity_id in inside:
            return True
    return False


def visible_communities(
    communities: Sequence[Community], reader: GraphReader, acl_class_ids: Sequence[str] | None, *, limit: int
) -> list[VisibleCommunity]:
    """The caller's view of these, largest (by visible size) first, then by id; at most `limit`."""
    seen = [v for c in communities if (v := visible_community(c, reader, acl_class_ids)) is not None]
    seen.sort(key=lambda v: (v.level, -v.size, v.community_id))
    return seen[:limit]
