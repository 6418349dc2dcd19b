"""Contract suite for `CommunityStore` adapters.

Subclass `CommunityStoreContract` in a `Test*` class and provide a `communities` fixture with a fresh, empty
store. Community ids come from `community_id` (level + members), as the builder makes them."""

from __future__ import annotations

from datetime import UTC, datetime

from kgrag_core.communities.model import Community, community_id
from kgrag_core.communities.ports import CommunityStore, level_size

BUILT = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


def make(level: int, members: tuple[str, ...], parent: str | None = None, *, version: int = 7) -> Community:
    return Community(
        community_id=community_id(level, members),
        level=level,
        parent_id=parent,
        member_ids=tuple(sorted(members)),
        weight=float(len(members)),
        graph_version=version,
        built_at=BUILT,
        content_hash=f"h-{level}-{'-'.join(sorted(members))}",
    )


TOP_A = make(0, ("e1", "e2", "e3", "e4"))
CHILD_A1 = make(1, ("e1", "e2"), TOP_A.community_id)
CHILD_A2 = make(1, ("e3", "e4"), TOP_A.community_id)
TOP_B = make(0, ("e5", "e6"))
ALL = [TOP_A, CHILD_A1, CHILD_A2, TOP_B]


def ordered(communities: list[Community]) -> list[Community]:
    """The store's order: by level, largest first, then by id."""
    return sorted(communities, key=lambda c: (c.level, -c.size, c.community_id))


class CommunityStoreContract:
    def test_round_trip_by_level_id_and_member(self, communities: CommunityStore) -> None:
        assert communities.communities() == [] and communities.community(TOP_A.community_id) is None
        communities.replace_all(ALL)
        assert communities.community(CHILD_A1.community_id) == CHILD_A1
        assert communities.communities(level=0) == [TOP_A, TOP_B]  # largest first
        assert communities.communities(level=1) == ordered([CHILD_A1, CHILD_A2])
        assert communities.communities() == ordered(ALL)
        assert communities.communities_of(["e3"]) == [TOP_A, CHILD_A2]  # level 0 first
        assert communities.communities_of(["e3", "e6"], level=0) == [TOP_A, TOP_B]
        assert communities.communities_of(["nobody"]) == []
        assert communities.children(TOP_A.community_id) == ordered([CHILD_A1, CHILD_A2])
        assert dict(communities.counts()) == {"communities": 4, "stale": 0, "levels": 2}
        assert [level_size(communities, level) for level in (0, 1, 2)] == [2, 2, 0]

    def test_replace_all_drops_what_the_new_build_lacks(self, communities: CommunityStore) -> None:
        communities.replace_all(ALL)
        rebuilt = make(0, ("e1", "e2", "e5"), version=9)
        communities.replace_all([rebuilt])
        assert communities.communities() == [rebuilt]
        assert communities.communities_of(["e3"]) == []

    def test_stale_marks_every_level_a_member_is_in(self, communities: CommunityStore) -> None:
        communities.replace_all(ALL)
        marked = communities.mark_stale(["e1"])
        assert marked == sorted([TOP_A.community_id, CHILD_A1.community_id])
        assert {c.community_id for c in communities.stale()} == set(marked)
        untouched = communities.community(CHILD_A2.community_id)
        assert untouched is not None and not untouched.stale
        again = communities.community(TOP_A.community_id)
        assert again is not None and again.stale and again.member_ids == TOP_A.member_ids
        assert communities.counts()["stale"] == 2
        assert communities.mark_stale([]) == [] and communities.mark_stale(["nobody"]) == []

    def test_incremental_replace_touches_only_the_named_communities(self, communities: CommunityStore) -> None:
        communities.replace_all(ALL)
        communities.mark_stale(["e5"])
        new_top = make(0, ("e1", "e2", "e3", "e4", "e7"), version=8)
        communities.replace([TOP_A.community_id], [new_top])
        # The old top and its children are gone; B (stale, not replaced) is kept as it was.
        assert communities.community(CHILD_A1.community_id) is None
        assert communities.community(TOP_A.community_id) is None
        kept = communities.community(TOP_B.community_id)
        assert kept is not None and kept.stale and kept.graph_version == 7
        fresh = communities.community(new_top.community_id)
        assert fresh == new_top and not fresh.stale
        assert communities.communities_of(["e7"]) == [new_top]

    def test_rewriting_a_stale_community_clears_its_flag(self, communities: CommunityStore) -> None:
        communities.replace_all(ALL)
        communities.mark_stale(["e6"])
        rebuilt = make(0, ("e5", "e6"), version=10)  # same members: same id
        communities.replace([TOP_B.community_id], [rebuilt])
        back = communities.community(TOP_B.community_id)
        assert back == rebuilt and not back.stale and back.graph_version == 10

    def test_delete_touching_takes_descendants(self, communities: CommunityStore) -> None:
        communities.replace_all(ALL)
        gone = communities.delete_touching(["e4"])
        assert gone == sorted([TOP_A.community_id, CHILD_A1.community_id, CHILD_A2.community_id])
        assert communities.communities() == [TOP_B]
        assert communities.delete_touching([]) == []
