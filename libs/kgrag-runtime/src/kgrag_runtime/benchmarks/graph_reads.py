"""The query path's graph reads through both GraphReader adapters, PostgreSQL and Neo4j, at 10k and 100k entities.

    uv run python -m kgrag_runtime.benchmarks.graph_reads --sizes 10000,100000 --out bench-results/graph-reads

`graph_stores` projects the graph the way the graph-writer does after single events (each hub alone, then
1,000 entities per scope), which took hours at 100k entities on a shared 2-core machine: every scope's
snapshot query and every scope's delete-then-write pays a round of fixed costs. This benchmark loads the
same synthetic graph (`kgrag_runtime.benchmarks.graph`: hubs, a tenth of the chunks in a class the caller
may not read) with PostgreSQL's COPY, then projects it through the same projection code
(`project_entities`: the closed scope, PostgreSQL's snapshot, `Neo4jKnowledgeGraph.project`) in scopes of
`--scope` entities. Such a scope exceeds the projection's write batch, so it is written in bounded
transactions (write_batches.py), as a hub's scope is; what Neo4j holds is what the graph-writer would hold.

The reads are `graph_stores.measure`: `entity()`, `neighbours` (depth 1, visible evidence only, limit as
expansion fetches) and `expand()` at depth 2 and 3 (the bounded walk graph-assisted search runs, 0.25 s
budget), for hub and ordinary seeds, the same seeds and the same caller scope on both stores, in one run.
Answers are compared (must be 0 differing). Writes to Neo4j hold the dev-services test lock (the file lock
of tests/neo4j_lock.py), so a contract suite wiping the server never runs under the projection.

Endpoints: $KGRAG_TEST_PG_DSN and $KGRAG_TEST_NEO4J_URI, loopback only; database and namespace are dropped.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from rich.console import Console

from kgrag_adapters.neo4j.knowledge_graph import Neo4jKnowledgeGraph
from kgrag_adapters.neo4j.server_lock import hold_server_lock
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.postgres.knowledge_source import PostgresKnowledgeSource
from kgrag_core.acl import PUBLIC_ACL
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
from kgrag_runtime.benchmarks.graph_stores import (
    DEFAULT_NEO4J,
    DEFAULT_PG,
    _loopback,
    _timed,
    fresh_database,
    measure,
)

DEFAULT_SCOPE = 10_000  # entities per projected scope
DROP_BATCH = 5_000  # relationships or nodes per delete transaction
_DROP_EDGES = "MATCH ({ns: $ns})-[r]->() WITH r LIMIT $n DELETE r RETURN count(*) AS gone"
_DROP_NODES = "MATCH (n {ns: $ns}) WITH n LIMIT $n DETACH DELETE n RETURN count(*) AS gone"
HUB_SCOPE = 10  # hubs per projected scope
LOCK_WAIT_S = 600
LOCK_PAUSE_S = 1.0  # between two holds: a waiting suite polls every 0.5 s


def _stop(message: str) -> NoReturn:
    raise SystemExit(message)


@contextmanager
def neo4j_write_lock(uri: str, *, take: bool = True) -> Iterator[None]:
    """The server's test lock (the lexical graph's contract tests wipe the server), then a pause so a waiting
    suite gets its turn. `take=False` for a caller already holding it (flock does not nest across open files)."""
    if not take:
        yield
        return
    with hold_server_lock(uri, LOCK_WAIT_S, _stop):
        yield
    time.sleep(LOCK_PAUSE_S)


def drop_namespace(uri: str, namespace: str) -> None:
    """Edges first, then the bare nodes, in bounded transactions: `graph_stores.drop_in_batches` detaches
    10,000 nodes at once, and with 100k entities' hubs among them that ran out of transaction memory."""
    from neo4j import GraphDatabase

    with GraphDatabase.driver(uri) as driver:
        for query in (_DROP_EDGES, _DROP_NODES):
            while True:
                records, _, _ = driver.execute_query(query, ns=namespace, n=DROP_BATCH)
                if not records or int(records[0]["gone"]) == 0:
                    break


def scopes(entity_ids: Sequence[str], hub_ids: Sequence[str], size: int) -> Iterator[list[str]]:
    """Hubs HUB_SCOPE at a time (a hub's scope holds 5 % of the edges), the rest `size` at a time: each
    scope holds the Neo4j test lock for under a minute or so here, so other sessions' suites get their turn."""
    hubs = set(hub_ids)
    for start in range(0, len(hub_ids), HUB_SCOPE):
        yield list(hub_ids[start : start + HUB_SCOPE])
    ordinary = [e for e in entity_ids if e not in hubs]
    for start in range(0, len(ordinary), size):
        yield ordinary[start : start + size]


def run_size(
    entities: int,
    seeds_per_kind: int,
    scope: int,
    pg_server: str,
    neo4j_uri: str,
    console: Console,
    *,
    take_lock: bool = True,
) -> dict[str, Any]:
    locked = partial(neo4j_write_lock, neo4j_uri, take=take_lock)
    shape = GraphShape(entities)
    graph = synthetic_graph(shape)
    acl = [PUBLIC_ACL.acl_class_id]
    out: dict[str, Any] = {"entities": entities, "relations": len(graph.relations), "hubs": shape.hubs}
    out["load_average_1m_before"] = os.getloadavg()[0]
    with fresh_database(pg_server) as dsn, PostgresGraphStore.connect(dsn) as pg:
        console.print(f"[{entities}] PostgreSQL: COPY {entities} entities, {len(graph.relations)} relations…")
        out["load"] = load_graph(pg, dsn, graph)
        neo = Neo4jKnowledgeGraph.connect(neo4j_uri, namespace=f"bench-reads-{uuid.uuid4().hex[:12]}")
        try:
            with PostgresKnowledgeSource.connect(dsn) as source:
                began = time.perf_counter()
                version = source.graph_version()
                out["namespace"], out["projected_entities"] = neo.namespace, 0
                for i, batch in enumerate(scopes(graph.entity_ids, graph.hub_ids, scope)):
                    with locked():
                        receipt = project_entities(batch, source, neo)
                    out["projected_entities"] += receipt.entities
                    console.print(f"  scope {i}: {receipt} at {time.perf_counter() - began:.0f} s")
                with locked():
                    project_hubs(source, neo)
                    neo.record_watermark(version)
                out["project_s"] = time.perf_counter() - began
            rng = random.Random(shape.seed + 2)
            candidates = rng.sample(graph.entity_ids[shape.hubs :], min(entities - shape.hubs, 4 * seeds_per_kind))
            visible = [s for s in (pg.entity(e, acl) for e in candidates) if s is not None][:seeds_per_kind]
            hubs = [s for s in (pg.entity(h, acl) for h in graph.hub_ids) if s is not None]
            seeds = {"hub": [hubs[i % len(hubs)] for i in range(seeds_per_kind)], "ordinary": visible}
            console.print(f"[{entities}] measuring both readers on the same seeds…")
            out["seeds"], out["mismatches"] = measure({"postgres": pg, "neo4j": neo}, seeds, acl)
            check, _ = _timed([lambda: (neo.watermark(), pg.graph_version())] * seeds_per_kind)
            out["routing_check_ms"] = _percentiles(check)
        finally:
            console.print(f"[{entities}] dropping the namespace…")
            with locked():
                drop_namespace(neo4j_uri, neo.namespace)
            neo.close()
    out["load_average_1m_after"] = os.getloadavg()[0]
    return out


def run(
    sizes: Sequence[int], seeds_per_kind: int, scope: int, pg_server: str, neo4j_uri: str, console: Console
) -> dict[str, Any]:
    for host in (urlsplit(pg_server).hostname, urlsplit(neo4j_uri).hostname):
        if not _loopback(host):
            raise SystemExit(f"refusing to benchmark against non-loopback host {host!r}")
    machine = machine_description()
    console.print(f"Machine: {format_machine(machine)}")
    started = time.perf_counter()
    results = [run_size(n, seeds_per_kind, scope, pg_server, neo4j_uri, console) for n in sizes]
    return {"machine": machine, "scope": scope, "sizes": results, "wall_s": time.perf_counter() - started}


def markdown(results: dict[str, Any]) -> str:
    lines = [
        f"Machine: {format_machine(results['machine'])}; whole run {results['wall_s']:.0f} s; projected in "
        f"scopes of {results['scope']} entities.",
        "",
        "| entities | seeds | store | entity() p50 / p95 ms | neighbours d1 p50 / p95 ms | expand d2 p50 / p95 ms "
        "| expand d3 p50 / p95 ms | answers differing |",
        "|---:|---|---|---|---|---|---|---:|",
    ]
    for size in results["sizes"]:
        for kind, stores in size["seeds"].items():
            for store, row in stores.items():
                lines.append(
                    f"| {size['entities']} | {kind} | {store} | {_pp(row['entity_ms'])} "
                    f"| {_pp(row['neighbours_ms'])} | {_pp(row['expand_d2_ms'])} | {_pp(row['expand_d3_ms'])} "
                    f"| {size['mismatches'][kind]} |"
                )
    lines.append("")
    lines.append(
        "| entities | relations | hubs | PostgreSQL COPY s | Neo4j projection s | routing check p50 / p95 ms "
        "| load 1m before → after |"
    )
    lines.append("|---:|---:|---:|---:|---:|---|---|")
    for size in results["sizes"]:
        lines.append(
            f"| {size['entities']} | {size['relations']} | {size['hubs']} | {size['load']['copy_s']:.1f} "
            f"| {size['project_s']:.1f} | {_pp(size['routing_check_ms'])} "
            f"| {size['load_average_1m_before']:.1f} → {size['load_average_1m_after']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Graph reads on PostgreSQL and Neo4j, same run (real servers).")
    parser.add_argument("--sizes", default="10000,100000", help="Entity counts, comma-separated.")
    parser.add_argument("--seeds", type=int, default=30, help="Seeds per kind (hub, ordinary).")
    parser.add_argument("--scope", type=int, default=DEFAULT_SCOPE, help="Entities per projected scope.")
    parser.add_argument("--out", type=Path, default=Path("bench-results/graph-reads"))
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    pg_server = os.environ.get("KGRAG_TEST_PG_DSN") or DEFAULT_PG
    neo4j_uri = os.environ.get("KGRAG_TEST_NEO4J_URI") or DEFAULT_NEO4J
    sizes = [int(s) for s in args.sizes.split(",") if s]
    results = run(sizes, args.seeds, args.scope, pg_server, neo4j_uri, console)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "graph-reads.json").write_text(json.dumps(results, indent=2))
    text = markdown(results)
    (args.out / "graph-reads.md").write_text(text)
    console.print(text)
    bad = {s["entities"]: s["mismatches"] for s in results["sizes"] if any(s["mismatches"].values())}
    if bad:
        raise SystemExit(f"the readers disagree: {bad}")


if __name__ == "__main__":
    main()
