"""Graph traversal on the Neo4j projection next to PostgreSQL, on the real servers, at a configurable size.

    uv run python -m kgrag_runtime.benchmarks.graph_stores --entities 100000 --out bench-results/graph-stores

The synthetic graph of `kgrag_runtime.benchmarks.graph` (hubs, a tenth of the chunks restricted) is written
into a fresh PostgreSQL database with COPY, then projected into a fresh Neo4j namespace through the
graph-writer's own projection code (`project_entities` in batches, `project_hubs`, the watermark). The same
seeds (hubs and ordinary entities the caller can see) are then asked of both readers: `entity`, `neighbours`
(one hop, as expansion fetches it), and `expand()` at depth 2 and 3 as graph-assisted search runs it. Every
answer is compared (parity: the count of seeds whose answers differ is reported and must be 0), and the
routed reader's check (watermark and graph version) is timed on its own, since distributed reads pay it.

Endpoints: $KGRAG_TEST_PG_DSN and $KGRAG_TEST_NEO4J_URI (the dev services), loopback only; the database
and the namespace are dropped afterwards.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import random
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from rich.console import Console

from kgrag_adapters.neo4j.knowledge_graph import Neo4jKnowledgeGraph
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.postgres.knowledge_source import PostgresKnowledgeSource
from kgrag_core.acl import PUBLIC_ACL
from kgrag_core.graph.model import EntitySummary
from kgrag_core.graph.ports import GraphReader
from kgrag_core.graph_retrieval.expansion import ExpansionSettings, expand
from kgrag_core.graph_retrieval.router import QuestionKind
from kgrag_core.handlers.knowledge_projection import project_entities, project_hubs
from kgrag_runtime.benchmarks.graph import (
    GraphShape,
    _percentiles,
    _pp,
    format_machine,
    load_graph,
    machine_description,
    synthetic_graph,
)

_T = TypeVar("_T")

DEFAULT_PG = "postgresql://postgres:kgrag@127.0.0.1:5433/kgrag"
DEFAULT_NEO4J = "bolt://127.0.0.1:7687"
PROJECT_BATCH = 1_000  # ordinary entities per projection transaction
DROP_BATCH = 10_000  # nodes per delete transaction when the namespace is dropped


def _loopback(host: str | None) -> bool:
    if host in (None, "", "localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextmanager
def fresh_database(server_dsn: str) -> Iterator[str]:
    name = f"kgrag_bench_graph_{uuid.uuid4().hex[:12]}"
    ident = sql.Identifier(name)
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(ident))
    try:
        yield make_conninfo(server_dsn, dbname=name)
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))


def drop_in_batches(neo: Neo4jKnowledgeGraph, uri: str) -> None:
    """`drop_namespace` in one transaction would hold a 100k-entity graph in the server's transaction memory."""
    from neo4j import GraphDatabase

    with GraphDatabase.driver(uri) as driver:
        while True:
            records, _, _ = driver.execute_query(
                "MATCH (n {ns: $ns}) WITH n LIMIT $n DETACH DELETE n RETURN count(*) AS gone",
                ns=neo.namespace,
                n=DROP_BATCH,
            )
            if not records or int(records[0]["gone"]) == 0:
                return


def projection_batches(entity_ids: Sequence[str], hub_ids: Sequence[str]) -> Iterator[list[str]]:
    """A hub alone, as a graph-writer event about it projects it (its scope carries every edge touching it:
    5 % of the graph each, here), the rest by PROJECT_BATCH. Either is written in transactions of at most
    the projection's write batch (`Neo4jKnowledgeGraph`, write_batches.py): all 50 hubs of 100k entities in
    one transaction (250k edges) ran the dev server's 512 MiB heap out of memory and stopped it."""
    hubs = set(hub_ids)
    for hub in hub_ids:
        yield [hub]
    ordinary = [e for e in entity_ids if e not in hubs]
    for start in range(0, len(ordinary), PROJECT_BATCH):
        yield ordinary[start : start + PROJECT_BATCH]


def _timed(calls: Sequence[Callable[[], _T]]) -> tuple[list[float], list[_T]]:
    times: list[float] = []
    answers: list[_T] = []
    for call in calls:
        began = time.perf_counter()
        answers.append(call())
        times.append((time.perf_counter() - began) * 1000)
    return times, answers


def _walk(reader: GraphReader, seed: EntitySummary, acl: Sequence[str], walk: ExpansionSettings) -> list[str] | None:
    """The edges one expansion walked; None where its time budget cut it (it may stop at another edge)."""
    traversal = expand(
        [(seed, 1.0)], reader, acl, question="", kind=QuestionKind.MULTI_HOP, settings=walk, clock=time.monotonic
    )
    if any(n.startswith("time budget") for n in traversal.truncated):
        return None
    return sorted(step.edge.relation_id for step in traversal.steps)


def _one_reader(
    reader: GraphReader, summaries: Sequence[EntitySummary], acl: Sequence[str]
) -> tuple[dict[str, Any], dict[str, list[object]]]:
    settings = ExpansionSettings()
    ids = [s.entity.entity_id for s in summaries]
    reader.neighbours(ids[0], acl)  # warm-up
    row: dict[str, Any] = {}
    got: dict[str, list[object]] = {}
    times, entities = _timed([partial(reader.entity, e, acl) for e in ids])
    row["entity_ms"], got["entity"] = times, list(entities)
    limit = settings.fetch_per_entity + 1
    times, edges = _timed([partial(reader.neighbours, e, acl, limit=limit) for e in ids])
    row["neighbours_ms"], got["neighbours"] = times, list(edges)
    for depth in (2, 3):
        walk = replace(settings, depth_by_kind={**settings.depth_by_kind, QuestionKind.MULTI_HOP: depth})
        times, walks = _timed([partial(_walk, reader, s, acl, walk) for s in summaries])
        row[f"expand_d{depth}_ms"], got[f"expand_d{depth}"] = times, list(walks)
    return {k: _percentiles(v) for k, v in row.items()}, got


def measure(
    readers: dict[str, GraphReader], seeds: dict[str, list[EntitySummary]], acl: Sequence[str]
) -> tuple[dict[str, Any], dict[str, int]]:
    """Per seed kind and store, p50/p95 of each read; per seed kind, the answers that differ between stores."""
    rows: dict[str, Any] = {}
    mismatches: dict[str, int] = {}
    for kind, summaries in seeds.items():
        answers: dict[str, dict[str, list[object]]] = {}
        for store, reader in readers.items():
            rows.setdefault(kind, {})[store], answers[store] = _one_reader(reader, summaries, acl)
        pg, neo = answers["postgres"], answers["neo4j"]
        mismatches[kind] = sum(
            1
            for key in pg
            for a, b in zip(pg[key], neo[key], strict=True)
            if a is not None and b is not None and a != b
        )
    return rows, mismatches


def run(entities: int, seeds_per_kind: int, pg_server: str, neo4j_uri: str, console: Console) -> dict[str, Any]:
    for host in (urlsplit(pg_server).hostname, urlsplit(neo4j_uri).hostname):
        if not _loopback(host):
            raise SystemExit(f"refusing to benchmark against non-loopback host {host!r}")
    machine = machine_description()
    console.print(f"Machine: {format_machine(machine)}")
    started = time.perf_counter()
    shape = GraphShape(entities)
    graph = synthetic_graph(shape)
    acl = [PUBLIC_ACL.acl_class_id]
    out: dict[str, Any] = {"entities": entities, "relations": len(graph.relations), "hubs": shape.hubs}
    with fresh_database(pg_server) as dsn, PostgresGraphStore.connect(dsn) as pg:
        console.print(f"  PostgreSQL: COPY {entities} entities, {len(graph.relations)} relations…")
        out["load"] = load_graph(pg, dsn, graph)
        neo = Neo4jKnowledgeGraph.connect(neo4j_uri, namespace=f"bench-{uuid.uuid4().hex[:12]}")
        try:
            with PostgresKnowledgeSource.connect(dsn) as source:
                console.print(f"  Neo4j: projecting in batches of {PROJECT_BATCH} entities…")
                began = time.perf_counter()
                version = source.graph_version()
                for batch in projection_batches(graph.entity_ids, graph.hub_ids):
                    project_entities(batch, source, neo)
                project_hubs(source, neo)
                neo.record_watermark(version)
                out["project_s"] = time.perf_counter() - began
            rng = random.Random(shape.seed + 2)
            candidates = rng.sample(graph.entity_ids[shape.hubs :], min(entities - shape.hubs, 4 * seeds_per_kind))
            visible = [s for s in (pg.entity(e, acl) for e in candidates) if s is not None][:seeds_per_kind]
            hubs = [s for s in (pg.entity(h, acl) for h in graph.hub_ids) if s is not None]
            seeds = {"hub": [hubs[i % len(hubs)] for i in range(seeds_per_kind)], "ordinary": visible}
            console.print("  measuring both readers on the same seeds…")
            out["seeds"], out["mismatches"] = measure({"postgres": pg, "neo4j": neo}, seeds, acl)
            check, _ = _timed([lambda: (neo.watermark(), pg.graph_version())] * seeds_per_kind)
            out["routing_check_ms"] = _percentiles(check)
        finally:
            console.print("  dropping the namespace…")
            drop_in_batches(neo, neo4j_uri)
            neo.close()
    machine["load_average_1m_after"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"machine": machine, "size": out, "wall_s": time.perf_counter() - started}


def markdown(results: dict[str, Any]) -> str:
    machine, size = results["machine"], results["size"]
    lines = [
        f"Machine: {format_machine(machine)}; 1-minute load average {machine['load_average_1m']:.2f} before, "
        f"{machine['load_average_1m_after']:.2f} after; whole run {results['wall_s']:.0f} s. "
        f"{size['entities']} entities, {size['relations']} relations, {size['hubs']} hubs; PostgreSQL COPY "
        f"{size['load']['copy_s']:.1f} s, Neo4j projection {size['project_s']:.1f} s; routing check (watermark + "
        f"graph version) p50 / p95 {_pp(size['routing_check_ms'])} ms.",
        "",
        "| seeds | store | entity() p50 / p95 ms | neighbours p50 / p95 ms | expand d2 p50 / p95 ms "
        "| expand d3 p50 / p95 ms | answers differing |",
        "|---|---|---|---|---|---|---:|",
    ]
    for kind, stores in size["seeds"].items():
        for store, row in stores.items():
            lines.append(
                f"| {kind} | {store} | {_pp(row['entity_ms'])} | {_pp(row['neighbours_ms'])} "
                f"| {_pp(row['expand_d2_ms'])} | {_pp(row['expand_d3_ms'])} | {size['mismatches'][kind]} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Graph traversal on Neo4j next to PostgreSQL (real servers).")
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, default=30, help="Seeds per kind (hub, ordinary).")
    parser.add_argument("--out", type=Path, default=Path("bench-results/graph-stores"))
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    pg_server = os.environ.get("KGRAG_TEST_PG_DSN") or DEFAULT_PG
    neo4j_uri = os.environ.get("KGRAG_TEST_NEO4J_URI") or DEFAULT_NEO4J
    results = run(args.entities, args.seeds, pg_server, neo4j_uri, console)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "graph-stores.json").write_text(json.dumps(results, indent=2))
    text = markdown(results)
    (args.out / "graph-stores.md").write_text(text)
    console.print(text)
    if any(results["size"]["mismatches"].values()):
        raise SystemExit(f"the readers disagree: {results['size']['mismatches']}")


if __name__ == "__main__":
    main()
