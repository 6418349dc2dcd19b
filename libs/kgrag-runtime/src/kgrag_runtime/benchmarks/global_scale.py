"""GLOBAL route latency at 10k and 100k entities, without an LLM, against hybrid search on the same index
(issue 12). SYNTHETIC, labelled so.

    uv run python -m kgrag_runtime.benchmarks.global_scale --sizes 10000,100000 --out bench-results/global-scale

The graph is `kgrag_runtime.benchmarks.communities`' planted-block graph (COPY-loaded, a tenth of the chunks
restricted to a finance group), its communities built by `CommunityService` (hierarchical Leiden). Every
evidence chunk's text is rewritten to state its relations as sentences ("Person 12 uses System 57."), so the
community views quote real sentences through the ACL recheck. Chunks are indexed in the embedded vector and
keyword indexes; vectors: the embedding model's for the first `pool` chunks, noised copies of those for the
rest (`kgrag_runtime.benchmarks.scale`: the index's search cost does not depend on which vectors it holds).

Each question names two members of a level-0 community ('What recurs around "Person 12" and "Team 57"?'); the
candidates are the communities of the entities linked from it and from the caller's 5 best passages (up to
40 views read). Each is asked by an outsider (public chunks only) and a finance reader, in turn:

- baseline: `HybridSearcher.search` (top 10), the search the GLOBAL route starts from;
- GLOBAL: that search, then `GlobalAnswerer.themes` (candidates, the caller's views read through the
  batched ACL-filtered graph reads, each view's edges those among its members: `GraphReader.edges_among`,
  map, reduce) and the answer, with no visible-read cache (every ask cold);
- names read again (the reads before stop 24, `ViewSettings(light=False)`): the same route with every
  linked entity and member named and its degree counted, and each view's edges and claims naming the
  members again (`kgrag_core.graph.light` is what replaced them);
- far ends named (the route before `edges_among`): the same, each view's edges read as the strongest edges
  of its 15 most connected members (`ViewSettings(among=False)`), every far end named, inside the same 2 s
  budget: its latency, and the themes it loses to the budget.

With `--profile`, one more GLOBAL ask per size runs under cProfile (its 30 costliest calls by cumulative time
are written next to the results).

The level-0 listing (`GET /v1/communities?level=0`, a page of 50 for the outsider) is timed once per size.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from rich.console import Console

from kgrag_adapters.communities.leiden import LeidenDetector
from kgrag_adapters.postgres.communities import PostgresCommunityStore
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.qdrant_edge.vector_index import EdgeVectorIndex
from kgrag_adapters.tantivy.keyword_index import TantivyKeywordIndex
from kgrag_core.acl import Caller, readable_classes
from kgrag_core.communities.global_route import GlobalResult, GlobalSettings
from kgrag_core.communities.service import CommunityService
from kgrag_core.communities.view import ViewSettings
from kgrag_core.communities.visible import visible_communities
from kgrag_core.extraction.records import ClaimRecord
from kgrag_core.graph.among import edges_among_by_single_reads
from kgrag_core.graph.model import Edge, EntitySummary
from kgrag_core.graph.ports import GraphReader
from kgrag_core.ports import Embedder
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_core.search import KeywordDoc, VectorPoint
from kgrag_runtime.benchmarks.communities import planted_graph
from kgrag_runtime.benchmarks.graph import (
    ENTITY_TYPES,
    GraphShape,
    SyntheticGraph,
    _plain,
    _server,
    format_machine,
    load_graph,
    machine_description,
)
from kgrag_runtime.benchmarks.scale import _derived_vectors
from kgrag_runtime.global_answers import GlobalAnswerer
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_embedder

DEFAULT_SIZES = (10_000, 100_000)
PER_ID_LISTING_MAX = 2_000  # the listing with per-id reads (every far end named) takes minutes beyond this
# The listing reads every member of every level-0 community (to size each by what the caller sees); at 100k
# entities that is every entity, and naming the hubs their edges reach dominates: not timed beyond this.
LISTING_MAX = 10_000
OUTSIDER = Caller(user="bench-outsider")
FINANCE = Caller(user="bench-finance", groups=("finance",))


class PerIdReads:
    """The store with its batched reads answered one id at a time: the reads as they were before batching
    (one `entity` and one `neighbours` query per member), measured in the same run."""

    def __init__(self, graph: GraphReader) -> None:
        self.graph = graph

    def entities_named(self, names: Sequence[str], acl: Sequence[str] | None) -> dict[str, list[EntitySummary]]:
        return self.graph.entities_named(names, acl)

    def entity(self, entity_id: str, acl: Sequence[str] | None) -> EntitySummary | None:
        return self.graph.entity(entity_id, acl)

    def hubs_among(self, entity_ids: Sequence[str], acl: Sequence[str] | None) -> set[str]:
        return self.graph.hubs_among(entity_ids, acl)

    def neighbours(
        self, entity_id: str, acl: Sequence[str] | None, *, relations: Sequence[str] | None = None, limit: int = 50
    ) -> list[Edge]:
        return self.graph.neighbours(entity_id, acl, relations=relations, limit=limit)

    def claims_of(self, entity_ids: Sequence[str], acl: Sequence[str] | None) -> list[ClaimRecord]:
        return self.graph.claims_of(entity_ids, acl)

    def entities_by_id(self, entity_ids: Sequence[str], acl: Sequence[str] | None) -> dict[str, EntitySummary]:
        found = {e: self.graph.entity(e, acl) for e in dict.fromkeys(entity_ids)}
        return {e: s for e, s in found.items() if s is not None}

    def neighbours_by_id(
        self,
        entity_ids: Sequence[str],
        acl: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> dict[str, list[Edge]]:
        return {e: self.graph.neighbours(e, acl, relations=relations, limit=limit) for e in dict.fromkeys(entity_ids)}

    def edges_among(
        self,
        entity_ids: Sequence[str],
        acl: Sequence[str] | None,
        *,
        relations: Sequence[str] | None = None,
        limit: int = 50,
    ) -> dict[str, list[Edge]]:
        return edges_among_by_single_reads(self, entity_ids, acl, relations=relations, limit=limit)


def entity_name(graph: SyntheticGraph, n: int) -> str:
    """The name `load_graph` gives the n-th entity."""
    return f"{ENTITY_TYPES[n % len(ENTITY_TYPES)]} {n}"


def chunk_texts(graph: SyntheticGraph) -> dict[str, str]:
    """Each evidence chunk's text: one sentence per relation it is evidence for, naming both ends in quotes
    (so the entity linker finds them in a passage, as it finds capitalised names in prose)."""
    index = {e: n for n, e in enumerate(graph.entity_ids)}
    ends = {rid: (s, rel, o) for rid, s, rel, o in graph.relations}
    sentences: dict[str, list[str]] = {}
    for rid, chunk_id in graph.evidence:
        s, rel, o = ends[rid]
        verb = rel.lower().replace("_", " ")
        sentences.setdefault(chunk_id, []).append(
            f'"{entity_name(graph, index[s])}" {verb} "{entity_name(graph, index[o])}".'
        )
    return {c: " ".join(s) for c, s in sentences.items()}


def write_texts(dsn: str, texts: dict[str, str]) -> None:
    """Replace the chunks' placeholder texts (sealed columns in their plain form, as `load_graph` writes)."""
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute("CREATE TEMP TABLE bench_texts (chunk_id text, text bytea, bytes int, tokens int)")
        rows = io.StringIO()
        for chunk_id, text in texts.items():
            rows.write(f"{chunk_id}\t{_plain(text)}\t{len(text.encode())}\t{len(text.split())}\n")
        with cur.copy("COPY bench_texts FROM STDIN") as copy:
            copy.write(rows.getvalue())
        cur.execute(
            "UPDATE chunks c SET text = t.text, end_byte = t.bytes, token_count = t.tokens"
            " FROM bench_texts t WHERE c.chunk_id = t.chunk_id"
        )
        conn.commit()


def index_chunks(
    store: PostgresGraphStore,
    dsn: str,
    vindex: EdgeVectorIndex,
    kindex: TantivyKeywordIndex,
    embedder: Embedder,
    pool: int,
    seed: int,
) -> dict[str, float]:
    """Every chunk into both indexes (vectors: real for the first `pool`, noised copies after)."""
    with psycopg.connect(dsn) as conn:
        ids = [str(r[0]) for r in conn.execute("SELECT chunk_id FROM chunks ORDER BY chunk_id")]
    chunks = [c for i in range(0, len(ids), 2000) for c in store.get_chunks(ids[i : i + 2000]).values()]
    rows = [(c.chunk_id, c.doc_id, c.acl_class_id, c.content_hash, c.text) for c in chunks]
    started = time.perf_counter()
    texts = [r[4] for r in rows[:pool]]
    real = [v for i in range(0, len(texts), 64) for v in embedder.embed_documents(texts[i : i + 64])]
    embed_s = time.perf_counter() - started
    vectors = _derived_vectors(np.asarray(real, dtype=np.float32), 0, len(rows), 0.05, seed)
    started = time.perf_counter()
    for i in range(0, len(rows), 2000):
        part = rows[i : i + 2000]
        vindex.upsert(
            [VectorPoint(r[0], tuple(vectors[i + j].tolist()), r[1], r[2], r[3], "bench") for j, r in enumerate(part)]
        )
        kindex.upsert([KeywordDoc(r[0], r[1], r[2], r[1], r[1], r[4], "bench") for r in part])
    vindex.optimize()
    return {"chunks": float(len(rows)), "embed_pool_s": embed_s, "index_s": time.perf_counter() - started}


def questions(graph: SyntheticGraph, store: PostgresCommunityStore, count: int, seed: int) -> list[str]:
    """Two ordinary members of a random level-0 community each (hubs are nobody's theme)."""
    rng = random.Random(seed)
    index = {e: n for n, e in enumerate(graph.entity_ids)}
    hubs = set(graph.hub_ids)
    level = sorted(store.communities(0), key=lambda c: c.community_id)
    out: list[str] = []
    while len(out) < count:
        members = [m for m in rng.choice(level).member_ids if m not in hubs and m in index]
        if len(members) < 2:
            continue
        a, b = rng.sample(members, 2)
        out.append(f'What recurs around "{entity_name(graph, index[a])}" and "{entity_name(graph, index[b])}"?')
    return out


def listing_times(communities: PostgresCommunityStore, store: PostgresGraphStore, per_id: bool) -> dict[str, float]:
    """`GET /v1/communities?level=0` for the outsider (a page of 50, every level-0 community's members read
    to size it by what the caller sees): batched, and (small sizes only) with per-id reads."""
    allowed = readable_classes(store.acl_classes(), OUTSIDER)
    out: dict[str, float] = {}
    for name, reader in (("batched_s", store), ("per_id_s", PerIdReads(store))):
        if name == "per_id_s" and not per_id:
            continue
        started = time.perf_counter()
        listed = visible_communities(communities.communities(0), reader, allowed, limit=50)
        out[name] = round(time.perf_counter() - started, 2)
        out["listed"] = float(len(listed))
    return out


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(1000 * statistics.median(ordered), 1),
        "p95_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
        "max_ms": round(1000 * ordered[-1], 1),
    }


def _timed_ask(answerer: GlobalAnswerer, question: str, caller: Caller) -> tuple[float, GlobalResult]:
    """One GLOBAL ask as the app makes it: the caller's search, the route, the answer."""
    started = time.perf_counter()
    hits = answerer.hybrid.search(question, caller, top_k=10).hits
    assert answerer.available()  # as the ask checks it (KgragApp._global)
    result = answerer.themes(question, caller, hits)
    result.answer()
    return time.perf_counter() - started, result


def _profile(answerer: GlobalAnswerer, question: str, path: Path) -> None:
    """One ask under cProfile: its 30 costliest calls by cumulative time, written to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    profiler = cProfile.Profile()
    profiler.runcall(_timed_ask, answerer, question, OUTSIDER)
    stats = io.StringIO()
    pstats.Stats(profiler, stream=stats).sort_stats("cumulative").print_stats(30)
    path.write_text(stats.getvalue())


def measure(
    size: int,
    dsn: str,
    tmp: Path,
    embedder: Embedder,
    console: Console,
    asks: int,
    profile_dir: Path | None = None,
    *,
    far_ends_on: bool = True,
    built: Path | None = None,
) -> dict[str, Any]:
    """`built`: a marker file (`--keep`); when it exists, `tmp` already holds this size's loaded database and
    indexes, which are not built again (the graph is regenerated from its seed, for the questions); else it
    is written once they are."""
    reused = built is not None and built.exists()
    shape = GraphShape(size)
    graph = planted_graph(shape)
    out: dict[str, Any] = {"entities": size, "relations": len(graph.relations), "hubs": shape.hubs}
    with (
        PostgresGraphStore.connect(dsn) as store,
        EdgeVectorIndex(tmp / f"qdrant-{size}", embedder.dimension) as vindex,
        TantivyKeywordIndex(tmp / f"bm25-{size}") as kindex,
    ):
        communities = PostgresCommunityStore(store.pool)
        if reused:
            out["build"] = {"seconds": None, "level0": len(communities.communities(0)), "reused": True}
        else:
            console.print(f"GLOBAL at {size} entities: loading {len(graph.relations)} relations (COPY)…")
            out["load"] = load_graph(store, dsn, graph)
            write_texts(dsn, chunk_texts(graph))
            console.print("  indexing chunks…")
            out["index"] = index_chunks(store, dsn, vindex, kindex, embedder, pool=512, seed=shape.seed)
            console.print("  building communities…")
            report = CommunityService(communities, communities, LeidenDetector()).rebuild()
            out["build"] = {"seconds": round(report.seconds, 1), "level0": len(communities.communities(0))}
            if built is not None:
                built.touch()
        hybrid = HybridSearcher(store, store, vindex, kindex, embedder)
        answerer = GlobalAnswerer(communities, store, hybrid)
        far_ends = GlobalAnswerer(communities, store, hybrid, view_settings=ViewSettings(among=False))
        far = far_ends_on
        named_again = GlobalAnswerer(communities, store, hybrid, view_settings=ViewSettings(light=False))
        again_s: list[float] = []
        again_themes: list[int] = []
        again_cut = 0
        again_read: list[int] = []
        asked = questions(graph, communities, asks, shape.seed)
        hybrid.search(asked[0], OUTSIDER, top_k=10)  # warm-up (model session, index files) outside timing
        search_s: list[float] = []
        global_s: list[float] = []
        far_s: list[float] = []
        far_themes: list[int] = []
        far_cut = 0
        themes: list[int] = []
        read: list[int] = []
        budget_cut = 0
        console.print(f"  {len(asked)} questions × 2 callers…")
        for q in asked:
            for caller in (OUTSIDER, FINANCE):
                started = time.perf_counter()
                hybrid.search(q, caller, top_k=10)
                search_s.append(time.perf_counter() - started)
                seconds, result = _timed_ask(answerer, q, caller)
                global_s.append(seconds)
                themes.append(len(result.themes))
                read.append(result.communities_read)
                budget_cut += "time_budget" in result.skipped
                seconds, before = _timed_ask(named_again, q, caller)
                again_s.append(seconds)
                again_themes.append(len(before.themes))
                again_read.append(before.communities_read)
                again_cut += "time_budget" in before.skipped
                if not far:
                    continue
                seconds, before = _timed_ask(far_ends, q, caller)
                far_s.append(seconds)
                far_themes.append(len(before.themes))
                far_cut += "time_budget" in before.skipped
        if profile_dir is not None:
            profiled_ones = [("", answerer), ("-named-again", named_again), ("-far-ends", far_ends)]
            for name, profiled in profiled_ones[: 3 if far else 2]:
                _profile(profiled, asked[0], profile_dir / f"profile-{size}{name}.txt")
        out["hybrid"] = _percentiles(search_s)
        out["global"] = _percentiles(global_s)
        out["global_named_again"] = {
            **_percentiles(again_s),
            "themes_mean": round(statistics.fmean(again_themes), 2),
            "time_budget_cut": again_cut,
            "communities_read_mean": round(statistics.fmean(again_read), 1),
        }
        if far:
            out["global_far_ends"] = {
                **_percentiles(far_s),
                "themes_mean": round(statistics.fmean(far_themes), 2),
                "time_budget_cut": far_cut,
            }
        if size <= LISTING_MAX:
            out["listing"] = listing_times(communities, store, size <= PER_ID_LISTING_MAX)
        out["global_over_hybrid_p50"] = round(out["global"]["p50_ms"] / max(out["hybrid"]["p50_ms"], 0.1), 1)
        out["themes_mean"] = round(statistics.fmean(themes), 2)
        out["answers_with_themes"] = sum(t > 0 for t in themes)
        out["communities_read_mean"] = round(statistics.fmean(read), 1)
        out["time_budget_cut"] = budget_cut
        out["asks"] = len(global_s)
        out["load_average"] = round(os.getloadavg()[0], 1)
    return out


def run(
    sizes: Sequence[int],
    console: Console,
    *,
    asks: int = 20,
    out_dir: Path | None = None,
    profile: bool = False,
    far_ends: bool = True,
    keep: Path | None = None,
) -> dict[str, Any]:
    """Every size in turn; with `out_dir`, the results so far are written after each size. `keep`: the
    databases and indexes live there and are reused by the next run with the same `keep` (a 100k build takes
    many minutes), instead of in a temporary folder."""
    machine = machine_description()
    console.print(f"Machine: {format_machine(machine)}")
    embedder = build_embedder(KgragSettings())
    results: dict[str, Any] = {
        "machine": machine,
        "synthetic": True,
        "time_budget_s": GlobalSettings().time_budget_s,
        "sizes": [],
    }
    with contextlib.ExitStack() as stack:
        if keep is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kgrag-global-scale-")))
        else:
            folder = keep
            folder.mkdir(parents=True, exist_ok=True)
        fresh = stack.enter_context(_server(folder / "pg"))
        for size in sizes:
            built = None if keep is None else folder / f"built-{size}"
            with fresh(f"global_{size}") as dsn:
                profile_dir = out_dir if profile and out_dir is not None else None
                row = measure(
                    size, dsn, folder, embedder, console, asks, profile_dir, far_ends_on=far_ends, built=built
                )
                results["sizes"].append(row)
            if out_dir is not None:
                write(results, out_dir)
    return results


def write(results: dict[str, Any], out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "global_scale.json").write_text(json.dumps(results, indent=2))
    (out_dir / "global_scale.md").write_text(markdown(results))


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "GLOBAL route without an LLM on a SYNTHETIC graph (embedded PostgreSQL and indexes), same-run hybrid baseline",
        "",
        "| entities | relations | level-0 communities | hybrid p50 / p95 ms | GLOBAL p50 / p95 ms | GLOBAL ÷ hybrid p50"
        " | names read again p50 / p95 ms (themes, budget cut)"
        " | far ends named p50 / p95 ms (themes, budget cut) | themes per answer | views read | budget cut"
        " | listing s (per-id)"
        " | load |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["sizes"]:
        h, g, a = r["hybrid"], r["global"], r["global_named_again"]
        p = r.get("global_far_ends", {"p50_ms": "–", "p95_ms": "–", "themes_mean": "–", "time_budget_cut": "–"})
        lines.append(
            f"| {r['entities']} | {r['relations']} | {r['build']['level0']} | {h['p50_ms']} / {h['p95_ms']}"
            f" | {g['p50_ms']} / {g['p95_ms']} | {r['global_over_hybrid_p50']}"
            f" | {a['p50_ms']} / {a['p95_ms']} ({a['themes_mean']}, {a['time_budget_cut']})"
            f" | {p['p50_ms']} / {p['p95_ms']} ({p['themes_mean']}, {p['time_budget_cut']}) | {r['themes_mean']}"
            f" | {r['communities_read_mean']} | {r['time_budget_cut']} / {r['asks']}"
            f" | {_listing(r)} | {r['load_average']} |"
        )
    return "\n".join(lines) + "\n"


def _listing(row: dict[str, Any]) -> str:
    listing = row.get("listing")
    return "not timed" if listing is None else f"{listing['batched_s']} ({listing.get('per_id_s', '–')})"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="GLOBAL route latency at scale (synthetic graph).")
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES), help="Entity counts.")
    parser.add_argument("--asks", type=int, default=20, help="Questions per size (each asked by two callers).")
    parser.add_argument("--out", type=Path, default=Path("bench-results/global-scale"))
    parser.add_argument("--profile", action="store_true", help="Profile one more GLOBAL ask per size.")
    parser.add_argument("--no-far-ends", action="store_true", help="Skip the far-ends-named same-run baseline.")
    parser.add_argument("--keep", type=Path, default=None, help="Keep (and reuse) the databases and indexes here.")
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    results = run(
        sizes,
        console,
        asks=args.asks,
        out_dir=args.out,
        profile=args.profile,
        far_ends=not args.no_far_ends,
        keep=args.keep,
    )
    console.print(markdown(results))


if __name__ == "__main__":
    main()
