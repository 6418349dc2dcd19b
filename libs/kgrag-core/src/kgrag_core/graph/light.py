"""Reads that name less than `GraphReader`'s, for the GLOBAL route (issue 12).

Choosing a question's communities needs only the ids of the entities its names link to; a community view
needs its members' id, name and type, read once. `GraphReader.entities_named` and `entities_by_id` also
count each entity's visible degree and hub flag, and `edges_among` and `claims_of` name every member again:
for a hub, each is a read of every piece of its visible evidence. A reader that answers these more cheaply
implements `LightGraphReads` (the edges and claims named by the members' entities just read, `*_named`);
any other is answered through its `GraphReader` reads (the module's functions), so the answers are the same
by definition and the contract compares the two. Each read applies the same visibility as the read it
shortens and returns a part of what that read returns: nothing new is shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from kgrag_core.extraction.records import ClaimRecord
from kgrag_core.graph.model import Edge, EntityRef
from kgrag_core.graph.ports import GraphReader


@runtime_checkable
class LightGraphReads(Protocol):
    def entity_ids_named(self, names: Sequence[str], acl_class_ids: Sequence[str] | None) -> dict[str, list[str]]:
        """Per asked name (normalised), the sorted ids of `entities_named`'s entities for it."""
        ...

    def entity_refs_by_id(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> dict[str, EntityRef]:
        """`entities_by_id`'s entities (their `entity`), for the same ids."""
        ...

    def edges_among_named(
        self, named: Mapping[str, EntityRef], acl_class_ids: Sequence[str] | None, *, limit: int = 50
    ) -> dict[str, list[Edge]]:
        """`edges_among(list(named))`, where `named` is this caller's `entity_refs_by_id` of those ids: the
        ends (all of them asked ones) are named by it, not read again."""
        ...

    def claims_of_named(self, named: Mapping[str, EntityRef], acl_class_ids: Sequence[str] | None) -> list[ClaimRecord]:
        """`claims_of(list(named))`, `named` as for `edges_among_named`."""
        ...


def ids_named(graph: GraphReader, names: Sequence[str], acl_class_ids: Sequence[str] | None) -> dict[str, list[str]]:
    """`LightGraphReads.entity_ids_named`, from `entities_named` when the reader has no read of its own."""
    if isinstance(graph, LightGraphReads):
        return graph.entity_ids_named(names, acl_class_ids)
    found = graph.entities_named(names, acl_class_ids)
    return {n: sorted({s.entity.entity_id for s in entities}) for n, entities in found.items()}


def refs_by_id(
    graph: GraphReader, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None
) -> dict[str, EntityRef]:
    """`LightGraphReads.entity_refs_by_id`, from `entities_by_id` when the reader has no read of its own."""
    if isinstance(graph, LightGraphReads):
        return graph.entity_refs_by_id(entity_ids, acl_class_ids)
    return {i: s.entity for i, s in graph.entities_by_id(entity_ids, acl_class_ids).items()}


def edges_among_named(
    graph: GraphReader, named: Mapping[str, EntityRef], acl_class_ids: Sequence[str] | None, *, limit: int = 50
) -> dict[str, list[Edge]]:
    """`LightGraphReads.edges_among_named`, from `edges_among` when the reader has no read of its own."""
    if isinstance(graph, LightGraphReads):
        return graph.edges_among_named(named, acl_class_ids, limit=limit)
    return graph.edges_among(list(named), acl_class_ids, limit=limit)


def claims_of_named(
    graph: GraphReader, named: Mapping[str, EntityRef], acl_class_ids: Sequence[str] | None
) -> list[ClaimRecord]:
    """`LightGraphReads.claims_of_named`, from `claims_of` when the reader has no read of its own."""
    if isinstance(graph, LightGraphReads):
        return graph.claims_of_named(named, acl_class_ids)
    return graph.claims_of(list(named), acl_class_ids)
