"""A deterministic top-k over engines that break score ties by their own internal order."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kgrag_core.search import RouteHit


def top_k_breaking_ties_by_id(
    fetch: Callable[[int], Sequence[tuple[str, float]]], limit: int, max_fetch: int
) -> list[RouteHit]:
    """Ask the engine for more than `limit` hits until the tie group that straddles the cut-off is
    complete, then rank by (-score, chunk_id): the chunk ID, never the engine, decides who is in.

    `fetch(n)` returns up to n (chunk_id, score) pairs in the engine's score order.
    """
    size = limit + 1
    while True:
        found = fetch(size)
        if len(found) < size or found[-1][1] < found[limit - 1][1] or size >= max_fetch:
            break
        size = min(size * 2, max_fetch)
    ranked = sorted(found, key=lambda hit: (-hit[1], hit[0]))
    return [RouteHit(chunk_id, score, rank) for rank, (chunk_id, score) in enumerate(ranked[:limit], 1)]
