"""How a canonical entity looks to one caller: its id, name, type, aliases and identifiers from the members
it may see. Every GraphReader adapter reads its member rows and alias counts its own way, then names and
summarises clusters here, so PostgreSQL and Neo4j answer alike by construction, not by agreement.

The rule (docs/security.md, sections 1-3): everything a caller is shown about a cluster comes from members
that evidence the caller may read names. The cluster's label (its canonical id) is an internal key: when
its own entity is invisible to the caller, the cluster is shown under its smallest visible member id, so an
id only restricted evidence supports never reaches the caller (and asking for the label answers as an
unknown id does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgrag_core.extraction.identity import normalise_name
from kgrag_core.graph.model import EntityRef, EntitySummary


@dataclass(frozen=True, slots=True)
class MemberRow:
    """One mention-level entity filed under a canonical ID, and whether this caller sees evidence naming it.

    `strong_ids` are the identifiers of the member's mentions the caller may read (never the entity row's
    union over every mention: two records sharing an e-mail under different ACLs share one entity row).
    """

    entity_id: str
    name: str
    type: str
    strong_ids: tuple[tuple[str, str], ...]
    visible: bool


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What a caller may see of one canonical entity (no degree or hub flag: those cost a query of their own)."""

    ref: EntityRef  # the caller's id for the cluster (a visible member), a visible name, a visible type
    aliases: tuple[str, ...]  # visible surface forms, most used first
    strong_ids: tuple[tuple[str, str], ...]
    members: tuple[str, ...]  # the visible members


def cluster_views(
    members: Mapping[str, Sequence[MemberRow]], alias_uses: Mapping[str, Mapping[str, int]]
) -> dict[str, ClusterView]:
    """The visible canonical entities among `members` (canonical ID -> member rows), keyed by canonical ID;
    one with no visible member is left out. `alias_uses` counts each cluster's surface forms in chunks the
    caller may read."""
    out: dict[str, ClusterView] = {}
    for cid, rows in members.items():
        visible = sorted((r for r in rows if r.visible), key=lambda r: r.entity_id)
        if not visible:
            continue
        label = next((r for r in visible if r.entity_id == cid), visible[0])
        counts = alias_uses.get(cid, {})
        ranked = sorted(counts, key=lambda n: (-counts[n], n))
        out[cid] = ClusterView(
            ref=EntityRef(label.entity_id, _display_name(label, ranked), label.type),
            aliases=tuple(ranked),
            strong_ids=tuple(sorted({pair for r in visible for pair in r.strong_ids})),
            members=tuple(r.entity_id for r in visible),
        )
    return out


def summaries(
    clusters: Mapping[str, ClusterView], degrees: Mapping[str, int], hub_thresholds: Mapping[str, int]
) -> dict[str, EntitySummary]:
    """Cluster views with their visible degree and the caller's hub flag.

    `hub_thresholds` holds the clusters labelled hubs and the degree that labelled them. A cluster is a hub
    to this caller only when the edges the caller sees reach that degree too (section 2 of docs/security.md):
    edges only restricted evidence supports never make an entity a hub to someone who cannot read them.
    """
    return {
        cid: EntitySummary(
            entity=c.ref,
            aliases=c.aliases,
            strong_ids=c.strong_ids,
            degree=degrees.get(cid, 0),
            is_hub=is_hub_for_caller(cid, degrees, hub_thresholds),
            members=c.members,
        )
        for cid, c in clusters.items()
    }


def is_hub_for_caller(cid: str, visible_degrees: Mapping[str, int], hub_thresholds: Mapping[str, int]) -> bool:
    """Labelled a hub AND a hub by the edges this caller sees (visible degree at least the threshold)."""
    threshold = hub_thresholds.get(cid)
    return threshold is not None and visible_degrees.get(cid, 0) >= threshold


def _display_name(label: MemberRow, ranked_aliases: Sequence[str]) -> str:
    """A surface form visible evidence uses: the label's own name as visible mentions write it, else the
    commonest visible mention name; the stored name only when no visible chunk mentions the cluster (then
    only relation or claim evidence names it, which names an entity by the stored name's normalised form).

    The stored name is the first one ever written for the entity row, possibly by a restricted record that
    shares an identifier with a public one, so it is never shown unless visible evidence spells it.
    """
    own = normalise_name(label.name)
    for alias in ranked_aliases:
        if normalise_name(alias) == own:
            return alias
    if ranked_aliases:
        return ranked_aliases[0]
    return label.name
