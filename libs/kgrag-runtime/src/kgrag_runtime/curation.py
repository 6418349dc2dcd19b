"""The curation queue: what a curator should look at, in one admin view (`GET /v1/admin/curation`,
`kgrag curation`).

Four lists, each bounded and saying when it was cut: open feedback on traces (newest first), merge
candidates (resolution's "possibly the same" pairs, highest score first; decide them with the entity
review), conflicting claims (same attribute, same day written, different values) and low-confidence edges
(whose best evidence is below a threshold, weakest first). Feedback is worked through by resolving it;
the other three by the actions they name (review, merge or split, re-extraction), after which they leave
the queue by themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.tracing.curation import DEFAULT_EDGE_CONFIDENCE, conflict_groups
from kgrag_core.tracing.model import FeedbackStatus

if TYPE_CHECKING:
    from kgrag_runtime.app import KgragApp

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000

ACTIONS = {
    "feedback": "resolve it: POST /v1/admin/curation/feedback/{feedback_id}/resolve (kgrag curation resolve ID)",
    "merge_candidates": "decide the pair: POST /v1/admin/entities/review (kgrag entities review)",
    "conflicts": "check the sources; a wrong value is fixed at its document (or by a re-extraction)",
    "low_confidence_edges": "check the evidence; a wrong edge goes with a re-extraction or a split",
}


def curation_queue(
    kg: KgragApp, *, limit: int = DEFAULT_LIMIT, max_edge_confidence: float = DEFAULT_EDGE_CONFIDENCE
) -> dict[str, object]:
    if not 1 <= limit <= MAX_LIMIT or not 0.0 <= max_edge_confidence <= 1.0:
        raise KgragError(
            ErrorCode.LIMIT_EXCEEDED,
            f"limit must be 1-{MAX_LIMIT} and max_edge_confidence 0-1.",
            hint="Ask for a smaller page.",
        )
    traces = kg.require_traces()
    # One more than fits, so a full list is reported as truncated rather than cut silently.
    feedback = [f.as_dict() for f in traces.store.list_feedback(status=FeedbackStatus.OPEN, limit=limit + 1)]
    pairs: list[dict[str, object]] = []
    conflicts: list[dict[str, object]] = []
    edges: list[dict[str, object]] = []
    graph = kg.graph
    if graph is not None and kg.curation is not None:
        pairs = graph.review_queue(limit + 1)
        entities = kg.curation.conflicted_entities(limit + 1)
        conflicts = conflict_groups(graph.store.claims_of(entities, None), limit + 1) if entities else []
        edges = [e.as_dict() for e in kg.curation.weak_edges(max_edge_confidence, limit + 1)]
    lists = {"feedback": feedback, "merge_candidates": pairs, "conflicts": conflicts, "low_confidence_edges": edges}
    out: dict[str, object] = {name: items[:limit] for name, items in lists.items()}
    out["limits"] = {
        "limit": limit,
        "max_edge_confidence": max_edge_confidence,
        "truncated": sorted(name for name, items in lists.items() if len(items) > limit),
        "graph": graph is not None,
    }
    out["actions"] = ACTIONS
    return out
