"""Hierarchical communities from a weighted entity graph, the clustering itself behind `CommunityDetector`.

Hubs (entities `label_hubs` marked) are left out of clustering and attached afterwards to the one
community they are most strongly tied to: clustered with them, a hub's many edges pull unrelated entities
into one giant community (everyone's neighbour becomes everyone's community). Levels: level 0 partitions
the whole graph; a community larger than `split_above` is partitioned again, one level down, at a higher
resolution, until `max_levels`. Deterministic: sorted inputs and a fixed seed give the same communities."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from kgrag_core.communities.model import Community, GraphEdge, community_id, content_hash
from kgrag_core.communities.ports import CommunityDetector


@dataclass(frozen=True, slots=True)
class BuildSettings:
    seed: int = 42
    resolution: float = 1.0  # level 0 (1.0: modularity)
    resolution_step: float = 2.0  # each level down multiplies the resolution by this
    max_levels: int = 3
    split_above: int = 30  # members; a larger community gets children
    min_size: int = 2  # a smaller group (an isolated entity) is no community


class _Graph:
    """Adjacency over aggregated edges, for induced subgraphs and hub attachment."""

    def __init__(self, edges: Iterable[GraphEdge]) -> None:
        self.adjacent: dict[str, dict[str, GraphEdge]] = defaultdict(dict)
        for e in edges:
            self.adjacent[e.a][e.b] = e
            self.adjacent[e.b][e.a] = e

    def induced(self, members: Collection[str]) -> list[GraphEdge]:
        out = [e for m in members for n, e in self.adjacent.get(m, {}).items() if m < n and n in members]
        return sorted(out, key=lambda e: (e.a, e.b))


def build_hierarchy(
    nodes: Sequence[str],
    edges: Sequence[GraphEdge],
    hubs: Collection[str],
    detector: CommunityDetector,
    settings: BuildSettings,
    *,
    graph_version: int,
    built_at: datetime,
) -> list[Community]:
    """Every community of every level over `nodes` (levels from 0), parents before children."""
    graph = _Graph(edges)
    out: list[Community] = []
    pending: list[tuple[tuple[str, ...], int, str | None]] = [(tuple(sorted(set(nodes))), 0, None)]
    while pending:
        members, level, parent = pending.pop(0)
        resolution = settings.resolution * settings.resolution_step**level
        groups = partition_with_hubs(members, graph, hubs, detector, seed=settings.seed, resolution=resolution)
        if parent is not None and len(groups) < 2:
            continue  # the community does not split: it has no children
        for group in groups:
            if len(group) < settings.min_size:
                continue
            inside = graph.induced(set(group))
            cid = community_id(level, group)
            out.append(
                Community(
                    community_id=cid,
                    level=level,
                    parent_id=parent,
                    member_ids=group,
                    weight=round(sum(e.weight for e in inside), 6),
                    graph_version=graph_version,
                    built_at=built_at,
                    content_hash=content_hash(group, inside),
                )
            )
            if len(group) > settings.split_above and level + 1 < settings.max_levels:
                pending.append((group, level + 1, cid))
    return out


def partition_with_hubs(
    members: Sequence[str],
    graph: _Graph,
    hubs: Collection[str],
    detector: CommunityDetector,
    *,
    seed: int,
    resolution: float,
) -> list[tuple[str, ...]]:
    """One level: the non-hubs partitioned, then each hub added to the group it has the most weight to
    (ties: the larger group, then the first; a hub tied to no group stays alone), then each entity left
    alone that is tied to hubs only added to its strongest hub's group."""
    inside = set(members)
    hub_set = {h for h in members if h in hubs}
    core = [m for m in members if m not in hub_set]
    core_set = set(core)
    core_edges = graph.induced(core_set)
    groups = [list(g) for g in detector.partition(core, core_edges, seed=seed, resolution=resolution)]
    group_of = {m: i for i, g in enumerate(groups) for m in g}
    alone: list[list[str]] = []
    for hub in sorted(hub_set):
        ties: dict[int, float] = defaultdict(float)
        for n, e in graph.adjacent.get(hub, {}).items():
            if n in inside and n in group_of:
                ties[group_of[n]] += e.weight
        if ties:
            best = max(ties, key=lambda i: (ties[i], len(groups[i]), -i))
            groups[best].append(hub)
        else:
            alone.append([hub])
    groups += alone
    _attach_satellites(groups, graph, hub_set, inside)
    result = [tuple(sorted(g)) for g in groups if g]
    return sorted(result, key=lambda g: (-len(g), g[0]))


def _attach_satellites(groups: list[list[str]], graph: _Graph, hubs: set[str], inside: set[str]) -> None:
    """An entity tied only to hubs is alone once hubs are left out; it joins its strongest hub's group
    (ties: the hub first by id), so a team named only next to a busy system still has a community."""
    if not hubs:
        return
    group_of = {m: i for i, g in enumerate(groups) for m in g}
    for i, g in enumerate(groups):
        if len(g) != 1 or g[0] in hubs:
            continue
        ties = {n: e.weight for n, e in graph.adjacent.get(g[0], {}).items() if n in hubs and n in inside}
        if ties:
            hub = max(sorted(ties), key=lambda n: ties[n])
            groups[group_of[hub]].append(g[0])
            groups[i] = []


def roots_of(communities: Iterable[Community]) -> list[str]:
    """The level-0 ids among these (what an incremental refresh replaces)."""
    return sorted({c.community_id for c in communities if c.level == 0})
