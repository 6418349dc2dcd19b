"""The communities' Neo4j projection (issue 12) synced from PostgreSQL, on the real servers, at a given size.

    uv run python -m kgrag_runtime.benchmarks.graph_projections --entities 100000 --out bench-results/graph-projections

Synthetic communities (level 0: groups of 50 entities; level 1: each split in two) are written to a fresh
PostgreSQL database with `PostgresCommunityStore`, then synced into a fresh Neo4j namespace by the
community-builder's own code (`sync_communities`): the first sync (a rebuild), a sync with nothing to do
(what every community-builder batch pays), one after a community was marked stale (a deletion's or a
re-scope's mark), one after a community was reclustered (new id, members changed), and dropping them all.
After each, the projection's headers are compared with PostgreSQL's (mismatches must be 0).

Endpoints: $KGRAG_TEST_PG_DSN and $KGRAG_TEST_NEO4J_URI (the dev services), loopback only; the database and
the namespace are dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from neo4j import GraphDatabase
from rich.console import Console

from kgrag_adapters.neo4j.communities import Neo4jCommunityProjection
from kgrag_adapters.neo4j.lexical_graph import Neo4jLexicalGraph
from kgrag_adapters.postgres.communities import PostgresCommunityStore
from kgrag_adapters.postgres.community_source import PostgresCommunitySource
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_core.communities.model import Community, community_id
from kgrag_core.handlers.community_projection import header_of, sync_communities
from kgrag_runtime.benchmarks.graph import format_machine, machine_description
from kgrag_runtime.benchmarks.graph_stores import DEFAULT_NEO4J, DEFAULT_PG, _loopback, fresh_database

GROUP = 50  # members of a level-0 community


def synthetic_communities(entities: int) -> tuple[list[str], list[Community]]:
    now = datetime.now(UTC)
    ids = [f"ent_{i:08d}" for i in range(entities)]
    out: list[Community] = []
    for g in range(entities // GROUP):
        members = ids[g * GROUP : (g + 1) * GROUP]
        top = Community(community_id(0, members), 0, None, tuple(members), 1.0, 1, now, content_hash=f"t{g}")
        out.append(top)
        for i, half in enumerate((members[: GROUP // 2], members[GROUP // 2 :])):
            cid = community_id(1, half)
            out.append(Community(cid, 1, top.community_id, tuple(half), 1.0, 1, now, content_hash=f"c{g}.{i}"))
    return ids, out


def _ignore(_: object) -> None:
    """A step's change whose result the sync, not the step, reports."""


def run(entities: int, pg_server: str, neo4j_uri: str, console: Console) -> dict[str, Any]:
    for host in (urlsplit(pg_server).hostname, urlsplit(neo4j_uri).hostname):
        if not _loopback(host):
            raise SystemExit(f"refusing to benchmark against non-loopback host {host!r}")
    machine = machine_description()
    console.print(f"Machine: {format_machine(machine)}")
    ids, communities = synthetic_communities(entities)
    out: dict[str, Any] = {
        "entities": entities,
        "communities": len(communities),
        "member_links": sum(c.size for c in communities),
        "steps": {},
    }
    with fresh_database(pg_server) as dsn, PostgresStore.connect(dsn) as store, GraphDatabase.driver(neo4j_uri) as drv:
        Neo4jLexicalGraph(drv).ensure_schema()
        pg = PostgresCommunityStore(store.pool)
        pg.replace_all(communities)
        source = PostgresCommunitySource(store.pool)
        neo = Neo4jCommunityProjection(drv, namespace=f"bench-{uuid.uuid4().hex[:12]}")

        def recluster() -> None:
            # The first community loses a member: its old id (and its children) go, a new one comes.
            old = pg.communities_of([ids[0]])
            fewer = tuple(ids[1:GROUP])
            new = replace(communities[0], community_id=community_id(0, fewer), member_ids=fewer, content_hash="n")
            pg.replace([c.community_id for c in old], [new])

        steps: list[tuple[str, Callable[[], None]]] = [
            ("first sync (rebuild)", lambda: None),
            ("nothing to do", lambda: None),
            ("one community stale", lambda: _ignore(pg.mark_stale([ids[GROUP + 1]]))),
            ("one community reclustered", recluster),
        ]
        try:
            for name, change in steps:
                change()
                began = time.perf_counter()
                receipt = sync_communities(source, neo)
                seconds = time.perf_counter() - began
                want = sorted((header_of(c) for c in pg.communities()), key=lambda h: h.community_id)
                have = sorted(neo.community_headers(), key=lambda h: h.community_id)
                out["steps"][name] = {
                    "seconds": seconds,
                    "written": receipt.written,
                    "removed": receipt.removed,
                    "mismatches": len(set(want) ^ set(have)),
                }
                console.print(f"  {name}: {seconds:.2f} s ({receipt})")
            began = time.perf_counter()
            neo.drop_communities([h.community_id for h in neo.community_headers()])
            out["drop_all_s"] = time.perf_counter() - began
        finally:
            neo.drop_namespace()
    machine["load_average_1m_after"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"machine": machine, "size": out}


def markdown(results: dict[str, Any]) -> str:
    machine, size = results["machine"], results["size"]
    lines = [
        f"Machine: {format_machine(machine)}; 1-minute load average {machine['load_average_1m']:.2f} before, "
        f"{machine['load_average_1m_after']:.2f} after. {size['entities']} entities, {size['communities']} "
        f"communities, {size['member_links']} member links; dropping them all {size['drop_all_s']:.1f} s.",
        "",
        "| sync | seconds | written | removed | headers differing |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, row in size["steps"].items():
        lines.append(f"| {name} | {row['seconds']:.2f} | {row['written']} | {row['removed']} | {row['mismatches']} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The communities' Neo4j projection sync (real servers).")
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=Path("bench-results/graph-projections"))
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    pg_server = os.environ.get("KGRAG_TEST_PG_DSN") or DEFAULT_PG
    neo4j_uri = os.environ.get("KGRAG_TEST_NEO4J_URI") or DEFAULT_NEO4J
    results = run(args.entities, pg_server, neo4j_uri, console)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "graph-projections.json").write_text(json.dumps(results, indent=2))
    text = markdown(results)
    (args.out / "graph-projections.md").write_text(text)
    console.print(text)
    if any(row["mismatches"] for row in results["size"]["steps"].values()):
        raise SystemExit("the projection differs from PostgreSQL")


if __name__ == "__main__":
    main()
