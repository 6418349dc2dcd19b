"""The entity API behind the CLI (`kgrag entities …`) and HTTP (`/v1/entities…`, `/v1/admin/entities…`).

Reads show only what the caller's evidence allows; administration (merge, split, review, a resolution
pass) needs the admin scope and writes the merge log, so every decision can be undone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_core.acl import Caller, readable_classes
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.events import EntitiesChanged
from kgrag_core.extraction.identity import normalise_name
from kgrag_core.graph.model import (
    DecisionKind,
    Edge,
    EntitySummary,
    MergeRecord,
    PairDecision,
    SenseSplit,
    hub_not_passed,
)
from kgrag_core.graph.ports import GraphReader
from kgrag_core.ports import AclStore
from kgrag_core.resolution.service import ResolutionService
from kgrag_runtime.extraction_admin import claim_as_dict
from kgrag_runtime.single_writer import SingleWriter, shared_nothing, writes

MAX_DEPTH = 3
MAX_LIMIT = 200


@dataclass(slots=True)
class GraphAdmin:
    store: PostgresGraphStore  #: the GraphReader and ResolutionStore ports on one connection
    acl: AclStore
    resolution: ResolutionService
    # Tells projections (the Neo4j graph in distributed mode) which clusters a hand decision changed.
    announce: Callable[[EntitiesChanged], None] | None = None
    # Curation writes take the embedded runtime's writer gate, as ingestion's resolution does.
    writer: SingleWriter = field(default_factory=shared_nothing)
    # Where reads go when not to `store` (distributed: the Neo4j projection while it is caught up).
    reader: GraphReader | None = None

    @property
    def reads(self) -> GraphReader:
        return self.reader if self.reader is not None else self.store

    # --- reads -------------------------------------------------------------------------------------------

    def entity(self, entity_id: str, caller: Caller) -> dict[str, object]:
        visible = self._visible(caller)
        summary = self._summary(entity_id, visible)
        edges = self.reads.neighbours(summary.entity.entity_id, visible, limit=MAX_LIMIT)
        claims = [claim_as_dict(c) for c in self.reads.claims_of([summary.entity.entity_id], visible)]
        return {
            **summary_as_dict(summary),
            "attributes": claims,
            "relations": [edge_as_dict(e) for e in edges],
            "conflicts": [c for c in claims if c["status"] == "conflict"],
        }

    def neighbours(
        self, entity_id: str, caller: Caller, *, relation: str | None = None, depth: int = 1, limit: int = 50
    ) -> dict[str, object]:
        """Breadth-first up to `depth` hops over visible edges; never through a hub (it may be the start)."""
        if not 1 <= depth <= MAX_DEPTH or not 1 <= limit <= MAX_LIMIT:
            raise KgragError(
                ErrorCode.LIMIT_EXCEEDED,
                f"depth must be 1-{MAX_DEPTH} and limit 1-{MAX_LIMIT}.",
                hint="Ask for fewer hops or a smaller page.",
            )
        visible = self._visible(caller)
        start = self._summary(entity_id, visible)
        relations = [relation] if relation else None
        seen = {start.entity.entity_id}
        frontier = [start.entity.entity_id]
        listed: set[str] = set()  # an edge between two reached entities comes back from both ends
        out: list[dict[str, object]] = []
        truncated: list[str] = []
        for hop in range(1, depth + 1):
            next_frontier: list[str] = []
            for node in frontier:
                # One more than fits, so that a full page is reported as truncated rather than cut silently.
                for edge in self.reads.neighbours(node, visible, relations=relations, limit=limit + 1):
                    if edge.relation_id in listed:
                        continue
                    if len(out) >= limit:
                        truncated.append("limit")
                        break
                    listed.add(edge.relation_id)
                    out.append({**edge_as_dict(edge), "depth": hop})
                    for other in (edge.subject.entity_id, edge.object.entity_id):
                        if other not in seen:
                            seen.add(other)
                            next_frontier.append(other)
            if hop == depth:
                break  # the last hop expands nothing: a hub reached here cut nothing off
            frontier = []
            hubs = self.reads.hubs_among(next_frontier, visible) if next_frontier else set()
            for node in next_frontier:
                if node in hubs:
                    summary = self.reads.entity(node, visible)
                    truncated.append(hub_not_passed(summary.entity.name if summary else node))
                else:
                    frontier.append(node)
        return {"entity": summary_as_dict(start), "edges": out, "truncated": sorted(set(truncated))}

    def resolve(self, name: str, caller: Caller, *, entity_type: str | None = None) -> dict[str, object]:
        """Which entities a name may mean (ambiguity kept), best connected first."""
        found = self.reads.entities_named([name], self._visible(caller)).get(normalise_name(name), [])
        candidates = [summary_as_dict(s) for s in found if entity_type is None or s.entity.type == entity_type]
        return {"name": name, "candidates": candidates, "ambiguous": len(candidates) > 1}

    # --- administration ----------------------------------------------------------------------------------

    @writes
    def merge(
        self,
        entity_ids: Sequence[str],
        *,
        canonical_id: str | None = None,
        reason: str = "",
        decided_by: str = "override",
        decider: str | None = None,
    ) -> dict[str, object]:
        ids = sorted(set(entity_ids))
        if len(ids) < 2:
            raise KgragError(
                ErrorCode.INVALID_QUERY,
                "A merge needs at least two entity ids.",
                hint="Name the entities to merge, e.g. ent_a ent_b.",
            )
        # A typo must not enter the merge log as a merge of nothing, nor name a canonical id nobody has.
        unknown = [i for i in dict.fromkeys([*ids, *([canonical_id] if canonical_id else [])])
                   if self.store.entity(i, None) is None]  # fmt: skip
        if unknown:
            raise KgragError(
                ErrorCode.ENTITY_NOT_FOUND,
                f"No entity {unknown[0]!r}.",
                hint="Find ids with `kgrag entities resolve NAME`; nothing was merged.",
            )
        canonical = canonical_id or ids[0]
        members = tuple(i for i in ids if i != canonical)
        basis = tuple(
            PairDecision(canonical, m, DecisionKind.MERGE, 1.0, (), f"hand merge: {reason}".strip()) for m in members
        )
        digest = hashlib.sha256("\x1f".join(["override", canonical, *members, reason]).encode()).hexdigest()[:16]
        record = MergeRecord(f"mrg_h{digest}", canonical, members, basis, decided_by, decider=decider)
        self.store.apply_merge(record)
        self._announce(record, "merge")
        return merge_as_dict(record)

    @writes
    def split(self, merge_id: str, *, by: str | None = None) -> dict[str, object]:
        record = self.store.revert_merge(merge_id, by=by)
        self._announce(record, "split")
        return merge_as_dict(record)

    @writes
    def split_mentions(self, entity_id: str, doc_ids: Sequence[str], *, reason: str = "") -> dict[str, object]:
        """Namesakes: the entity's mentions in `doc_ids` stand for another entity; logged, kept apart from
        it by resolution, re-applied whenever those documents are extracted again."""
        split = self.store.split_mentions(entity_id, doc_ids, decided_by="override", reason=reason)
        if self.announce is not None:
            self.announce(EntitiesChanged(entity_ids=[split.from_id, split.entity_id], reason="split"))
        return split_as_dict(split)

    def _announce(self, record: MergeRecord, reason: str) -> None:
        if self.announce is not None:
            self.announce(EntitiesChanged(entity_ids=[record.canonical_id, *record.members], reason=reason))

    def merges(self, limit: int = 100) -> list[dict[str, object]]:
        return [merge_as_dict(m) for m in self.store.merge_log(limit)]

    def review_queue(self, limit: int = 100) -> list[dict[str, object]]:
        return [pair_as_dict(p) for p in self.store.review_queue(limit)]

    @writes
    def decide(self, a: str, b: str, *, same: bool, decider: str | None = None) -> dict[str, object]:
        self.store.decide_review(a, b, same)
        merged = self.merge([a, b], reason="review: same", decided_by="review", decider=decider) if same else None
        return {"a": a, "b": b, "same": same, "merge": merged}

    @writes
    def run_resolution(self) -> dict[str, int]:
        report = self.resolution.run()
        for canonical, members in sorted(report.merged.items()):
            if self.announce is not None:
                self.announce(EntitiesChanged(entity_ids=[canonical, *members], reason="merge"))
        for split in report.splits:
            if self.announce is not None:
                self.announce(EntitiesChanged(entity_ids=[split.from_id, split.entity_id], reason="split"))
        if self.announce is not None:
            self.announce(EntitiesChanged(reason="hubs", hubs=True))
        return report.as_dict()

    # --- helpers -----------------------------------------------------------------------------------------

    def _visible(self, caller: Caller) -> list[str] | None:
        return None if caller.admin else readable_classes(self.acl.acl_classes(), caller)

    def _summary(self, entity_id: str, visible: list[str] | None) -> EntitySummary:
        summary: EntitySummary | None = self.reads.entity(entity_id, visible)
        if summary is None:
            raise KgragError(
                ErrorCode.ENTITY_NOT_FOUND,
                f"No entity {entity_id!r} you may see.",
                hint="Find ids with `kgrag entities resolve NAME`.",
            )
        return summary


def summary_as_dict(summary: EntitySummary) -> dict[str, object]:
    return {
        "entity_id": summary.entity.entity_id,
        "name": summary.entity.name,
        "type": summary.entity.type,
        "aliases": list(summary.aliases),
        "strong_ids": [list(s) for s in summary.strong_ids],
        "degree": summary.degree,
        "is_hub": summary.is_hub,
        "members": list(summary.members),
    }


def edge_as_dict(edge: Edge) -> dict[str, object]:
    return {
        "relation_id": edge.relation_id,
        "subject": asdict(edge.subject),
        "relation": edge.relation,
        "object": asdict(edge.object),
        "polarity": edge.polarity.value,
        "modality": edge.modality.value,
        "valid_from": edge.valid_from.isoformat() if edge.valid_from else None,
        "valid_to": edge.valid_to.isoformat() if edge.valid_to else None,
        "evidence_count": edge.evidence_count,
        "evidence_chunk_ids": list(edge.evidence_chunk_ids),
        "confidence": edge.confidence,
        "latest_written": edge.latest_written.isoformat() if edge.latest_written else None,
    }


def pair_as_dict(pair: PairDecision) -> dict[str, object]:
    return {
        "a": pair.a,
        "b": pair.b,
        "kind": pair.kind.value,
        "score": round(pair.score, 4),
        "features": dict(pair.features),
        "rule": pair.rule,
    }


def merge_as_dict(record: MergeRecord) -> dict[str, object]:
    return {
        "merge_id": record.merge_id,
        "canonical_id": record.canonical_id,
        "members": list(record.members),
        "decided_by": record.decided_by,
        "reverted": record.reverted,
        "decided_by_sub": record.decider,
        "reverted_by_sub": record.reverted_by,
        "basis": [pair_as_dict(p) for p in record.basis],
    }


def split_as_dict(split: SenseSplit) -> dict[str, object]:
    return {
        "split_id": split.split_id,
        "from_id": split.from_id,
        "entity_id": split.entity_id,
        "doc_ids": list(split.doc_ids),
        "decided_by": split.decided_by,
        "reason": split.reason,
        "basis": [pair_as_dict(p) for p in split.basis],
    }
