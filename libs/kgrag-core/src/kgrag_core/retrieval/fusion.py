"""Reciprocal rank fusion.

RRF combines routes by rank, not by raw score, because BM25 scores and cosine similarities live on
unrelated scales. Ties break on chunk ID so the order never depends on dict or set iteration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from kgrag_core.errors import KgragError
from kgrag_core.search import RouteHit, SearchHit

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


def head_first(fused: Sequence[FusedCandidate], head: Sequence[str]) -> list[FusedCandidate]:
    """`fused` with the chunks of `head` (those fused) first, in head order."""
    by_id = {c.chunk_id: c for c in fused}
    head_ids = set(head)
    return [by_id[c] for c in head if c in by_id] + [c for c in fused if c.chunk_id not in head_ids]


def fused_hits(
    ordered: Sequence[FusedCandidate],
    known: Mapping[str, SearchHit],
    k: int,
    *,
    base_limits: Mapping[str, object],
    routes: Mapping[str, Sequence[RouteHit]],
    weights: Mapping[str, float],
    fused_count: int,
) -> tuple[tuple[SearchHit, ...], dict[str, object]]:
    """The first `k` hydrated candidates as hits with their fused score and ranks, and the limits a fused
    search reports. A candidate missing from `known` failed the ACL recheck (deleted, re-permissioned, never
    readable) or was not hydrated, and is skipped."""
    hits: list[SearchHit] = []
    for candidate in ordered:
        hit = known.get(candidate.chunk_id)
        if hit is None:
            continue
        hits.append(replace(hit, score=candidate.score, ranks=dict(candidate.ranks)))
        if len(hits) == k:
            break
    limits = dict(base_limits)
    limits.update(
        {
            "top_k": k,
            "route_counts": {name: len(r) for name, r in sorted(routes.items())},
            "route_weights": dict(sorted(weights.items())),
            "fused_candidates": fused_count,
            "truncated": fused_count > k,
        }
    )
    return tuple(hits), limits


def describe_failure(err: Exception) -> str:
    """A failed retrieval layer's reason, as a degraded response reports it."""
    if isinstance(err, KgragError):
        return f"{err.code.value}: {err}"
    return f"{type(err).__name__}: {err}"
