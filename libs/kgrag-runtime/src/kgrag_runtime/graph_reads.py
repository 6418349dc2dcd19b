"""`kgrag_graph_reads_total{route}` on the query API's /metrics: where the graph reads went (docs/operations.md,
"Graph reads"). A rising `behind` or `unavailable` count is the projection lagging or down, served by
PostgreSQL meanwhile."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from kgrag_core.graph.routing import RoutedGraphReader


class GraphReadsCollector(Collector):
    def __init__(self, reader: RoutedGraphReader) -> None:
        self._reader = reader

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "kgrag_graph_reads", "Graph reads by route: the Neo4j projection, or PostgreSQL and why.", labels=["route"]
        )
        for route, count in sorted(self._reader.counts.items()):
            family.add_metric([route.value], count)
        yield family
