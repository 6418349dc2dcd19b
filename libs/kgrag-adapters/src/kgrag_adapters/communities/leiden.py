"""`CommunityDetector` on leidenalg over igraph: Leiden with the RB configuration model (resolution 1.0 is
modularity), edge weights as given, a fixed seed and a fixed number of iterations, so one input always
gives one partition."""

from __future__ import annotations

from collections.abc import Sequence

import igraph
import leidenalg

from kgrag_core.communities.model import GraphEdge


class LeidenDetector:
    def __init__(self, *, iterations: int = 2) -> None:
        # leidenalg's default; -1 (until no move improves it) took ~15x longer for the same communities
        # on the benchmark's planted graph (docs/communities.md, "Benchmarks").
        self._iterations = iterations

    @property
    def version(self) -> str:
        return f"leidenalg-{leidenalg.__version__}/igraph-{igraph.__version__}"

    def partition(
        self, nodes: Sequence[str], edges: Sequence[GraphEdge], *, seed: int, resolution: float
    ) -> list[list[str]]:
        names = sorted(set(nodes))
        if not names:
            return []
        index = {n: i for i, n in enumerate(names)}
        kept = sorted((e for e in edges if e.a in index and e.b in index and e.weight > 0), key=lambda e: (e.a, e.b))
        graph = igraph.Graph(n=len(names), edges=[(index[e.a], index[e.b]) for e in kept], directed=False)
        graph.es["weight"] = [e.weight for e in kept]
        found = leidenalg.find_partition(
            graph,
            leidenalg.RBConfigurationVertexPartition,
            weights="weight" if kept else None,
            resolution_parameter=resolution,
            n_iterations=self._iterations,
            seed=seed,
        )
        groups = [sorted(names[i] for i in members) for members in found if members]
        return sorted(groups, key=lambda g: (-len(g), g[0]))
