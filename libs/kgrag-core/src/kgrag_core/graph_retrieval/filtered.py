"""The graph as a search's filters let it be seen: only evidence from admitted documents counts.

Wraps a `GraphReader` so that every edge and claim the graph layer reads keeps only the evidence chunks
the request's `SearchFilters` admit (their document's source and date), before expansion scores an edge
or a claim enters a timeline: an edge or claim left without admitted evidence is not there. With `as_of`
both clocks apply: claims written after that day are gone, as are claims and edges that the text says
became true only later (`valid_from`) or had ended before (`valid_to`); the claims left are re-read as a
timeline, so the value current on that day is the current one.

Admission is asked of the caller's own hydration (`admit`), so it sees exactly what a hit would: the
authoritative chunk and document rows, rechecked against the caller's ACL.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from datetime import date

from kgrag_core.extraction.claims import competes, timeline
from kgrag_core.extraction.identity import normalise_value
from kgrag_core.extraction.ontology import Cardinality
from kgrag_core.extraction.records import ClaimRecord, ClaimStatus
from kgrag_core.filters import SearchFilters
from kgrag_core.graph.model import Edge, EntitySummary
from kgrag_core.graph.ports import GraphReader

Admit = Callable[[Sequence[str]], Collection[str]]  # chunk IDs -> those the filters (and the ACL) admit


class FilteredGraphReader:
    """A `GraphReader` whose edges and claims rest only on evidence the filters admit."""

    def __init__(self, graph: GraphReader, filters: SearchFilters, admit: Admit) -> None:
        self.graph = graph
        self.filters = filters
        self.admit = admit

    def entities_named(
        self, names: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, list[EntitySummary]]:
        # Names only link a question to entities; what they lead to is filtered below.
        return self.graph.entities_named(names, acl_class_ids)

    def entity(self, entity_id: str, acl_class_ids: Sequence[str] | None) -> EntitySummary | None:
        return self.graph.entity(entity_id, acl_class_ids)

    def hubs_among(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> set[str]:
        return self.graph.hubs_among(entity_ids, acl_class_ids)

    def neighbours(
        self,
        entity_id: str,
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> list[Edge]:
        edges = self.graph.neighbours(entity_id, acl_class_ids, relations=relations, limit=limit)
        admitted = set(self.admit(sorted({c for e in edges for c in e.evidence_chunk_ids})))
        return self._kept(edges, admitted)

    def entities_by_id(
        self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None
    ) -> dict[str, EntitySummary]:
        return self.graph.entities_by_id(entity_ids, acl_class_ids)

    def neighbours_by_id(
        self,
        entity_ids: Sequence[str],
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> dict[str, list[Edge]]:
        found = self.graph.neighbours_by_id(entity_ids, acl_class_ids, relations=relations, limit=limit)
        admitted = set(self.admit(sorted({c for es in found.values() for e in es for c in e.evidence_chunk_ids})))
        return {entity_id: self._kept(edges, admitted) for entity_id, edges in found.items()}

    def edges_among(
        self,
        entity_ids: Sequence[str],
        acl_class_ids: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> dict[str, list[Edge]]:
        found = self.graph.edges_among(entity_ids, acl_class_ids, relations=relations, limit=limit)
        admitted = set(self.admit(sorted({c for es in found.values() for e in es for c in e.evidence_chunk_ids})))
        return {entity_id: self._kept(edges, admitted) for entity_id, edges in found.items()}

    def _kept(self, edges: Sequence[Edge], admitted: Collection[str]) -> list[Edge]:
        out: list[Edge] = []
        for edge in edges:
            if not _valid_on(edge.valid_from, edge.valid_to, self.filters.as_of):
                continue
            kept = tuple(c for c in edge.evidence_chunk_ids if c in admitted)
            if kept:
                out.append(dataclasses.replace(edge, evidence_chunk_ids=kept))
        return out

    def claims_of(self, entity_ids: Sequence[str], acl_class_ids: Sequence[str] | None) -> list[ClaimRecord]:
        claims = self.graph.claims_of(entity_ids, acl_class_ids)
        admitted = set(self.admit(sorted({c.chunk_id for c in claims})))
        as_of = self.filters.as_of
        kept = [
            c
            for c in claims
            if c.chunk_id in admitted
            and self.filters.admits_day(c.written_at)
            and (as_of is None or c.valid_from is None or c.valid_from <= as_of)
        ]
        if len(kept) == len(claims):
            return claims
        # Statuses were computed over every visible claim; a removed newer value must not supersede.
        return timeline(kept, _cardinalities(claims))


def _valid_on(valid_from: date | None, valid_to: date | None, day: date | None) -> bool:
    if day is None:
        return True
    return (valid_from is None or valid_from <= day) and (valid_to is None or valid_to >= day)


def _cardinalities(claims: Sequence[ClaimRecord]) -> dict[str, Cardinality]:
    """Attribute cardinalities as the reader's own timeline shows them: only a multi-valued attribute has two
    different current values of one entity (a single-valued one supersedes or marks a conflict)."""
    current: dict[tuple[str, str], set[str]] = {}
    for claim in claims:
        if claim.status is ClaimStatus.CURRENT and competes(claim):
            current.setdefault((claim.entity_id, claim.attribute), set()).add(normalise_value(claim.value))
    multi = {attribute for (_, attribute), values in current.items() if len(values) > 1}
    return {attribute: Cardinality.MULTI for attribute in multi}
