"""Reads that name less than `GraphReader`'s, for the GLOBAL route (issue 12).

Choosing a question's communities needs only the ids of the entities its names link to, and a community view
needs only its members' id, name and type. `GraphReader.entities_named` and `entities_by_id` also count
each entity's visible degree and hub flag, and (through `EntitySummary`) its aliases: for a hub that is a
read of every piece of its visible evidence. A reader that answers these two reads more cheaply implements
`LightGraphReads`; any other is answered through its `GraphReader` reads (`ids_named`, `refs_by_id`), so
the answers are the same by definition and the contract compares the two. Each read applies the same
visibility as the read it shortens and returns a part of what that read returns: nothing new is shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from kgrag_core.graph.model import EntityRef
from kgrag_core.graph.ports import GraphReader


@runtime_checkable
class LightGraphReads(Protocol):
    def entity_ids_named(self, names: Sequence[str], acl_class_ids: Sequence[str] | None) -> dict[str, list[str]]:
        """Per asked name (normalised), the sorted ids of `entities_named`'s entities for it."""
        ...

    def entity_refs_by_id(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> dict[str, EntityRef]:
        """`entities_by_id`'s entities (their `entity`), for the same ids."""
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
