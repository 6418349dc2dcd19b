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
    corpus: int | None = None,
) -> dict[str, float]:
    """Stationary scores of a walk that restarts at `seeds` (node or chunk ids, by weight) with probability
    1 - damping. Edges are undirected (a passage names a node; the node leads back to every passage naming
    it), weighted by the edge's weight, times its node's specificity when `corpus` (the number of passages the
    edges' `df` counts in) is given. Returns passage (chunk id) scores only, highest first."""
    if not edges or not seeds:
        return {}
    # Ids in sorted order, passages first (0..P-1), then nodes: the distinct ids sorted once and looked up per
    # edge (np.unique over object arrays sorts all of them by Python comparisons, three times slower).
    chunk_list = [e.chunk_id for e in edges]
    node_list = [e.node_key for e in edges]
    chunk_ids = sorted(set(chunk_list))
    node_ids = sorted(set(node_list))
    count = len(chunk_ids)
    size = count + len(node_ids)
    passage_index = {c: i for i, c in enumerate(chunk_ids)}
    node_index = {k: i + count for i, k in enumerate(node_ids)}
    p = np.fromiter(map(passage_index.__getitem__, chunk_list), dtype=np.int64, count=len(edges))
    n = np.fromiter(map(node_index.__getitem__, node_list), dtype=np.int64, count=len(edges))
    src = np.concatenate([p, n])
    dst = np.concatenate([n, p])
    weight = np.asarray([e.weight for e in edges], dtype=np.float64)
    if corpus is not None:
        dfs = np.asarray([e.df for e in edges], dtype=np.float64)
        weight = weight * np.log1p(max(corpus, 1) / np.maximum(dfs, 1.0))
    weight = np.concatenate([weight, weight])
    out_weight = np.bincount(src, weights=weight, minlength=size)
    share = weight / out_weight[src]  # row-stochastic: each node hands its mass out by edge weight
    restart = np.zeros(size)
    for seed, seed_weight in seeds.items():
        for index in (passage_index.get(seed), node_index.get(seed)):
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
    # Highest first, ties by chunk id (chunk_ids is sorted, so a stable sort on the score alone keeps that).
    order = np.argsort(-rank[:count], kind="stable")
    return {chunk_ids[i]: float(rank[i]) for i in order}


def specificity(df: int, passages: int) -> float:
    """IDF-like weight of a node named by `df` of `passages` passages: rare names connect strongly."""
    return float(np.log1p(max(passages, 1) / max(df, 1)))
