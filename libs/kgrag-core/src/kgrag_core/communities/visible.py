"""A community as one caller may see it: members filtered by the graph reader's visibility (the entity is
visible, and an edge the caller sees ties it to another member), the size counted over those members
only, and nothing at all when no member is left (as for an unknown id).

What a caller never gets: members only restricted evidence names, the edge weight and the content hash
(both follow restricted edges too), and a size or a ranking that counts what they cannot see. Summaries per
access scope build on this (G2, docs/communities.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from kgrag_core.communities.model import Community
from kgrag_core.graph.model import Edge, EntityRef, EntitySummary
from kgrag_core.graph.ports import GraphReader

TIE_EDGES = 200  # a member's strongest visible edges inside its community looked through for a tie


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


BATCH = 500  # member ids per batched graph read


def visible_community(
    community: Community, reader: GraphReader, acl_class_ids: Sequence[str] | None
) -> VisibleCommunity | None:
    """`acl_class_ids=None`: an administrator (every member, weight and hash)."""
    [seen] = _visible([community], reader, acl_class_ids)
    return seen


def visible_communities(
    communities: Sequence[Community], reader: GraphReader, acl_class_ids: Sequence[str] | None, *, limit: int
) -> list[VisibleCommunity]:
    """The caller's view of these, largest (by visible size) first, then by id; at most `limit`."""
    seen = [v for v in _visible(communities, reader, acl_class_ids) if v is not None]
    seen.sort(key=lambda v: (v.level, -v.size, v.community_id))
    return seen[:limit]


def _visible(
    communities: Sequence[Community], reader: GraphReader, acl_class_ids: Sequence[str] | None
) -> list[VisibleCommunity | None]:
    """Each community's view, their members read together in batches (a few queries per batch instead of
    one per member), and the edges among each community's visible members in one read per community; every
    member is read exactly as `entity` would read it, and its edges as `neighbours` would, kept to those
    inside the community."""
    ids = list(dict.fromkeys(m for c in communities for m in c.member_ids))
    found: dict[str, EntitySummary] = {}
    for start in range(0, len(ids), BATCH):
        found.update(reader.entities_by_id(ids[start : start + BATCH], acl_class_ids))
    out: list[VisibleCommunity | None] = []
    for community in communities:
        edges: Mapping[str, Sequence[Edge]] = {}
        shown = [i for i in dict.fromkeys(community.member_ids) if i in found]
        if acl_class_ids is not None and shown:  # an administrator sees every member; no tie is checked
            # The edges among the community's own visible members: a tie is one of them, and no end outside
            # the community is read (naming a hub at the far end of a member's edge costs a read of its evidence).
            edges = reader.edges_among(shown, acl_class_ids, limit=TIE_EDGES)
        out.append(_one(community, found, edges, acl_class_ids))
    return out


def _one(
    community: Community,
    found: Mapping[str, EntitySummary],
    edges: Mapping[str, Sequence[Edge]],
    acl_class_ids: Sequence[str] | None,
) -> VisibleCommunity | None:
    members: list[EntityRef] = []
    inside = set(community.member_ids)
    for entity_id in community.member_ids:
        summary = found.get(entity_id)
        if summary is None:
            continue
        if acl_class_ids is None or _tied_visibly(edges.get(entity_id, ()), entity_id, inside):
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


def _tied_visibly(edges: Sequence[Edge], entity_id: str, inside: set[str]) -> bool:
    """Whether an edge the caller sees (of the member's strongest `TIE_EDGES` inside the community) ties the
    entity to another member: membership that rests only on restricted edges would tell the caller those
    entities are related. Only self-loops can fill those `TIE_EDGES` without a tie (fails closed then)."""
    for edge in edges:
        other = edge.object if edge.subject.entity_id == entity_id else edge.subject
        if other.entity_id != entity_id and other.entity_id in inside:
            return True
    return False
