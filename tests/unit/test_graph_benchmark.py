"""The graph traversal benchmark on a tiny graph: its shape, that the load and hub labelling add up, and that the
report covers every seed kind and path. No timing is asserted (the numbers live in docs/benchmarks.md)."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from rich.console import Console

from kgrag_core.graph_retrieval.expansion import ExpansionSettings
from kgrag_runtime.benchmarks.graph import GraphShape, graph_markdown, measure_size, synthetic_graph

SHAPE = GraphShape(entities=400, hub_edge_share=0.05, seed=3)


@pytest.fixture
def bench_dsn(pg_server_dsn: str) -> Iterator[str]:
    name = f"kgrag_test_graphbench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(pg_server_dsn, dbname=name)
    finally:
        with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_synthetic_graph_is_deterministic_and_has_its_hubs() -> None:
    graph = synthetic_graph(SHAPE)
    assert graph == synthetic_graph(SHAPE)
    assert len(graph.entity_ids) == SHAPE.entities and len(graph.hub_ids) == SHAPE.hubs == 5
    degree: Counter[str] = Counter()
    for _, subject, _, obj in graph.relations:
        degree[subject] += 1
        degree[obj] += 1
    assert all(degree[h] == SHAPE.hub_degree for h in graph.hub_ids)
    ordinary_max = max(degree[e] for e in graph.entity_ids if e not in graph.hub_ids)
    assert ordinary_max < SHAPE.hub_degree
    # Every relation has evidence, at most two chunks, never the same chunk twice.
    per_relation = Counter(r for r, _ in graph.evidence)
    assert set(per_relation) == {r[0] for r in graph.relations}
    assert max(per_relation.values()) <= 2
    assert len(set(graph.evidence)) == len(graph.evidence)


def test_measure_size_reports_every_path_for_hub_and_ordinary_seeds(bench_dsn: str) -> None:
    result = measure_size(SHAPE, bench_dsn, seeds_per_kind=6, baseline_seeds=2, console=Console(quiet=True))
    graph = synthetic_graph(SHAPE)
    assert result["relations"] == len(graph.relations) and result["evidence_rows"] == len(graph.evidence)
    assert result["load"]["hubs_labelled"] == SHAPE.hubs
    with psycopg.connect(bench_dsn) as conn:
        counts = {
            table: conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
            for table in ("kg_entities", "kg_relations", "kg_relation_evidence", "kg_hubs")
        }
    assert counts == {
        "kg_entities": (SHAPE.entities,),
        "kg_relations": (len(graph.relations),),
        "kg_relation_evidence": (len(graph.evidence),),
        "kg_hubs": (SHAPE.hubs,),
    }
    hub, ordinary = result["seeds"]["hub"], result["seeds"]["ordinary"]
    assert hub["hub_flag_seen"] == 6 and ordinary["hub_flag_seen"] == 0
    settings = ExpansionSettings()
    for row in (hub, ordinary):
        for key in ("entity_ms", "neighbours_ms", "expand_depth1_ms", "expand_depth2_ms", "expand_depth3_ms"):
            assert row[key]["n"] == 6 and 0 < row[key]["p50"] <= row[key]["p95"]
        for depth in (1, 2):
            assert row[f"naive_depth{depth}_ms"]["n"] + row[f"naive_depth{depth}_timeouts"] == 2
        # A deeper walk keeps at least what a shallower one kept (the same beam, one more hop).
        assert row["expand_depth3_edges"]["p50"] >= row["expand_depth2_edges"]["p50"]
    # A hub seed keeps only hub_fan_out edges at depth 1; the unbounded walk sees all its visible neighbours.
    assert hub["expand_depth1_edges"]["p95"] <= settings.hub_fan_out
    assert hub["naive_depth1_reached"]["p50"] > settings.hub_fan_out
    assert hub["naive_depth2_reached"]["p50"] >= hub["naive_depth1_reached"]["p50"]
    report = graph_markdown(
        {
            "machine": {
                "architecture": "x",
                "cpu": "y",
                "cores": 2,
                "python": "3",
                "os": "z",
                "load_average_1m": 0.0,
                "load_average_1m_after": 0.0,
            },
            "sizes": [result],
            "wall_s": 1.0,
        }
    )
    assert report.count(f"| {SHAPE.entities} |") == 2
    assert "| hub |" in report and "| ordinary |" in report
