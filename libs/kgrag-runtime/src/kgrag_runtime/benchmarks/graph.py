"""Graph traversal latency on PostgreSQL at 10k and 100k entities with hubs, against a naive recursive-SQL walk.

A synthetic graph is written straight into the kg_* tables with COPY (documents, chunks, entities, relations,
evidence): `PostgresExtractionStore.save` upserts row by row through the fact triggers and would spend minutes
loading what is measured here in seconds, and the read path does not care how the rows arrived. Hubs are then
labelled by `PostgresGraphStore.label_hubs`, as the resolution pass labels them.

Measured in one run, on one embedded PostgreSQL server, for hub seeds and ordinary seeds:

(a) `PostgresGraphStore.neighbours` (one hop, visible evidence, canonical mapping, limit = fetch_per_entity + 1);
(b) `expand()` as graph-assisted search runs it (default `ExpansionSettings`: beam, fan-out, never through a
    hub, 0.25 s budget) at depth 1 (entity questions) and depth 2 (multi-hop);
(c) the baseline: a recursive CTE over the same tables with the same visibility rule, but no hub stop, no
    fan-out or beam limit and no canonical mapping, at depth 1 and 2 (statement timeout per query).

The caller reads one ACL class; a tenth of the chunks carry another, so visibility filtering does real work.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import random
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from rich.console import Console

from kgrag_adapters.postgres.embedded import EmbeddedPostgres
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_core.acl import PUBLIC_ACL, acl_from_source
from kgrag_core.documents import Chunk, DocumentStatus, StoredDocument
from kgrag_core.graph.model import EntitySummary, hub_not_passed
from kgrag_core.graph_retrieval.expansion import ExpansionSettings, expand
from kgrag_core.graph_retrieval.router import QuestionKind
from kgrag_core.ids import content_hash

DEFAULT_SIZES = (10_000, 100_000)  # both take about 1.5 minutes on 2 cores
RELATIONS = ("OWNS", "LEADS", "MEMBER_OF", "USES", "DEPENDS_ON", "AFFECTED", "REPORTED", "WORKS_AT")
ENTITY_TYPES = ("Person", "Team", "System", "Customer", "Vendor", "Site", "Incident", "Project")
HUB_MIN_DEGREE = 25  # the resolution default (KGRAG_RESOLUTION_HUB_MIN_DEGREE)
BASELINE_TIMEOUT_MS = 10_000

_EPOCH = datetime(2023, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class GraphShape:
    """How a synthetic graph of `entities` is built; the defaults give ~5 edges per ordinary entity."""

    entities: int
    edges_per_entity: int = 2  # outgoing edges of each entity to random others (so ~4 incident on average)
    hub_share: float = 0.0005  # hubs per entity (at least 5)
    hub_edge_share: float = 0.05  # each hub links to this share of all entities
    entities_per_chunk: int = 4  # a chunk is evidence for the edges of about this many entities
    restricted_share: float = 0.1  # chunks in an ACL class the benchmark caller may not read
    seed: int = 11

    @property
    def hubs(self) -> int:
        return max(5, int(self.entities * self.hub_share))

    @property
    def hub_degree(self) -> int:
        return max(HUB_MIN_DEGREE * 4, int(self.entities * self.hub_edge_share))

    @property
    def chunks(self) -> int:
        return max(1, self.entities // self.entities_per_chunk)


@dataclass(frozen=True, slots=True)
class SyntheticGraph:
    shape: GraphShape
    entity_ids: list[str]
    hub_ids: list[str]
    relations: list[tuple[str, str, str, str]]  # relation_id, subject, relation, object
    evidence: list[tuple[str, str]]  # relation_id, chunk_id


def synthetic_graph(shape: GraphShape) -> SyntheticGraph:
    """Entities, relations (hubs included) and one or two evidence chunks per relation, deterministic per seed."""
    rng = random.Random(shape.seed)
    ids = [f"ent-{i:07d}" for i in range(shape.entities)]
    hubs = ids[: shape.hubs]
    ordinary = ids[shape.hubs :]
    pairs: set[tuple[str, str, str]] = set()
    for subject in ordinary:
        for _ in range(shape.edges_per_entity):
            other = rng.choice(ordinary)
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
        # Evidence lives where its subject is mentioned: a chunk per few entities, sometimes a second one.
        home = (int(subject.split("-")[1]) // shape.entities_per_chunk) % shape.chunks
        evidence.append((relation_id, _chunk_id(home)))
        if shape.chunks > 1 and rng.random() < 0.3:
            second = (home + 1 + rng.randrange(shape.chunks - 1)) % shape.chunks
            evidence.append((relation_id, _chunk_id(second)))
    return SyntheticGraph(shape, ids, hubs, relations, evidence)


def _chunk_id(n: int) -> str:
    return f"bench-chunk-{n:07d}"


# --- loading ------------------------------------------------------------------------------------------


def load_graph(store: PostgresGraphStore, dsn: str, graph: SyntheticGraph) -> dict[str, float]:
    """Write the graph with COPY, label hubs with the store, refresh planner statistics; seconds per step."""
    restricted = acl_from_source({"groups": ["finance"]})
    # One small document per ACL class goes through the store, so the classes exist exactly as ingest makes them.
    for acl in (PUBLIC_ACL, restricted):
        doc_id = f"bench-acl-{acl.acl_class_id[:12]}"
        text = f"ACL anchor {doc_id}"
        raw = text.encode("utf-8")
        digest = content_hash(raw)
        chunk = Chunk(f"{doc_id}-c0", doc_id, 0, (doc_id,), 0, len(raw), text, 3, digest, acl.acl_class_id)
        doc = StoredDocument(
            doc_id,
            "bench",
            f"bench://{doc_id}",
            doc_id,
            1,
            digest,
            acl.acl_class_id,
            None,
            DocumentStatus.ACTIVE,
            byte_length=len(raw),
        )
        store.commit_document(doc, acl, [chunk])

    shape = graph.shape
    rng = random.Random(shape.seed + 1)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        docs = io.StringIO()
        chunks = io.StringIO()
        for n in range(shape.chunks):
            acl = restricted if rng.random() < shape.restricted_share else PUBLIC_ACL
            doc_id = f"bench-doc-{n:07d}"
            when = (_EPOCH + timedelta(days=n % 900)).isoformat()
            docs.write(
                f"{doc_id}\tbench\t{_plain(f'bench://{doc_id}')}\t{_plain(doc_id)}\t1\th{n}\t{acl.acl_class_id}\t{when}"
                "\ttext/plain\t64\n"
            )
            chunks.write(
                f"{_chunk_id(n)}\t{doc_id}\t0\t{_plain(json.dumps([doc_id]))}\t0\t64"
                f"\t{_plain(f'synthetic evidence {n}')}\t3\th{n}\t{acl.acl_class_id}\t{when}\t2\n"
            )
        _copy(
            cur,
            "documents (doc_id, source, uri, title, version, content_hash, acl_class_id, modified_at,"
            " media_type, byte_length)",
            docs,
        )
        _copy(
            cur,
            "chunks (chunk_id, doc_id, seq, section_path, start_byte, end_byte, text, token_count,"
            " content_hash, acl_class_id, doc_time, extraction_tier)",
            chunks,
        )
        entities = io.StringIO()
        names: dict[str, str] = {}
        for n, entity_id in enumerate(graph.entity_ids):
            name = names[entity_id] = f"{ENTITY_TYPES[n % len(ENTITY_TYPES)]} {n}"
            blind, tokens = store.name_index(name)
            entities.write(f"{entity_id}\t{ENTITY_TYPES[n % len(ENTITY_TYPES)]}\t{blind}\t{{{','.join(tokens)}}}\n")
        # Names live on evidence rows, blind-indexed on the entity row (migration 0010).
        _copy(cur, "kg_entities (entity_id, type, name_key, name_tokens)", entities)
        relations = io.StringIO()
        for relation_id, subject, relation, obj in graph.relations:
            relations.write(f"{relation_id}\t{subject}\t{relation}\t{obj}\tpositive\tfact\n")
        _copy(cur, "kg_relations (relation_id, subject_id, relation, object_id, polarity, modality)", relations)
        evidence = io.StringIO()
        ends = {relation_id: (subject, obj) for relation_id, subject, _, obj in graph.relations}
        for relation_id, chunk_id in graph.evidence:
            confidence = 0.5 + rng.random() / 2
            subject, obj = ends[relation_id]
            evidence.write(
                f"{relation_id}\t{chunk_id}\t{_plain('synthetic quote')}\t1\t{confidence:.3f}"
                f"\t{_plain(names[subject])}\t{_plain(names[obj])}\n"
            )
        _copy(
            cur,
            "kg_relation_evidence (relation_id, chunk_id, quote, tier, confidence, subject_name, object_name)",
            evidence,
        )
        conn.commit()
        timings["copy_s"] = time.perf_counter() - started
        started = time.perf_counter()
        conn.autocommit = True
        cur.execute("ANALYZE")
        timings["analyze_s"] = time.perf_counter() - started
    started = time.perf_counter()
    timings["hubs_labelled"] = float(store.label_hubs(HUB_MIN_DEGREE))
    timings["label_hubs_s"] = time.perf_counter() - started
    return timings


def _plain(text: str) -> str:
    """A sealed column's unencrypted form (ADR 0008: 0x00 then UTF-8) as COPY's text format writes bytea."""
    return "\\\\x00" + text.encode("utf-8").hex()


def _copy(cur: psycopg.Cursor[Any], target: str, rows: io.StringIO) -> None:
    with cur.copy(f"COPY {target} FROM STDIN") as copy:
        copy.write(rows.getvalue())


# --- the baseline -------------------------------------------------------------------------------------

# Every entity reached within `depth` hops over visible relations, both directions, nothing bounded.
NAIVE_WALK = """
WITH RECURSIVE und AS (
    SELECT r.relation_id, r.subject_id AS here, r.object_id AS there FROM kg_relations r
    UNION ALL
    SELECT r.relation_id, r.object_id, r.subject_id FROM kg_relations r
), walk(entity_id, depth) AS (
    SELECT %(seed)s::text, 0
    UNION
    SELECT u.there, w.depth + 1 FROM walk w JOIN und u ON u.here = w.entity_id
    WHERE w.depth < %(depth)s AND EXISTS (
        SELECT 1 FROM kg_relation_evidence ev JOIN chunks c ON c.chunk_id = ev.chunk_id
        JOIN documents d ON d.doc_id = c.doc_id AND d.status = 'ACTIVE'
        WHERE ev.relation_id = u.relation_id AND c.acl_class_id = ANY(%(acl)s::text[]))
)
SELECT count(DISTINCT entity_id) FROM walk
"""


@dataclass(frozen=True, slots=True)
class NaiveResult:
    ms: float
    reached: int | None  # None: the statement timed out


def naive_walk(conn: psycopg.Connection[Any], seed: str, depth: int, acl: Sequence[str]) -> NaiveResult:
    started = time.perf_counter()
    try:
        row = conn.execute(NAIVE_WALK, {"seed": seed, "depth": depth, "acl": list(acl)}).fetchone()
    except psycopg.errors.QueryCanceled:
        conn.rollback()
        return NaiveResult((time.perf_counter() - started) * 1000, None)
    return NaiveResult((time.perf_counter() - started) * 1000, int(row[0]) if row else 0)


# --- measuring ----------------------------------------------------------------------------------------


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "n": 0}
    ordered = sorted(values)
    return {
        "p50": ordered[len(ordered) // 2],
        "p95": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
        "n": len(ordered),
    }


def measure_size(
    shape: GraphShape,
    dsn: str,
    *,
    seeds_per_kind: int,
    baseline_seeds: int,
    console: Console,
) -> dict[str, Any]:
    """Build one graph in the database at `dsn` and time every path from hub and ordinary seeds."""
    console.print(f"Graph benchmark at {shape.entities} entities: generating…")
    graph = synthetic_graph(shape)
    acl = [PUBLIC_ACL.acl_class_id]
    settings = ExpansionSettings()
    with PostgresGraphStore.connect(dsn) as store:
        console.print(f"  loading {len(graph.relations)} relations, {len(graph.evidence)} evidence rows (COPY)…")
        load = load_graph(store, dsn, graph)
        rng = random.Random(shape.seed + 2)
        # Seeds are entities the caller can see (some have no edge, or only restricted evidence).
        candidates = rng.sample(
            graph.entity_ids[shape.hubs :], min(len(graph.entity_ids) - shape.hubs, 4 * seeds_per_kind)
        )
        summaries: dict[str, EntitySummary] = {}
        for entity_id in [*graph.hub_ids, *candidates]:
            summary = store.entity(entity_id, acl)
            if summary is not None:
                summaries[entity_id] = summary
        ordinary = [e for e in candidates if e in summaries][:seeds_per_kind]
        # Few hubs exist: each is asked several times so the percentiles rest on as many samples.
        hubs = [graph.hub_ids[i % len(graph.hub_ids)] for i in range(seeds_per_kind)]
        store.neighbours(ordinary[0], acl, limit=settings.fetch_per_entity + 1)  # warm-up
        rows: dict[str, dict[str, Any]] = {}
        for label, seeds in (("hub", hubs), ("ordinary", ordinary)):
            console.print(f"  {label} seeds: neighbours, expand depth 1 and 2…")
            one_hop: list[float] = []
            for s in seeds:
                began = time.perf_counter()
                store.neighbours(s, acl, limit=settings.fetch_per_entity + 1)
                one_hop.append((time.perf_counter() - began) * 1000)
            # What expand() pays per reached entity to learn whether it is a hub.
            lookups: list[float] = []
            for s in seeds:
                began = time.perf_counter()
                store.entity(s, acl)
                lookups.append((time.perf_counter() - began) * 1000)
            row: dict[str, Any] = {
                "hub_flag_seen": sum(1 for s in seeds if s in summaries and summaries[s].is_hub),
                "neighbours_ms": _percentiles(one_hop),
                "entity_ms": _percentiles(lookups),
            }
            # Depth 1 as entity questions walk, 2 as multi-hop walks did until 2026-11-29, 3 as they walk now.
            for depth, kind in ((1, QuestionKind.ENTITY), (2, QuestionKind.MULTI_HOP), (3, QuestionKind.MULTI_HOP)):
                walk = replace(settings, depth_by_kind={**settings.depth_by_kind, kind: depth})
                times: list[float] = []
                steps: list[float] = []
                timed_out = 0
                hubs_not_passed = 0
                for s in seeds:
                    began = time.perf_counter()
                    traversal = expand(
                        [(summaries[s], 1.0)],
                        store,
                        acl,
                        question="",
                        kind=kind,
                        settings=walk,
                        clock=time.monotonic,
                    )
                    times.append((time.perf_counter() - began) * 1000)
                    steps.append(float(len(traversal.steps)))
                    timed_out += any(n.startswith("time budget") for n in traversal.truncated)
                    hubs_not_passed += sum(1 for n in traversal.truncated if n.startswith(hub_not_passed("")))
                row[f"expand_depth{depth}_ms"] = _percentiles(times)
                row[f"expand_depth{depth}_edges"] = _percentiles(steps)
                row[f"expand_depth{depth}_time_budget_hit"] = timed_out
                row[f"expand_depth{depth}_hubs_not_passed"] = hubs_not_passed
            rows[label] = row
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"SET statement_timeout = {BASELINE_TIMEOUT_MS}")
        for label, seeds in (("hub", graph.hub_ids), ("ordinary", ordinary)):
            console.print(f"  {label} seeds: naive recursive SQL, depth 1 and 2…")
            picked = [seeds[i % len(seeds)] for i in range(baseline_seeds)]
            for depth in (1, 2):
                results = [naive_walk(conn, s, depth, acl) for s in picked]
                done = [r for r in results if r.reached is not None]
                rows[label][f"naive_depth{depth}_ms"] = _percentiles([r.ms for r in done])
                rows[label][f"naive_depth{depth}_reached"] = _percentiles([float(r.reached or 0) for r in done])
                rows[label][f"naive_depth{depth}_timeouts"] = len(results) - len(done)
    return {
        "entities": shape.entities,
        "relations": len(graph.relations),
        "evidence_rows": len(graph.evidence),
        "chunks": shape.chunks,
        "hubs": shape.hubs,
        "hub_degree": shape.hub_degree,
        "load": load,
        "seeds": rows,
    }


def machine_description() -> dict[str, object]:
    return {
        "architecture": platform.machine(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "os": platform.system(),
        "load_average_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


@contextmanager
def _server(pgdata: Path) -> Iterator[Callable[[str], Any]]:
    with EmbeddedPostgres(pgdata):

        @contextmanager
        def fresh(name: str) -> Iterator[str]:
            with EmbeddedPostgres(pgdata, database=f"graph_{name}") as pg:
                yield pg.dsn

        yield fresh


def run_graph_benchmarks(
    console: Console,
    *,
    sizes: Sequence[int] = DEFAULT_SIZES,
    seeds_per_kind: int = 40,
    baseline_seeds: int = 10,
    database: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """Every size on one embedded PostgreSQL server in a temporary folder (or `database`), a database per size."""
    started = time.perf_counter()
    machine = machine_description()
    console.print(f"Machine: {format_machine(machine)}")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kgrag-graph-bench-") as tmp, _server(Path(tmp) / "pg") as fresh:
        factory = database or fresh
        for size in sizes:
            with factory(str(size)) as dsn:
                rows.append(
                    measure_size(
                        GraphShape(size),
                        dsn,
                        seeds_per_kind=seeds_per_kind,
                        baseline_seeds=baseline_seeds,
                        console=console,
                    )
                )
    machine["load_average_1m_after"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"machine": machine, "sizes": rows, "wall_s": time.perf_counter() - started}


def format_machine(machine: dict[str, object]) -> str:
    return (
        f"{machine['architecture']} · {machine['cpu']} · {machine['cores']} cores · Python {machine['python']}"
        f" · {machine['os']}"
    )


def graph_markdown(results: dict[str, Any]) -> str:
    machine = results["machine"]
    lines = [
        f"Machine: {format_machine(machine)}; 1-minute load average {machine['load_average_1m']:.2f} before, "
        f"{machine['load_average_1m_after']:.2f} after; whole benchmark {results['wall_s']:.0f} s.",
        "",
        "| entities | relations | hubs (degree) | load: COPY s | label_hubs s | seeds "
        "| entity() p50 / p95 ms | neighbours p50 / p95 ms | expand d1 p50 / p95 ms "
        "| expand d2 p50 / p95 ms | d2 edges p50 | expand d3 p50 / p95 ms | d3 edges p50 "
        "| naive d1 p50 / p95 ms | naive d2 p50 / p95 ms | naive d2 reached p50 | naive d2 timeouts |",
        "|---:|---:|---|---:|---:|---|---|---|---|---|---:|---|---:|---|---|---:|---:|",
    ]
    for size in results["sizes"]:
        for label in ("hub", "ordinary"):
            s = size["seeds"][label]
            lines.append(
                f"| {size['entities']} | {size['relations']} | {size['hubs']} ({size['hub_degree']}) "
                f"| {size['load']['copy_s']:.1f} | {size['load']['label_hubs_s']:.1f} | {label} "
                f"| {_pp(s['entity_ms'])} | {_pp(s['neighbours_ms'])} | {_pp(s['expand_depth1_ms'])} "
                f"| {_pp(s['expand_depth2_ms'])} "
                f"| {s['expand_depth2_edges']['p50']:.0f} | {_pp(s['expand_depth3_ms'])} "
                f"| {s['expand_depth3_edges']['p50']:.0f} | {_pp(s['naive_depth1_ms'])} | {_pp(s['naive_depth2_ms'])} "
                f"| {s['naive_depth2_reached']['p50']:.0f} | {s['naive_depth2_timeouts']} |"
            )
    lines.append("")
    for size in results["sizes"]:
        for label in ("hub", "ordinary"):
            s = size["seeds"][label]
            lines.append(
                f"- {size['entities']} entities, {label} seeds: expand stopped by its time budget "
                f"{s['expand_depth1_time_budget_hit']} (d1) / {s['expand_depth2_time_budget_hit']} (d2) / "
                f"{s['expand_depth3_time_budget_hit']} (d3) of {s['expand_depth1_ms']['n']}; hubs reached and not "
                f"passed {s['expand_depth2_hubs_not_passed']} (d2) / {s['expand_depth3_hubs_not_passed']} (d3)."
            )
    return "\n".join(lines) + "\n"


def _pp(p: dict[str, float]) -> str:
    return f"{p['p50']:.1f} / {p['p95']:.1f}" if p["n"] else "—"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Graph traversal latency on PostgreSQL, with hubs.")
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES), help="Entity counts.")
    parser.add_argument("--seeds", type=int, default=40, help="Seeds per kind (hub, ordinary).")
    parser.add_argument("--baseline-seeds", type=int, default=10)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    console = Console(stderr=True)
    results = run_graph_benchmarks(console, sizes=sizes, seeds_per_kind=args.seeds, baseline_seeds=args.baseline_seeds)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "graph.json").write_text(json.dumps(results, indent=2))
    markdown = graph_markdown(results)
    (args.out / "graph.md").write_text(markdown)
    console.print(markdown)


if __name__ == "__main__":
    main()
