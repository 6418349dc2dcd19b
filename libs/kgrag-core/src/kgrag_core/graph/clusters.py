"""How a canonical entity looks to one caller: its name, type, aliases and identifiers from the members it
may see. Every GraphReader adapter reads its member rows and alias counts its own way, then names and
summarises clusters here, so PostgreSQL and Neo4j answer alike by construction, not by agreement."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgrag_core.graph.model import EntityRef, EntitySummary


@dataclass(frozen=True, slots=True)
class MemberRow:
    """One mention-level entity filed under a canonical ID, and whether this caller sees evidence naming it."""

    entity_id: str
    name: str
    type: str
    strong_ids: tuple[tuple[str, str], ...]
    visible: bool


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What a caller may see of one canonical entity (no degree or hub flag: those cost a query of their own)."""

    ref: EntityRef
    aliases: tuple[str, ...]  # visible surface forms, most used first
    strong_ids: tuple[tuple[str, str], ...]
    members: tuple[str, ...]  # the visible members


def cluster_views(
    members: Mapping[str, Sequence[MemberRow]], alias_uses: Mapping[str, Mapping[str, int]]
) -> dict[str, ClusterView]:
    """The visible canonical entities among `members` (canonical ID -> member rows); one with no visible
    member is left out. `alias_uses` counts each cluster's surface forms in chunks the caller may read."""
    out: dict[str, ClusterView] = {}
    for cid, rows in members.items():
        visible = [r for r in rows if r.visible]
        if not visible:
            continue
        counts = alias_uses.get(cid, {})
        ranked = sorted(counts, key=lambda n: (-counts[n], n))
        out[cid] = ClusterView(
            ref=EntityRef(cid, _display_name(cid, visible, ranked), _cluster_type(cid, rows)),
            aliases=tuple(ranked),
            strong_ids=tuple(sorted({pair for r in visible for pair in r.strong_ids})),
            members=tuple(r.entity_id for r in visible),
        )
    return out


def summaries(
    clusters: Mapping[str, ClusterView], degrees: Mapping[str, int], hubs: set[str]
) -> dict[str, EntitySummary]:
    """Cluster views with their visible degree and hub label."""
    return {
        cid: EntitySummary(
            entity=c.ref,
            aliases=c.aliases,
            strong_ids=c.strong_ids,
            degree=degrees.get(cid, 0),
            is_hub=cid in hubs,
            members=c.members,
        )
        for cid, c in clusters.items()
    }


def _display_name(cid: str, visible: Sequence[MemberRow], ranked_aliases: Sequence[str]) -> str:
    """The label entity's own name when the caller may see it, else the commonest visible mention name.

    Never a name only restricted evidence uses: the label's entity may be known to this caller only
    through other members.
    """
    for r in visible:
        if r.entity_id == cid:
            return r.name
    if ranked_aliases:
        return ranked_aliases[0]
    return visible[0].name


def _cluster_type(cid: str, rows: Sequence[MemberRow]) -> str:
    # Members share a type (a type conflict never merges); the label's own entity decides if it exists.
    for r in rows:
        if r.entity_id == cid:
            return r.type
    return min(r.type for r in rows)
