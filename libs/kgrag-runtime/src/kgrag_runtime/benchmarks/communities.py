"""Community build and refresh at 10k and 100k entities, on embedded PostgreSQL (synthetic, labelled so).

    uv run python -m kgrag_runtime.benchmarks.communities --sizes 10000,100000 --out bench-results/communities

The graph is SYNTHETIC with planted communities: entities in blocks of `block` consecutive ids, most of
each entity's edges inside its block, a share to random others, and hubs tied to a share of everyone (as
in `kgrag_runtime.benchmarks.graph`, whose COPY loader writes it). Measured per size: a full build
(`CommunityService.rebuild`: the SQL read of the aggregated graph, Leiden at every level, the write), the
recovery of the planted blocks (purity: the share of level-0 members in their community's majority block),
and the refresh after one document changes (a new relation in its chunk): seconds, and how many
communities it rewrote against how many exist (only the affected ones, the target being seconds).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg
from rich.console import Console

from kgrag_adapters.communities.leiden import LeidenDetector
from kgrag_adapters.postgres.communities import PostgresCommunityStore
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_core.communities.service import CommunityService
from kgrag_runtime.benchmarks.graph import (
    RELATIONS,
    GraphShape,
    SyntheticGraph,
    _chunk_id,
    _server,
    format_machine,
    load_graph,
    machine_description,
)

DEFAULT_SIZES = (10_000, 100_000)


def planted_graph(shape: GraphShape, *, block: int = 24, inside: float = 0.85) -> SyntheticGraph:
    """Blocks of `block` entities; each entity's edges stay in its block with probability `inside`."""
    rng = random.Random(shape.seed)
    ids = [f"ent-{i:07d}" for i in range(shape.entities)]
    hubs, ordinary = ids[: shape.hubs], ids[shape.hubs :]
    pairs: set[tuple[str, str, str]] = set()
    for n, subject in enumerate(ordinary):
        start = (n // block) * block
        mates = ordinary[start : start + block]
        for _ in range(shape.edges_per_entity + 1):
            other = rng.choice(mates) if rng.random() < inside else rng.choice(ordinary)
            if other != subject:
                pairs.add((subject, rng.choice(RELATIONS), other))
    for hub in hubs:
        for other in rng.sample(ordinary, min(len(ordinary), shape.hub_degree)):
            pairs.add((other, rng.choice(RELATIONS), hub))
    relations: list[tuple[str, str, str, str]] = []
    evidence: list[tuple[str, str]] = []
    for n, (subject, relation, obj) in enumerate(sorted(pairs)):
        relation_id = f"rel-{n:08d}"
        relations.append((relation_id, subject, relation, obj))
        evidence.append(
            (relation_id, _chunk_id((int(subject.split("-")[1]) // shape.entities_per_chunk) % shape.chunks))
        )
    return SyntheticGraph(shape, ids, hubs, relations, evidence)


def purity(service: CommunityService, hubs: int, block: int, level: int) -> float:
    members = 0
    majority = 0
    for c in service.store.communities(level=level):
        blocks = Counter((int(m.split("-")[1]) - hubs) // block for m in c.member_ids if int(m.split("-")[1]) >= hubs)
        members += sum(blocks.values())
        majority += max(blocks.values(), default=0)
    return majority / members if members else 0.0


def measure(size: int, dsn: str, console: Console, *, block: int = 24) -> dict[str, Any]:
    shape = GraphShape(size)
    graph = planted_graph(shape, block=block)
    out: dict[str, Any] = {"entities": size, "relations": len(graph.relations), "hubs": shape.hubs, "block": block}
    with PostgresGraphStore.connect(dsn) as store:
        console.print(f"Communities at {size} entities: loading {len(graph.relations)} relations (COPY)…")
        out["load"] = load_graph(store, dsn, graph)
        communities = PostgresCommunityStore(store.pool)
        service = CommunityService(communities, communities, LeidenDetector())
        console.print("  full build…")
        report = service.rebuild()
        counts = communities.counts()
        out["build"] = {
            "seconds": round(report.seconds, 2),
            "communities": counts["communities"],
            "levels": counts["levels"],
            "level0": len(communities.communities(level=0)),
            "purity": round(purity(service, shape.hubs, block, 0), 3),
            "purity_level1": round(purity(service, shape.hubs, block, 1), 3),
        }
        # One document changes: a new relation between two ordinary entities its chunk names.
        doc_chunk = _chunk_id(shape.chunks // 2)
        subject, obj = graph.entity_ids[shape.hubs + 4 * (shape.chunks // 2)], graph.entity_ids[-1]
        with psycopg.connect(dsn) as conn:
            conn.execute(
                "INSERT INTO kg_relations (relation_id, subject_id, relation, object_id, polarity, modality)"
                " VALUES ('rel-bench-new', %s, 'USES', %s, 'positive', 'fact')",
                (subject, obj),
            )
            conn.execute(
                "INSERT INTO kg_relation_evidence (relation_id, chunk_id, quote, tier, confidence, subject_name,"
                " object_name) VALUES ('rel-bench-new', %s, %s, 1, 0.9, %s, %s)",
                (doc_chunk, b"\x00new quote", b"\x00a", b"\x00b"),
            )
        doc_id = f"bench-doc-{shape.chunks // 2:07d}"
        console.print("  refresh after one document changed…")
        began = time.perf_counter()
        changed = communities.entities_of_documents([doc_id])
        refresh = service.refresh(changed)
        refresh_s = time.perf_counter() - began
        out["refresh"] = {
            "seconds": round(refresh_s, 3),
            "changed_entities": len(changed),
            "communities_rewritten": refresh.communities_removed,
            "communities_total": counts["communities"],
            "entities_reclustered": refresh.entities,
        }
    return out


def run(sizes: Sequence[int], console: Console) -> dict[str, Any]:
    machine = machine_description()
    console.print(f"Machine: {format_machine(machine)}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="kgrag-communities-bench-") as tmp, _server(Path(tmp) / "pg") as fresh:
        for size in sizes:
            with fresh(f"communities_{size}") as dsn:
                rows.append(measure(size, dsn, console))
    return {"machine": machine, "synthetic": True, "sizes": rows}


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "Communities on a SYNTHETIC graph with planted blocks (embedded PostgreSQL, Leiden)",
        "",
        "| entities | relations | build s | communities (level 0) | levels | purity 0/1 | refresh s | rewritten/all |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["sizes"]:
        b, f = r["build"], r["refresh"]
        lines.append(
            f"| {r['entities']} | {r['relations']} | {b['seconds']} | {b['communities']} ({b['level0']})"
            f" | {b['levels']} | {b['purity']} / {b['purity_level1']} | {f['seconds']}"
            f" | {f['communities_rewritten']} / {f['communities_total']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Community build and refresh times (synthetic graph).")
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES), help="Entity counts.")
    parser.add_argument("--out", type=Path, default=Path("bench-results/communities"))
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    results = run([int(s) for s in args.sizes.split(",") if s.strip()], console)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "communities.json").write_text(json.dumps(results, indent=2))
    text = markdown(results)
    (args.out / "communities.md").write_text(text)
    console.print(text)


if __name__ == "__main__":
    main()
