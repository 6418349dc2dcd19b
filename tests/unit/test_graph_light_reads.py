"""The light reads (`kgrag_core.graph.light`) through the routed reader: routed like every read (the projection
while caught up, PostgreSQL otherwise), each side answering with its own light reads or its full ones, and
always exactly what the full reads give that side; the outsider never gets the restricted entity, its
reader (positive control) does."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kgrag_core.graph import light
from kgrag_core.graph.routing import Route, RoutedGraphReader
from tests.unit.test_graph_retrieval_doubles import PUBLIC, SECRET, InMemoryGraph


@dataclass
class _Primary(InMemoryGraph):
    version: int = 3

    def graph_version(self) -> int:
        return self.version

    def merges_shown_whole(self, acl_class_ids: Sequence[str] | None) -> bool:
        return True


@dataclass
class _Projection(InMemoryGraph):
    mark: int | None = 3

    def watermark(self) -> int | None:
        return self.mark


def _fill(graph: InMemoryGraph) -> None:
    routing = graph.add_entity("team_r", "Routing", "Team")
    atlas = graph.add_entity("sys_atlas", "Atlas", "System")
    hidden = graph.add_entity("org_h", "Hidden Holdings", "Organization")
    graph.add_edge(routing, "OWNS", atlas, ["c1"])
    graph.add_edge(hidden, "CUSTOMER_OF", routing, ["c2"], acl=SECRET.acl_class_id)


def test_routed_light_reads_are_each_sides_full_reads() -> None:
    primary, projection = _Primary(), _Projection()
    _fill(primary)
    _fill(projection)
    routed = RoutedGraphReader(primary, projection, unavailable=(ConnectionError,))
    assert isinstance(routed, light.LightGraphReads)
    outsider, reader = [PUBLIC.acl_class_id], [PUBLIC.acl_class_id, SECRET.acl_class_id]
    ids = ["team_r", "sys_atlas", "org_h"]
    for mark, route in ((3, Route.PROJECTION), (2, Route.BEHIND)):
        projection.mark = mark
        for acl in (outsider, reader):
            before = routed.counts[route]
            refs = routed.entity_refs_by_id(ids, acl)
            assert refs == {i: s.entity for i, s in primary.entities_by_id(ids, acl).items()}
            assert routed.edges_among_named(refs, acl) == primary.edges_among(list(refs), acl)
            assert routed.claims_of_named(refs, acl) == primary.claims_of(list(refs), acl)
            named = routed.entity_ids_named(["hidden holdings", "routing"], acl)  # the double takes keys
            assert named["routing"] == ["team_r"]
            assert routed.counts[route] == before + 4
    assert "org_h" not in routed.entity_refs_by_id(ids, outsider)
    assert routed.entity_ids_named(["hidden holdings"], outsider).get("hidden holdings", []) == []
    assert routed.entity_ids_named(["hidden holdings"], reader) == {"hidden holdings": ["org_h"]}  # control
    among = routed.edges_among_named(routed.entity_refs_by_id(ids, reader), reader)
    assert [e.relation for e in among["org_h"]] == ["CUSTOMER_OF"]
