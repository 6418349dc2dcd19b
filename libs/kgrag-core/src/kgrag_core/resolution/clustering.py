"""Union-find over merge decisions, with the constraints checked on whole components.

Pairwise checks are not enough: A-B and B-C can each be fine while A and C hold different e-mail addresses,
and a long chain of plausible pairs is how one node absorbs half the graph. Every union is therefore checked on
the two components it would join: their strong identifiers must not conflict, their union must fit the size
cap, and no must-not-merge override may end up inside it. A refused union is reported, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kgrag_core.graph.model import EntityProfile
from kgrag_core.resolution.constraints import Rule, conflicting_id_kind, strong_id_sets


@dataclass(slots=True)
class _Component:
    members: set[str]
    strong_ids: dict[str, frozenset[str]]


class ConstrainedUnionFind:
    def __init__(
        self,
        profiles: Mapping[str, EntityProfile],
        *,
        max_cluster_size: int,
        must_not_merge: Iterable[tuple[str, str]] = (),
    ) -> None:
        self._parent: dict[str, str] = {}
        self._components: dict[str, _Component] = {}
        self._max_size = max_cluster_size
        self._forbidden: dict[str, set[str]] = {}
        for a, b in must_not_merge:
            self._forbidden.setdefault(a, set()).add(b)
            self._forbidden.setdefault(b, set()).add(a)
        for entity_id, profile in profiles.items():
            self._add(entity_id, strong_id_sets(profile))

    def _add(self, entity_id: str, strong_ids: dict[str, frozenset[str]]) -> None:
        if entity_id not in self._parent:
            self._parent[entity_id] = entity_id
            self._components[entity_id] = _Component({entity_id}, strong_ids)

    def find(self, entity_id: str) -> str:
        self._add(entity_id, {})
        root = entity_id
        while self._parent[root] != root:
            root = self._parent[root]
        while self._parent[entity_id] != root:  # path compression
            self._parent[entity_id], entity_id = root, self._parent[entity_id]
        return root

    def refusal(self, a: str, b: str) -> tuple[Rule, str] | None:
        """Why joining the components of a and b is not allowed, or None."""
        left, right = self._components[self.find(a)], self._components[self.find(b)]
        for member in left.members:
            blocked = self._forbidden.get(member)
            if blocked and blocked & right.members:
                return Rule.CLUSTER_OVERRIDE_SEPARATE, f"{member} / {sorted(blocked & right.members)[0]}"
        kind = conflicting_id_kind(left.strong_ids, right.strong_ids)
        if kind is not None:
            return Rule.CLUSTER_CONFLICTING_IDS, kind
        size = len(left.members) + len(right.members)
        if size > self._max_size:
            return Rule.CLUSTER_SIZE_CAP, f"{size} > {self._max_size}"
        return None

    def union(self, a: str, b: str, *, force: bool = False) -> tuple[Rule, str] | None:
        """Join the two components unless refused (returns the refusal); `force` is for overrides only."""
        root_a, root_b = self.find(a), self.find(b)
        if root_a == root_b:
            return None
        if not force:
            refused = self.refusal(a, b)
            if refused is not None:
                return refused
        left, right = self._components[root_a], self._components[root_b]
        if len(left.members) < len(right.members):
            root_a, root_b, left, right = root_b, root_a, right, left
        self._parent[root_b] = root_a
        left.members |= right.members
        for kind, values in right.strong_ids.items():
            left.strong_ids[kind] = left.strong_ids.get(kind, frozenset()) | values
        del self._components[root_b]
        return None

    def clusters(self) -> list[list[str]]:
        """Every component, members sorted, components in order of their smallest member."""
        return sorted((sorted(component.members) for component in self._components.values()), key=lambda c: c[0])
