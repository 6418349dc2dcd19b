"""Community building over the real Leiden library: deterministic, hubs do not swallow the graph, large
communities get a level below, and ids/hashes follow content, not names or order."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from kgrag_adapters.communities.leiden import LeidenDetector
from kgrag_core.communities.building import BuildSettings, build_hierarchy
from kgrag_core.communities.model import GraphEdge, community_id, content_hash

BUILT = datetime(2026, 12, 2, tzinfo=UTC)


def _clique(prefix: str, n: int, weight: float = 3.0) -> list[GraphEdge]:
    names = [f"{prefix}{i:02d}" for i in range(n)]
    return [GraphEdge(a, b, weight) for i, a in enumerate(names) for b in names[i + 1 :]]


def _nodes(edges: list[GraphEdge]) -> list[str]:
    return sorted({n for e in edges for n in (e.a, e.b)})


def _build(
    edges: list[GraphEdge], hubs: frozenset[str] | set[str] = frozenset(), **settings: float
) -> list[tuple[int, tuple[str, ...]]]:
    built = build_hierarchy(
        _nodes(edges),
        edges,
        hubs,
        LeidenDetector(),
        BuildSettings(**settings),  # type: ignore[arg-type]
        graph_version=1,
        built_at=BUILT,
    )
    return [(c.level, c.member_ids) for c in built]


def test_same_graph_same_communities_whatever_the_input_order() -> None:
    rng = random.Random(7)
    edges = _clique("a", 8) + _clique("b", 8) + _clique("c", 6)
    edges += [GraphEdge(f"a{rng.randrange(8):02d}", f"b{rng.randrange(8):02d}", 0.5) for _ in range(3)]
    first = _build(edges)
    shuffled = edges[:]
    rng.shuffle(shuffled)
    assert _build(shuffled) == first
    assert sorted(m for level, m in first if level == 0) == sorted(
        [
            tuple(f"a{i:02d}" for i in range(8)),
            tuple(f"b{i:02d}" for i in range(8)),
            tuple(f"c{i:02d}" for i in range(6)),
        ]
    )


def test_a_hub_joins_one_community_instead_of_merging_them() -> None:
    # Six loose chains, every member strongly tied to one hub (an entity every document names).
    edges: list[GraphEdge] = []
    for p in "abcdef":
        names = [f"{p}{i:02d}" for i in range(4)]
        edges += [GraphEdge(names[i], names[i + 1], 1.0) for i in range(3)]
        edges += [GraphEdge(n, "zhub", 3.5 if p == "c" else 3.0) for n in names]
    tops = [m for level, m in _build(edges, hubs={"zhub"}) if level == 0]
    assert sorted(len(m) for m in tops) == [4, 4, 4, 4, 4, 5]
    assert ("c00", "c01", "c02", "c03", "zhub") in tops  # attached where it is tied most strongly
    # Control: clustered as an ordinary entity, the hub pulls several chains into one community.
    plain = [m for level, m in _build(edges) if level == 0]
    assert len(plain) < 6 and max(len(m) for m in plain) > 5


def test_a_large_community_gets_children_one_level_down() -> None:
    # Three dense groups tied loosely together: one community at level 0 when large enough, split below.
    edges = _clique("a", 12) + _clique("b", 12) + _clique("c", 12)
    edges += [GraphEdge(f"a{i:02d}", f"b{i:02d}", 2.0) for i in range(12)]
    edges += [GraphEdge(f"b{i:02d}", f"c{i:02d}", 2.0) for i in range(12)]
    built = build_hierarchy(
        _nodes(edges),
        edges,
        set(),
        LeidenDetector(),
        BuildSettings(resolution=0.05, split_above=20),
        graph_version=3,
        built_at=BUILT,
    )
    tops = [c for c in built if c.level == 0]
    assert len(tops) == 1 and tops[0].size == 36 and tops[0].parent_id is None
    children = [c for c in built if c.level == 1]
    assert len(children) >= 2 and all(c.parent_id == tops[0].community_id for c in children)
    assert sorted(m for c in children for m in c.member_ids) == list(tops[0].member_ids)
    assert all(c.graph_version == 3 for c in built)


def test_isolated_entities_make_no_community() -> None:
    edges = _clique("a", 3)
    built = build_hierarchy(
        [*_nodes(edges), "lonely"], edges, set(), LeidenDetector(), BuildSettings(), graph_version=1, built_at=BUILT
    )
    assert [c.member_ids for c in built] == [("a00", "a01", "a02")]


def test_ids_name_nothing_and_hashes_follow_content() -> None:
    cid = community_id(0, ["Atlas Corp", "Beta"])
    assert cid == community_id(0, ["Beta", "Atlas Corp"]) != community_id(1, ["Beta", "Atlas Corp"])
    assert "atlas" not in cid.lower() and cid.startswith("com_")
    edge = GraphEdge("a", "b", 1.0, ("r1",))
    assert content_hash(["a", "b"], [edge]) == content_hash(["b", "a"], [edge])
    assert content_hash(["a", "b"], [edge]) != content_hash(["a", "b"], [GraphEdge("a", "b", 2.0, ("r1",))])
    assert content_hash(["a", "b"], [edge]) != content_hash(["a", "b"], [GraphEdge("a", "b", 1.0, ("r1", "r2"))])


def test_an_entity_tied_only_to_a_hub_joins_the_hubs_community() -> None:
    edges = [*_clique("a", 4), GraphEdge("a00", "zhub", 2.0), GraphEdge("a01", "zhub", 2.0)]
    edges += [GraphEdge("sat", "zhub", 1.0)]  # named only next to the hub
    tops = [m for level, m in _build(edges, hubs={"zhub"}) if level == 0]
    assert tops == [("a00", "a01", "a02", "a03", "sat", "zhub")]
