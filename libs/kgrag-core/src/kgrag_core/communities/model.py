"""What a community is. Ids and hashes never encode names: an id is a hash of the level and sorted member
ids, so it leaks nothing a caller could not already see by reading the (filtered) member list."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """One undirected, aggregated edge between two canonical entities (all relations between them)."""

    a: str  # canonical entity id, a < b
    b: str
    weight: float  # sum over relations of evidence count x confidence
    relation_ids: tuple[str, ...] = ()  # sorted; what the content hash follows


@dataclass(frozen=True, slots=True)
class Community:
    community_id: str
    level: int  # 0 = top
    parent_id: str | None  # the community one level up (None at level 0)
    member_ids: tuple[str, ...]  # canonical entity ids, sorted
    weight: float  # total weight of the edges inside it
    graph_version: int  # the graph version it was built from
    built_at: datetime
    stale: bool = False  # a member or an internal edge changed since it was built
    content_hash: str = ""  # members + internal edges: a summary cache key (changes when the content does)

    @property
    def size(self) -> int:
        return len(self.member_ids)


@dataclass(frozen=True, slots=True)
class RebuildPlan:
    """What a rebuild would do, before it does it (`--dry-run`)."""

    full: bool  # a full rebuild, or only the stale communities
    communities: int  # communities to recluster (existing ones that will be replaced)
    entities: int  # entities in the subgraph that will be clustered
    edges: int
    stale: int  # stale communities right now


@dataclass(frozen=True, slots=True)
class BuildReport:
    full: bool
    graph_version: int
    communities_removed: int
    communities_written: int
    entities: int
    edges: int
    levels: int
    seconds: float


def community_id(level: int, member_ids: Sequence[str]) -> str:
    digest = hashlib.sha256(f"{level}\x1f".encode() + "\x1f".join(sorted(member_ids)).encode()).hexdigest()
    return f"com_{digest[:24]}"


def content_hash(member_ids: Sequence[str], edges: Iterable[GraphEdge]) -> str:
    """Changes exactly when a member, an internal relation or an internal edge's weight changes."""
    h = hashlib.sha256()
    for m in sorted(member_ids):
        h.update(m.encode() + b"\x1e")
    h.update(b"\x1d")
    for e in sorted(edges, key=lambda e: (e.a, e.b)):
        h.update(f"{e.a}\x1f{e.b}\x1f{e.weight:.6g}\x1f{','.join(e.relation_ids)}\x1e".encode())
    return h.hexdigest()[:32]
