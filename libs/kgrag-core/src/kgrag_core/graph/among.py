"""`GraphReader.edges_among` stated through the single reads: what every adapter's batched read must equal
(the contract compares them), and how a reader with no batched query of its own answers it."""

from __future__ import annotations

from collections.abc import Sequence

from kgrag_core.graph.model import Edge
from kgrag_core.graph.ports import GraphReader

_ALL = 1_000_000  # "no limit" for `neighbours`: every visible edge of the entity


def edges_among_by_single_reads(
    reader: GraphReader,
    entity_ids: Sequence[str],
    acl_class_ids: Sequence[str] | None,
    *,
    relations: Sequence[str] | None = None,
    limit: int = 50,
) -> dict[str, list[Edge]]:
    """Each given id's `neighbours` (all of them) whose other end is the canonical entity of a visible given
    id, the strongest `limit` kept (`neighbours`' order); [] for an invisible or unknown id."""
    ids = list(dict.fromkeys(entity_ids))
    inside = {s.entity.entity_id for s in reader.entities_by_id(ids, acl_class_ids).values()}
    out: dict[str, list[Edge]] = {}
    for entity_id in ids:
        edges = reader.neighbours(entity_id, acl_class_ids, relations=relations, limit=_ALL) if limit > 0 else []
        kept = [e for e in edges if e.subject.entity_id in inside and e.object.entity_id in inside]
        out[entity_id] = kept[:limit]
    return out
