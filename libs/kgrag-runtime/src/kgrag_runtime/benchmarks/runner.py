"""Benchmarks, reported as tables with the machine and a baseline measured in the same run.

1. Ingest: the full embedded pipeline vs the embedding model alone on the same chunk texts.
2. Search: hybrid search latency at each corpus size vs a plain baseline (rank-bm25 + brute-force numpy,
   fused the same way), both with the caller's ACL filter, plus the peak RSS.
3. Extraction: tiers 0-2 in chunks/s vs spaCy's model alone on the same texts (`extraction.py`).
4. Graph traversal: neighbours and bounded expansion from hub and ordinary seeds vs a naive recursive-SQL walk
   (`graph.py`; 10k and 100k entities, `python -m kgrag_runtime.benchmarks.graph` runs it alone).
"""

from __future__ import annotations

import json
import os
import platform
import random
import resource
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from rich.console import Console

from kgrag_adapters.postgres.embedded import EmbeddedPostgres
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_adapters.qdrant_edge.vector_index import EdgeVectorIndex
from kgrag_adapters.tantivy.keyword_index import TantivyKeywordIndex
from kgrag_core.acl import PUBLIC_ACL, AclClass, Caller, acl_from_source
from kgrag_core.chunking import chunk_document, estimate_tokens
from kgrag_core.documents import Chunk, DocumentStatus, SourceDocument, StoredDocument
from kgrag_core.ids import chunk_id_for, content_hash
from kgrag_core.ports import Embedder, TokenCounter
from kgrag_core.retrieval.fusion import reciprocal_rank_fusion
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_core.search import KeywordDoc, RouteHit, VectorPoint
from kgrag_runtime.benchmarks.extraction import extraction_markdown, run_extraction_benchmarks
from kgrag_runtime.benchmarks.graph import graph_markdown, run_graph_benchmarks
from kgrag_runtime.benchmarks.synthetic import (
    WORDS,
    bag_of_words_vectors,
    synthetic_documents,
    synthetic_texts,
)
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_embedder, open_embedded

CHUNKS_PER_DOC = 10


def run_benchmarks(out: Path, sizes: Sequence[int], queries: int, console: Console) -> dict[str, object]:
    out.mkdir(parents=True, exist_ok=True)
    settings = KgragSettings()
    machine = _machine()
    console.print(f"Machine: {machine}")
    ingest = _bench_ingest(settings, console)
    search = [_bench_search(settings, n, queries, console) for n in sizes]
    extraction = run_extraction_benchmarks(settings, console)
    graph = run_graph_benchmarks(console)
    results: dict[str, object] = {
        "machine": machine,
        "ingest": ingest,
        "search": search,
        "extraction": extraction,
        "graph": graph,
    }
    (out / "results.json").write_text(json.dumps(results, indent=2))
    markdown = _markdown(results) + "\n" + extraction_markdown(extraction) + "\n" + graph_markdown(graph)
    (out / "results.md").write_text(markdown)
    console.print(markdown)
    return results


def _bench_ingest(settings: KgragSettings, console: Console, docs: int = 200) -> dict[str, float]:
    """The pipeline's chunk rate next to the model's own rate on the same texts.

    The model alone runs before and after the pipeline and the two are averaged, so a machine that
    speeds up or slows down during the run does not favour either side.
    """
    items = list(synthetic_documents(docs))
    with tempfile.TemporaryDirectory() as tmp:
        cfg = settings.model_copy(update={"data_dir": Path(tmp), "pg_dsn": None})
        with open_embedded(cfg) as kg:
            console.print(f"Ingest benchmark: {docs} documents…")
            kg.ingest(list(synthetic_documents(4, seed=99)))  # warm-up outside the timing
            embedder = kg.searcher.embedder
            texts = _embedding_texts(items, cfg, embedder)
            model_before = _model_rate(embedder, texts, settings.ingest_batch_documents)
            started = time.perf_counter()
            outcomes = kg.ingest(items)
            pipeline_s = time.perf_counter() - started
            model_after = _model_rate(embedder, texts, settings.ingest_batch_documents)
    chunks = sum(o.chunks_total for o in outcomes)
    model_rate = (model_before + model_after) / 2
    return {
        "documents": docs,
        "chunks": chunks,
        "pipeline_docs_per_s": docs / pipeline_s,
        "pipeline_chunks_per_s": chunks / pipeline_s,
        "model_chunks_per_s": model_rate,
        "model_chunks_per_s_before": model_before,
        "model_chunks_per_s_after": model_after,
        "overhead_ratio": (chunks / pipeline_s) / model_rate,
    }


def _embedding_texts(items: list[SourceDocument], settings: KgragSettings, embedder: Embedder) -> list[str]:
    """Exactly what the pipeline will embed: breadcrumb + chunk text of every chunk, cut the same way."""
    count = embedder.count_tokens if isinstance(embedder, TokenCounter) else estimate_tokens
    out: list[str] = []
    for doc in items:
        text = doc.body.decode("utf-8")
        for span in chunk_document(
            text,
            title=doc.title,
            max_tokens=settings.chunk_max_tokens,
            overlap_tokens=settings.chunk_overlap_tokens,
            count_tokens=count,
        ):
            piece = doc.body[span.start_byte : span.end_byte].decode("utf-8")
            out.append(f"{' > '.join(span.breadcrumb) or doc.title}\n{piece}")
    return out


def _model_rate(embedder: Embedder, texts: list[str], batch: int) -> float:
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed_documents(texts[i : i + batch])
    return len(texts) / (time.perf_counter() - started)


def _bench_search(settings: KgragSettings, size: int, queries: int, console: Console) -> dict[str, float]:
    console.print(f"Search benchmark at {size} chunks: building the index…")
    texts = synthetic_texts(size)
    embedder = build_embedder(settings)
    vectors = bag_of_words_vectors(texts, embedder.dimension)
    finance = acl_from_source({"groups": ["finance"]})
    # A quarter of the documents (all their chunks) are finance-only; the caller may not read them.
    acl_of = [finance if (i // CHUNKS_PER_DOC) % 4 == 3 else PUBLIC_ACL for i in range(size)]
    rng = random.Random(5)
    query_texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5))) for _ in range(queries)]
    caller = Caller(user="bench", groups=("engineering",))  # may not read the finance quarter

    with (
        tempfile.TemporaryDirectory() as tmp,
        EmbeddedPostgres(Path(tmp) / "pg") as pg,
        PostgresStore.connect(pg.dsn) as store,
    ):
        vindex = EdgeVectorIndex(Path(tmp) / "qdrant", embedder.dimension)
        kindex = TantivyKeywordIndex(Path(tmp) / "bm25")
        started = time.perf_counter()
        _load(store, vindex, kindex, texts, vectors, acl_of)
        build_s = time.perf_counter() - started
        searcher = HybridSearcher(store, store, vindex, kindex, embedder)
        searcher.search(query_texts[0], caller)  # warm-up
        ours = _latencies(lambda q: searcher.search(q, caller, top_k=10), query_texts)
        rss_after_ours = _peak_rss_mb()
        vindex.close()
        kindex.close()

    baseline = _Baseline(texts, vectors, [a.acl_class_id == PUBLIC_ACL.acl_class_id for a in acl_of])
    theirs = _latencies(lambda q: baseline.search(embedder.embed_query(q), q, 10), query_texts)
    return {
        "chunks": size,
        "build_s": build_s,
        "kgrag_p50_ms": ours[0],
        "kgrag_p95_ms": ours[1],
        "baseline_p50_ms": theirs[0],
        "baseline_p95_ms": theirs[1],
        "peak_rss_mb": rss_after_ours,
    }


def _load(
    store: PostgresStore,
    vindex: EdgeVectorIndex,
    kindex: TantivyKeywordIndex,
    texts: list[str],
    vectors: np.ndarray,
    acl_of: list[AclClass],
) -> None:
    points: list[VectorPoint] = []
    keyword_docs: list[KeywordDoc] = []
    for start in range(0, len(texts), CHUNKS_PER_DOC):
        doc_id = f"bench-{start // CHUNKS_PER_DOC:06d}"
        acl = acl_of[start]
        body = "\n\n".join(texts[start : start + CHUNKS_PER_DOC]).encode("utf-8")
        chunks: list[Chunk] = []
        offset = 0
        for seq, text in enumerate(texts[start : start + CHUNKS_PER_DOC]):
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
        doc = StoredDocument(
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
        store.commit_document(doc, acl, chunks)
        points.extend(
            VectorPoint(
                c.chunk_id, tuple(vectors[start + c.seq].tolist()), doc_id, c.acl_class_id, c.content_hash, "bench"
            )
            for c in chunks
        )
        keyword_docs.extend(
            KeywordDoc(c.chunk_id, doc_id, c.acl_class_id, doc_id, doc_id, c.text, "bench") for c in chunks
        )
        if len(points) >= 5000:
            vindex.upsert(points)
            kindex.upsert(keyword_docs)
            points, keyword_docs = [], []
    if points:
        vindex.upsert(points)
        kindex.upsert(keyword_docs)


class _Baseline:
    """rank-bm25 plus brute-force cosine over numpy, ACL as a mask, fused with the same RRF."""

    def __init__(self, texts: list[str], vectors: np.ndarray, allowed: list[bool]) -> None:
        from rank_bm25 import BM25Okapi

        self._bm25 = BM25Okapi([t.split() for t in texts])
        self._vectors = vectors
        self._mask = np.array(allowed)

    def search(self, qvec: Sequence[float], query: str, k: int) -> list[str]:
        dense = np.where(self._mask, self._vectors @ np.asarray(qvec, dtype=np.float32), -np.inf)
        sparse = np.where(self._mask, self._bm25.get_scores(query.split()), -np.inf)
        routes = {name: _top(scores, 50) for name, scores in (("dense", dense), ("bm25", sparse))}
        return [c.chunk_id for c in reciprocal_rank_fusion(routes)[:k]]


def _top(scores: np.ndarray, n: int) -> list[RouteHit]:
    idx = np.argsort(-scores, kind="stable")[:n]
    return [RouteHit(str(i), float(scores[i]), r) for r, i in enumerate(idx, start=1) if np.isfinite(scores[i])]


def _latencies(fn: Callable[[str], object], queries: list[str]) -> tuple[float, float]:
    times = []
    for q in queries:
        started = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.95))]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _machine() -> str:
    return f"{platform.machine()} · {os.cpu_count()} cores · Python {platform.python_version()} · {platform.system()}"


def _markdown(results: dict[str, object]) -> str:
    ingest = results["ingest"]
    assert isinstance(ingest, dict)
    lines = [
        f"Machine: {results['machine']}",
        "",
        "| ingest | documents | chunks | docs/s | chunks/s | model alone chunks/s | pipeline / model |",
        "|---|---|---|---|---|---|---|",
        f"| embedded pipeline | {ingest['documents']} | {ingest['chunks']} | {ingest['pipeline_docs_per_s']:.1f} | "
        f"{ingest['pipeline_chunks_per_s']:.1f} | {ingest['model_chunks_per_s']:.1f} | "
        f"{ingest['overhead_ratio']:.2f} |",
        "",
        "| chunks | kgrag hybrid p50 ms | p95 ms | baseline (rank-bm25 + numpy) p50 ms | p95 ms | build s "
        "| peak RSS MB |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in results["search"]:  # type: ignore[attr-defined]
        lines.append(
            f"| {row['chunks']} | {row['kgrag_p50_ms']:.1f} | {row['kgrag_p95_ms']:.1f} | {row['baseline_p50_ms']:.1f} "
            f"| {row['baseline_p95_ms']:.1f} | {row['build_s']:.1f} | {row['peak_rss_mb']:.0f} |"
        )
    return "\n".join(lines) + "\n"
