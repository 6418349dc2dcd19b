"""Graph paths for a response: the bounded expansion's walk as entity-relation-entity chains.

Each path runs from a seed (an entity the question or a top passage named) to an entity the walk reached,
one hop per edge, each hop with its evidence chunk IDs and the edge's confidence. Only hops whose evidence
the caller can read (rechecked against the authoritative store, as every hit is) are walked: an entity
reached only over a hidden edge is never shown, and a hop keeps only the chunk IDs the caller may open.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from dataclasses import dataclass

from kgrag_core.graph.model import EntityRef, Traversal, TraversalStep
from kgrag_core.graph_retrieval.expansion import edge_labels

MAX_PATHS = 20  # paths in one response, best first (by the walk's own score)


@dataclass(frozen=True, slots=True)
class PathHop:
    subject: EntityRef
    relation: str
    target: EntityRef  # the edge's object
    chunk_ids: tuple[str, ...]
    confidence: float
    labels: tuple[str, ...] = ()  # "negated", "plan", ...: the edge is not a plain fact
    inverse: bool = False  # the walk went from the object to the subject

    @property
    def start(self) -> EntityRef:
        return self.target if self.inverse else self.subject

    @property
    def end(self) -> EntityRef:
        return self.subject if self.inverse else self.target

    def as_dict(self) -> dict[str, object]:
        return {
            "subject": _entity(self.subject),
            "relation": self.relation,
            "object": _entity(self.target),
            "direction": "inverse" if self.inverse else "forward",
            "supporting_chunks": list(self.chunk_ids),
            "confidence": round(self.confidence, 3),
            "labels": list(self.labels),
        }


@dataclass(frozen=True, slots=True)
class GraphPath:
    hops: tuple[PathHop, ...]
    score: float  # the walk's score of the last hop (link score x edge scores)

    @property
    def confidence(self) -> float:
        """The chain holds only as well as every hop does: the product of the hops' confidences."""
        product = 1.0
        for hop in self.hops:
            product *= hop.confidence
        return product

    def as_dict(self) -> dict[str, object]:
        # In walking order; a hop walked against the edge's direction reads "<-RELATION-".
        names: list[str] = [self.hops[0].start.name] if self.hops else []
        for hop in self.hops:
            names += [f"<-{hop.relation}-" if hop.inverse else hop.relation, hop.end.name]
        chunks = sorted({c for hop in self.hops for c in hop.chunk_ids})
        return {
            "path": names,
            "hops": [hop.as_dict() for hop in self.hops],
            "supporting_chunks": chunks,
            "confidence": round(self.confidence, 3),
        }


def graph_paths(traversal: Traversal, readable: Collection[str], *, limit: int = MAX_PATHS) -> tuple[GraphPath, ...]:
    """A chain to every entity the walk reached over readable evidence, best first, at most `limit`.

    Breadth first over the walk's readable edges from each seed in turn (the question's own entities come
    first): a seed another seed's chain reaches is reached through it, so "Kim Lee MEMBER_OF Falcon <-LEADS-
    Jordan Blake" is one chain even when all three were named. An entity reached only over evidence the
    caller cannot read is not reached at all.
    """
    adjacent: dict[str, list[TraversalStep]] = {}
    for step in sorted(traversal.steps, key=lambda s: (-s.score, s.edge.relation_id)):
        if any(c in readable for c in step.edge.evidence_chunk_ids):
            adjacent.setdefault(step.edge.subject.entity_id, []).append(step)
            adjacent.setdefault(step.edge.object.entity_id, []).append(step)
    reached: dict[str, tuple[PathHop, ...]] = {}
    paths: list[GraphPath] = []
    for seed in traversal.seeds:
        if seed.entity_id in reached:
            continue
        reached[seed.entity_id] = ()
        queue = deque([seed.entity_id])
        while queue:
            here = queue.popleft()
            for step in adjacent.get(here, []):
                inverse = step.edge.object.entity_id == here
                far = step.edge.subject.entity_id if inverse else step.edge.object.entity_id
                if far in reached:
                    continue
                hop = _readable_hop(step, readable, inverse=inverse)
                if hop is None:  # unreachable: adjacency holds readable edges only
                    continue
                reached[far] = (*reached[here], hop)
                paths.append(GraphPath(reached[far], step.score))
                queue.append(far)
    paths.sort(key=lambda p: (-p.score, len(p.hops), [h.end.entity_id for h in p.hops]))
    return tuple(paths[:limit])


def _readable_hop(step: TraversalStep, readable: Collection[str], *, inverse: bool) -> PathHop | None:
    chunks = tuple(c for c in step.edge.evidence_chunk_ids if c in readable)
    if not chunks:
        return None
    edge = step.edge
    return PathHop(edge.subject, edge.relation, edge.object, chunks, edge.confidence, edge_labels(edge), inverse)


def _entity(ref: EntityRef) -> dict[str, str]:
    return {"id": ref.entity_id, "name": ref.name, "type": ref.type}
