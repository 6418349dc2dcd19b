"""Search at 100k-1M chunks on the embedded default stores (issue 10, item 9): latency, memory, build time.

    python -m kgrag_runtime.benchmarks.scale --chunks 1000000 --out bench-results/scale

What is real and what is derived (the tables say it too):

- **Text**: `prose.py`'s encyclopedic paragraphs (names, places, dates; entity pools and so the vocabulary
  grow with the corpus), one paragraph per chunk, `CHUNKS_PER_DOC` chunks per document. A quarter of the
  documents are finance-only; the caller (engineering) may not read them, so every search filters.
- **Vectors**: embedding a million chunks with the bundled model takes hours on 2 cores, so only the first
  `--pool` chunks are embedded with the real model (that sample also gives the model's rate). Chunk
  i >= pool carries the real vector of pool chunk (i mod pool) plus Gaussian noise (`--noise` per
  dimension), re-normalised: the vector distribution (clusters, neighbourhood density) is the model's, but
  such a chunk's vector does not encode its own text, so dense *quality* is not measured here, only cost.
  The build time is reported without the model and, extrapolated at the measured rate, with it.
- **Stores**: exactly the embedded runtime's: embedded PostgreSQL (`PostgresStore`, what hydration reads),
  the Qdrant Edge shard (`EdgeVectorIndex`) and tantivy (`TantivyKeywordIndex`), written through their
  adapters in batches of `BATCH_DOCS` documents, so memory stays bounded while the corpus streams in.
- **Queries**: 2-5 consecutive words of a random chunk, embedded by the real model per query (the embed
  is part of dense and hybrid latency, as in `kgrag search`); `HybridSearcher` in each mode, top 10.
- **Memory**: peak RSS of this process (the two indexes live in it; RSS counts their memory-mapped pages
  that are resident) and of the PostgreSQL server's processes, sampled every 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kgrag_adapters.postgres.embedded import EmbeddedPostgres
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_adapters.qdrant_edge.vector_index import EdgeTuning, EdgeVectorIndex
from kgrag_adapters.tantivy.keyword_index import TantivyKeywordIndex
from kgrag_core.acl import PUBLIC_ACL, AclClass, Caller, acl_from_source, readable_classes
from kgrag_core.documents import Chunk, DocumentStatus, StoredDocument
from kgrag_core.ids import chunk_id_for, content_hash
from kgrag_core.limits import CANDIDATES_PER_ROUTE
from kgrag_core.ports import Embedder
from kgrag_core.retrieval.fusion import reciprocal_rank_fusion
from kgrag_core.retrieval.hybrid import HybridSearcher, SearchMode
from kgrag_core.search import KeywordDoc, VectorPoint
from kgrag_core.tracing.timing import measuring, stage
from kgrag_runtime.benchmarks.prose import prose_documents
from kgrag_runtime.benchmarks.runner import _machine
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_embedder

CHUNKS_PER_DOC = 10
BATCH_DOCS = 500
MODES = (SearchMode.BM25, SearchMode.DENSE, SearchMode.HYBRID)
_WORD = re.compile(r"[A-Za-z][A-Za-z'.-]*[A-Za-z]")


@dataclass(frozen=True, slots=True)
class ScaleConfig:
    chunks: int
    queries: int = 200
    pool: int = 2048
    noise: float = 0.02
    seed: int = 2026
    # Index-only: no PostgreSQL; searches time the routes and their fusion, not the hydration (below).
    index_only: bool = False
    optimize_after_points: int = EdgeTuning().optimize_after_points


class _MemorySampler:
    """Peak RSS of this process and of the PostgreSQL server's process tree, sampled in a thread."""

    def __init__(self, interval_s: float = 0.5) -> None:
        self.peak_self_mb = 0.0
        self.peak_pg_mb = 0.0
        self.peak_total_mb = 0.0
        self._pg_pid: int | None = None
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def watch_postgres(self, pgdata: Path) -> None:
        pid_file = pgdata / "postmaster.pid"
        self._pg_pid = int(pid_file.read_text().split("\n", 1)[0]) if pid_file.exists() else None

    def __enter__(self) -> _MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def sample(self) -> None:
        own = _rss_mb(os.getpid())
        pg = sum(_rss_mb(pid) for pid in _tree(self._pg_pid)) if self._pg_pid is not None else 0.0
        self.peak_self_mb = max(self.peak_self_mb, own)
        self.peak_pg_mb = max(self.peak_pg_mb, pg)
        self.peak_total_mb = max(self.peak_total_mb, own + pg)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.sample()


def _rss_mb(pid: int) -> float:
    """Resident set of a process from /proc (0 once it has exited)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0  # the process exited: it holds no memory; any other read error fails the run
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _tree(root: int) -> list[int]:
    """`root` and its descendants (the PostgreSQL server and its backends)."""
    parent_of: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command name (field 2) may hold spaces and parentheses: split after its closing one.
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited while we looked
        parent_of[int(stat.parent.name)] = int(fields[1])
    found, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, ppid in parent_of.items() if ppid in frontier]
        found.extend(frontier)
    return found


_FINANCE = acl_from_source({"groups": ["finance"]})


def _documents(cfg: ScaleConfig) -> Iterator[tuple[str, AclClass, list[str]]]:
    """(doc_id, ACL, chunk texts) for `cfg.chunks` chunks, streamed: nothing of the corpus is kept."""
    finance = _FINANCE
    paragraphs = (d.body.decode("utf-8") for d in prose_documents(cfg.chunks, seed=cfg.seed))
    doc = 0
    while True:
        texts = [t for _, t in zip(range(CHUNKS_PER_DOC), paragraphs, strict=False)]
        if not texts:
            return
        yield f"scale-{doc:07d}", finance if doc % 4 == 3 else PUBLIC_ACL, texts
        doc += 1


def _model_rate_and_pool(embedder: Embedder, cfg: ScaleConfig) -> tuple[np.ndarray, float]:
    """The real vectors of the first `cfg.pool` chunks, and the model's rate on them (chunks/s)."""
    texts: list[str] = []
    for doc_id, _, chunk_texts in _documents(ScaleConfig(min(cfg.pool, cfg.chunks), seed=cfg.seed)):
        texts.extend(f"{doc_id}\n{t}" for t in chunk_texts)  # breadcrumb + text, as the indexer embeds
    embedder.embed_documents(texts[:8])  # warm-up outside the timing
    started = time.perf_counter()
    vectors = [v for i in range(0, len(texts), 64) for v in embedder.embed_documents(texts[i : i + 64])]
    rate = len(texts) / (time.perf_counter() - started)
    return np.asarray(vectors, dtype=np.float32), rate


def _derived_vectors(pool: np.ndarray, start: int, count: int, noise: float, seed: int) -> np.ndarray:
    """Vectors of chunks start..start+count: real pool vectors, noised from the pool onward (deterministic)."""
    idx = np.arange(start, start + count)
    out = pool[idx % len(pool)].copy()
    beyond = idx >= len(pool)
    if beyond.any():
        rng = np.random.default_rng([seed, start])
        out[beyond] += rng.normal(0.0, noise, size=(int(beyond.sum()), pool.shape[1])).astype(np.float32)
        out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


@dataclass(slots=True)
class _BuildTimes:
    postgres_s: float = 0.0
    vectors_s: float = 0.0
    keywords_s: float = 0.0
    optimize_s: float = 0.0


def _build(
    cfg: ScaleConfig,
    stores: tuple[PostgresStore, PostgresStore] | None,
    vindex: EdgeVectorIndex,
    kindex: TantivyKeywordIndex,
    pool: np.ndarray,
    log: bool,
) -> tuple[_BuildTimes, list[str]]:
    """Stream the corpus into the three stores; returns the phase times and a sample of texts for queries."""
    times = _BuildTimes()
    rng = random.Random(cfg.seed)
    sample: list[str] = []
    seen = 0
    batch: list[tuple[str, AclClass, list[str]]] = []

    def commit(store: PostgresStore, items: list[tuple[str, AclClass, list[Chunk], list[str]]]) -> float:
        started = time.perf_counter()
        for doc_id, acl, chunks, texts in items:
            body = "\n\n".join(texts).encode("utf-8")
            stored = StoredDocument(
                doc_id,
                "bench",
                f"bench://{doc_id}",
                doc_id,
                1,
                content_hash(body),
                acl.acl_class_id,
                None,
                DocumentStatus.ACTIVE,
                byte_length=len(body),
            )
            store.commit_document(stored, acl, chunks)
        return time.perf_counter() - started

    def flush() -> None:
        nonlocal seen
        points: list[VectorPoint] = []
        docs: list[KeywordDoc] = []
        first = seen
        items = [(doc_id, acl, _chunks(doc_id, acl, texts), texts) for doc_id, acl, texts in batch]
        chunks_of = [chunks for _, _, chunks, _ in items]
        # PostgreSQL (its own server processes) commits on two connections beside the in-process index
        # writes, as two indexer replicas would; each phase's time is its own wall time.
        postgres = [committer.submit(commit, store, items[i::2]) for i, store in enumerate(stores or ())]
        vectors = _derived_vectors(pool, first, sum(len(c) for c in chunks_of), cfg.noise, cfg.seed)
        row = 0
        for chunks in chunks_of:
            for c in chunks:
                points.append(
                    VectorPoint(
                        c.chunk_id, tuple(vectors[row].tolist()), c.doc_id, c.acl_class_id, c.content_hash, "bench"
                    )
                )
                docs.append(KeywordDoc(c.chunk_id, c.doc_id, c.acl_class_id, c.doc_id, c.doc_id, c.text, "bench"))
                row += 1
        started = time.perf_counter()
        vindex.upsert(points)
        times.vectors_s += time.perf_counter() - started
        started = time.perf_counter()
        kindex.upsert(docs)
        times.keywords_s += time.perf_counter() - started
        # The slower connection's wall time (result() re-raises a failed commit here).
        times.postgres_s += max((future.result() for future in postgres), default=0.0)
        seen += row
        batch.clear()
        if log:
            print(
                f"  {seen} chunks · pg {times.postgres_s:.0f} s · vectors {times.vectors_s:.0f} s · "
                f"bm25 {times.keywords_s:.0f} s · load {os.getloadavg()[0]:.1f}",
                flush=True,
            )

    committer = ThreadPoolExecutor(max_workers=2, thread_name_prefix="pg-commit")
    try:
        _stream(cfg, batch, sample, rng, flush)
    finally:
        committer.shutdown()
    started = time.perf_counter()
    vindex.optimize()
    times.optimize_s = time.perf_counter() - started
    return times, sample


def _stream(
    cfg: ScaleConfig,
    batch: list[tuple[str, AclClass, list[str]]],
    sample: list[str],
    rng: random.Random,
    flush: Callable[[], None],
) -> None:
    streamed = 0
    for item in _documents(cfg):
        batch.append(item)
        # A reservoir sample of chunk texts (uniform over the whole corpus) for the queries.
        for text in item[2]:
            if len(sample) < cfg.queries:
                sample.append(text)
            elif (j := rng.randrange(streamed + 1)) < cfg.queries:
                sample[j] = text
            streamed += 1
        if len(batch) == BATCH_DOCS:
            flush()
    if batch:
        flush()


def _chunks(doc_id: str, acl: AclClass, texts: list[str]) -> list[Chunk]:
    chunks: list[Chunk] = []
    offset = 0
    for seq, text in enumerate(texts):
        raw = text.encode("utf-8")
        h = content_hash(raw)
        chunks.append(
            Chunk(
                chunk_id_for(doc_id, h, seq),
                doc_id,
                seq,
                (doc_id,),
                offset,
                offset + len(raw),
                text,
                len(text.split()),
                h,
                acl.acl_class_id,
            )
        )
        offset += len(raw) + 2
    return chunks


def _queries(sample: list[str], seed: int) -> list[str]:
    rng = random.Random(seed + 1)
    out = []
    for text in sample:
        words = _WORD.findall(text)
        n = min(len(words), rng.randint(2, 5))
        start = rng.randrange(len(words) - n + 1)
        out.append(" ".join(words[start : start + n]))
    return out


def _percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def _search(searcher: HybridSearcher, queries: list[str], caller: Caller) -> dict[str, dict[str, float]]:
    return _timed(lambda q, mode: bool(searcher.search(q, caller, top_k=10, mode=mode).hits), queries)


def _timed(search: Callable[[str, SearchMode], bool], queries: list[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for mode in MODES:
        for q in queries[:5]:
            search(q, mode)  # warm-up (caches, mmap pages) outside the timing
        totals: list[float] = []
        stages: dict[str, list[float]] = {}
        found = 0
        for q in queries:
            with measuring() as t:
                found += search(q, mode)
            totals.append(t.ms["total"])
            for name, ms in t.ms.items():
                stages.setdefault(name, []).append(ms)
        p50, p95 = _percentiles(totals)
        row = {"p50_ms": p50, "p95_ms": p95, "queries": len(queries), "with_hits": found}
        row.update({f"{name}_p50_ms": statistics.median(v) for name, v in stages.items() if name != "total"})
        row["load_average"] = os.getloadavg()[0]
        out[mode.value] = row
    return out


def _routes_only(
    vindex: EdgeVectorIndex, kindex: TantivyKeywordIndex, embedder: Embedder, queries: list[str], caller: Caller
) -> dict[str, dict[str, float]]:
    """What `HybridSearcher.search` does before hydrating, stage by stage: the index-only mode's latency."""
    allowed = readable_classes([PUBLIC_ACL, _FINANCE], caller)
    per_route = CANDIDATES_PER_ROUTE.resolve(None)

    def one(q: str, mode: SearchMode) -> int:
        routes = {}
        if mode in (SearchMode.HYBRID, SearchMode.DENSE):
            with stage("embed"):
                vector = embedder.embed_query(q)
            with stage("dense"):
                routes["dense"] = vindex.search(vector, allowed, per_route)
        if mode in (SearchMode.HYBRID, SearchMode.BM25):
            with stage("bm25"):
                routes["bm25"] = kindex.search(q, allowed, per_route)
        with stage("fusion"):
            return len(reciprocal_rank_fusion(routes)[:10])

    return _timed(lambda q, mode: one(q, mode) > 0, queries)


def _dense_recall(
    embedder: Embedder, vindex: EdgeVectorIndex, queries: list[str], caller: Caller, k: int = 10
) -> float:
    """Mean overlap of the index's top k with an exact scan's top k over the same readable chunks."""
    allowed = readable_classes([PUBLIC_ACL, _FINANCE], caller)
    overlaps = []
    for q in queries:
        vector = embedder.embed_query(q)
        approx = {h.chunk_id for h in vindex.search(vector, allowed, k)}
        exact = {h.chunk_id for h in vindex.search(vector, allowed, k, exact=True)}
        overlaps.append(len(approx & exact) / max(1, len(exact)))
    return statistics.mean(overlaps)


def run(cfg: ScaleConfig, *, log: bool = True) -> dict[str, object]:
    settings = KgragSettings()
    embedder = build_embedder(settings)
    load_start = os.getloadavg()[0]
    pool, model_rate = _model_rate_and_pool(embedder, cfg)
    caller = Caller(user="bench", groups=("engineering",))
    tuning = EdgeTuning(optimize_after_points=cfg.optimize_after_points)
    with tempfile.TemporaryDirectory(prefix="kgrag-scale-") as tmp, _MemorySampler() as memory, ExitStack() as stack:
        stores: tuple[PostgresStore, PostgresStore] | None = None
        if not cfg.index_only:
            pg = stack.enter_context(EmbeddedPostgres(Path(tmp) / "pg"))
            stores = (
                stack.enter_context(PostgresStore.connect(pg.dsn)),
                stack.enter_context(PostgresStore.connect(pg.dsn)),
            )
            memory.watch_postgres(Path(tmp) / "pg")
        vindex = stack.enter_context(EdgeVectorIndex(Path(tmp) / "qdrant", embedder.dimension, tuning=tuning))
        kindex = stack.enter_context(TantivyKeywordIndex(Path(tmp) / "bm25"))
        started = time.perf_counter()
        times, sample = _build(cfg, stores, vindex, kindex, pool, log)
        build_s = time.perf_counter() - started
        build_peak_mb = memory.peak_total_mb
        queries = _queries(sample, cfg.seed)
        if stores is None:
            search = _routes_only(vindex, kindex, embedder, queries, caller)
        else:
            search = _search(HybridSearcher(stores[0], stores[0], vindex, kindex, embedder), queries, caller)
        recall = _dense_recall(embedder, vindex, queries[:50], caller)
        disk_mb = {
            name: sum(f.stat().st_size for f in (Path(tmp) / name).rglob("*") if f.is_file()) / 2**20
            for name in ("pg", "qdrant", "bm25")
        }
    return {
        "machine": _machine(),
        "chunks": cfg.chunks,
        "documents": -(-cfg.chunks // CHUNKS_PER_DOC),
        "pool": min(cfg.pool, cfg.chunks),
        "noise": cfg.noise,
        "index_only": cfg.index_only,
        "optimize_after_points": cfg.optimize_after_points,
        "model_chunks_per_s": model_rate,
        "build_s": build_s,
        "build_with_model_s": build_s + cfg.chunks / model_rate,
        "build_phases_s": {
            "postgres": times.postgres_s,
            "vectors": times.vectors_s,
            "bm25": times.keywords_s,
            "vector_index_optimize": times.optimize_s,
        },
        "search": search,
        "dense_recall_at_10": recall,
        "peak_rss_mb": {
            "process": memory.peak_self_mb,
            "postgres": memory.peak_pg_mb,
            "total": memory.peak_total_mb,
            "total_during_build": build_peak_mb,
        },
        "disk_mb": disk_mb,
        "load_average_start": load_start,
        "load_average_end": os.getloadavg()[0],
    }


def markdown(r: dict[str, object]) -> str:
    phases = r["build_phases_s"]
    search = r["search"]
    rss = r["peak_rss_mb"]
    disk = r["disk_mb"]
    assert isinstance(phases, dict) and isinstance(search, dict) and isinstance(rss, dict) and isinstance(disk, dict)
    lines = [
        f"Machine: {r['machine']} · load average {r['load_average_start']:.1f} at the start, "
        f"{r['load_average_end']:.1f} at the end",
        "",
        f"{r['chunks']:,} chunks in {r['documents']:,} documents; vectors: the model's on the first {r['pool']:,} "
        f"chunks, those + N(0, {r['noise']}) noise after; model alone {r['model_chunks_per_s']:.1f} chunks/s; "
        f"dense recall@10 against an exact scan {r['dense_recall_at_10']:.3f}"
        + (" · INDEX ONLY: no PostgreSQL, latency = routes + fusion, no hydration" if r["index_only"] else "")
        + f" · vector optimizer every {r['optimize_after_points']:,} points",
        "",
        "| mode | p50 ms | p95 ms | embed p50 ms | dense p50 ms | bm25 p50 ms | hydrate p50 ms | queries with hits "
        "| load avg |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for mode, row in search.items():
        cells = [
            f"{row[f'{s}_p50_ms']:.1f}" if f"{s}_p50_ms" in row else "–" for s in ("embed", "dense", "bm25", "hydrate")
        ]
        lines.append(
            f"| {mode} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} | {' | '.join(cells)} | "
            f"{row['with_hits']}/{row['queries']} | {row['load_average']:.1f} |"
        )
    lines += [
        "",
        "| build s (no model) | PostgreSQL s | vectors s | bm25 s | HNSW optimize s "
        "| build s incl. model (extrapolated) | peak RSS MB process / PostgreSQL / total "
        "| disk MB pg / qdrant / bm25 |",
        "|---|---|---|---|---|---|---|---|",
        f"| {r['build_s']:.0f} | {phases['postgres']:.0f} | {phases['vectors']:.0f} | {phases['bm25']:.0f} | "
        f"{phases['vector_index_optimize']:.0f} | {r['build_with_model_s']:.0f} | "
        f"{rss['process']:.0f} / {rss['postgres']:.0f} / {rss['total']:.0f} | "
        f"{disk['pg']:.0f} / {disk['qdrant']:.0f} / {disk['bm25']:.0f} |",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pool", type=int, default=2048, help="chunks embedded with the real model")
    parser.add_argument("--noise", type=float, default=0.02, help="per-dimension noise on derived vectors")
    parser.add_argument(
        "--index-only", action="store_true", help="no PostgreSQL: time the routes and fusion, not hydration"
    )
    parser.add_argument(
        "--optimize-every",
        type=int,
        default=EdgeTuning().optimize_after_points,
        help="points written between the vector index's optimizer runs (the shipped default, or a bulk load's)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench-results/scale"))
    ns = parser.parse_args()
    result = run(
        ScaleConfig(
            ns.chunks, ns.queries, ns.pool, ns.noise, index_only=ns.index_only, optimize_after_points=ns.optimize_every
        )
    )
    ns.out.mkdir(parents=True, exist_ok=True)
    name = f"scale-{ns.chunks}{'-index-only' if ns.index_only else ''}"
    (ns.out / f"{name}.json").write_text(json.dumps(result, indent=2))
    table = markdown(result)
    (ns.out / f"{name}.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
