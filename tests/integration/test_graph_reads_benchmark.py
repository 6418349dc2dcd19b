"""`make bench-distributed`'s graph-reads part, small: both readers answer the same seeds alike, and the
benchmark leaves nothing behind in Neo4j."""

from __future__ import annotations

import io

import pytest
from neo4j import GraphDatabase
from rich.console import Console

from kgrag_runtime.benchmarks import graph_reads
from tests.integration.conftest import endpoint
from tests.neo4j_lock import neo4j_held

pytestmark = pytest.mark.integration

SEEDS = 3


def test_the_graph_reads_benchmark_measures_both_readers_in_parity(pg_server_dsn: str) -> None:
    with neo4j_held(endpoint("neo4j")) as uri:
        # Scopes of 100 entities: the projection spans several scopes, as at 100k.
        size = graph_reads.run_size(200, SEEDS, 100, pg_server_dsn, uri, Console(file=io.StringIO()), take_lock=False)
        with GraphDatabase.driver(uri) as driver:
            left, _, _ = driver.execute_query("MATCH (n {ns: $ns}) RETURN count(n) AS n", ns=size["namespace"])
    assert size["projected_entities"] == 200
    assert size["mismatches"] == {"hub": 0, "ordinary": 0}
    for kind in ("hub", "ordinary"):
        for store in ("postgres", "neo4j"):
            row = size["seeds"][kind][store]
            assert {k: row[k]["n"] for k in row} == {
                "entity_ms": SEEDS,
                "neighbours_ms": SEEDS,
                "expand_d2_ms": SEEDS,
                "expand_d3_ms": SEEDS,
            }
    assert left[0]["n"] == 0
    text = graph_reads.markdown(
        {
            "machine": {"architecture": "x", "cpu": "c", "cores": 2, "python": "3", "os": "L"},
            "scope": 100,
            "sizes": [size],
            "wall_s": 1.0,
        }
    )
    assert "| 200 | hub | neo4j |" in text
