"""Personalized PageRank over the passage–node graph, by power iteration over the edge list (numpy
bincount: the core needs no sparse-matrix library for a bounded neighbourhood)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kgrag_core.text_graph.model import WalkEdge


def personalized_pagerank(
    edges: Sequence[WalkEdge],
    seeds: Mapping[str, float],
    *,
    damping: float = 0.5,
    iterations: int = 30,
    tolerance: float = 1e-6,
) -> dict[str, float]:
    """Stationary scores of a walk that restarts at `seeds` (node or chunk ids, by weight) with probability
    1 - damping. Edges are undirected (a passage names a node; the node leads back to every passage naming
    it), weighted by the node's specificity. Returns passage (chunk id) scores only, highest first."""
    if not edges or not seeds:
        return {}
    ids: dict[str, int] = {}
    passages: set[str] = set()
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    for edge in edges:
        p = ids.setdefault("p:" + edge.chunk_id, len(ids))
        n = ids.setdefault("n:" + edge.node_key, len(ids))
        passages.add(edge.chunk_id)
        rows += [p, n]
        cols += [n, p]
        vals += [edge.weight, edge.weight]
    size = len(ids)
    src = np.asarray(rows, dtype=np.int64)
    dst = np.asarray(cols, dtype=np.int64)
    weight = np.asarray(vals, dtype=np.float64)
    out_weight = np.bincount(src, weights=weight, minlength=size)
    share = weight / out_weight[src]  # row-stochastic: each node hands its mass out by edge weight
    restart = np.zeros(size)
    for seed, seed_weight in seeds.items():
        for prefixed in ("p:" + seed, "n:" + seed):
            index = ids.get(prefixed)
            if index is not None and seed_weight > 0:
                restart[index] += seed_weight
    total = restart.sum()
    if total <= 0:
        return {}
    restart /= total
    rank = restart.copy()
    for _ in range(iterations):
        following = (1 - damping) * restart + damping * np.bincount(dst, weights=rank[src] * share, minlength=size)
        converged = float(np.abs(following - rank).sum()) < tolerance
        rank = following
        if converged:
            break
    scores = {chunk_id: float(rank[ids["p:" + chunk_id]]) for chunk_id in passages}
    return dict(sorted(scores.items(), key=lambda item: (-item[1], item[0])))


def specificity(df: int, passages: int) -> float:
    """IDF-like weight of a node named by `df` of `passages` passages: rare names connect strongly."""
    return float(np.log1p(max(passages, 1) / max(df, 1)))
