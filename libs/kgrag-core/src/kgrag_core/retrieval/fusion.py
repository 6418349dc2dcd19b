"""Reciprocal rank fusion.

RRF combines routes by rank, not by raw score, because BM25 scores and cosine similarities live on
unrelated scales. Ties break on chunk ID so the order never depends on dict or set iteration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kgrag_core.search import RouteHit

RRF_K = 60


@dataclass(frozen=True, slots=True)
class FusedCandidate:
    chunk_id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def reciprocal_rank_fusion(
    routes: Mapping[str, Sequence[RouteHit]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[FusedCandidate]:
    """Fuse ranked lists: score(c) = sum over routes of weight / (k + rank)."""
    if k <= 0:
        raise ValueError("k must be positive")
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for route in sorted(routes):
        weight = 1.0 if weights is None else weights.get(route, 1.0)
        seen: set[str] = set()
        for hit in routes[route]:
            # A route that returns the same chunk twice counts it once, at its best rank.
            if hit.chunk_id in seen:
                continue
            seen.add(hit.chunk_id)
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + weight / (k + hit.rank)
            ranks.setdefault(hit.chunk_id, {})[route] = hit.rank
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [FusedCandidate(chunk_id, score, ranks[chunk_id]) for chunk_id, score in ordered]
