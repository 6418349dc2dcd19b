"""BM25 with and without tantivy fast fields for `chunk_id` and `acl_class_id`, in one run (issue 10).

Two `TantivyKeywordIndex` directories get the same chunks (`scale.py`'s corpus: a quarter finance-only,
the caller reads public only, so every search carries the ACL clause): one with today's schema, one
written with the schema before the fast fields (the "before"). The same queries then run against both,
alternating query by query, so a change of machine load during the run weighs on both sides alike.
Index only: no PostgreSQL, no vectors, no hydration.

    python -m kgrag_runtime.benchmarks.bm25_fast_fields --chunks 100000 --out bench-results/bm25
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kgrag_adapters.tantivy import keyword_index
from kgrag_adapters.tantivy.keyword_index import TantivyKeywordIndex
from kgrag_core.acl import PUBLIC_ACL
from kgrag_core.search import KeywordDoc
from kgrag_runtime.benchmarks.scale import ScaleConfig, _documents, _percentiles, _queries

BATCH = 5000


@contextmanager
def _schema_before_fast_fields() -> Iterator[None]:
    """The adapter as it was before the fast fields: the same code, the older schema."""
    kept = keyword_index._FAST_FIELDS
    keyword_index._FAST_FIELDS = frozenset()
    try:
        yield
    finally:
        keyword_index._FAST_FIELDS = kept


def run(chunks: int, queries: int, seed: int = 2026) -> dict[str, object]:
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="kgrag-bm25-") as tmp:
        with _schema_before_fast_fields():
            before = TantivyKeywordIndex(Path(tmp) / "before")
        after = TantivyKeywordIndex(Path(tmp) / "after")
        build = {"before": 0.0, "after": 0.0}
        sample: list[str] = []
        rng = random.Random(seed)
        batch: list[KeywordDoc] = []

        def flush() -> None:
            for name, index in (("before", before), ("after", after)):
                started = time.perf_counter()
                index.upsert(batch)
                build[name] += time.perf_counter() - started
            batch.clear()

        for doc_id, acl, texts in _documents(ScaleConfig(chunks, seed=seed)):
            for n, text in enumerate(texts):
                batch.append(KeywordDoc(f"{doc_id}#{n:04d}", doc_id, acl.acl_class_id, doc_id, doc_id, text, "bench"))
                if rng.random() < queries * 4 / chunks:
                    sample.append(text)
            if len(batch) >= BATCH:
                flush()
        flush()
        asked = _queries(sample[:queries], seed)
        allowed = [PUBLIC_ACL.acl_class_id]
        timings: dict[str, list[float]] = {"before": [], "after": []}
        agree = 0
        order = [("before", before), ("after", after)]
        for i, query in enumerate(asked):
            hits = {}
            for name, index in order if i % 2 else order[::-1]:
                started = time.perf_counter()
                hits[name] = [h.chunk_id for h in index.search(query, allowed, 10)]
                timings[name].append((time.perf_counter() - started) * 1000)
            agree += hits["before"] == hits["after"]
        counts = {"before": before.count(), "after": after.count()}
        before.close()
        after.close()
    rows = {}
    for name, values in timings.items():
        p50, p95 = _percentiles(values)
        rows[name] = {"p50_ms": p50, "p95_ms": p95, "build_s": build[name], "chunks": counts[name]}
    return {
        "chunks": chunks,
        "queries": len(asked),
        "same_top10": agree,
        "rows": rows,
        "load": [load_start[0], os.getloadavg()[0]],
        "cores": os.cpu_count(),
    }


def markdown(result: dict[str, object]) -> str:
    rows = result["rows"]
    assert isinstance(rows, dict)
    load = result["load"]
    assert isinstance(load, list)
    lines = [
        f"{result['chunks']:,} chunks, {result['queries']} queries (public reader, a quarter of the chunks "
        f"finance-only), alternating; load {load[0]:.1f} → {load[1]:.1f} on {result['cores']} cores; "
        f"identical top 10 for {result['same_top10']} of {result['queries']} queries",
        "",
        "| schema | BM25 p50 ms | BM25 p95 ms | build s (tantivy only) |",
        "|---|---:|---:|---:|",
    ]
    for name, label in (("before", "before (no fast fields)"), ("after", "chunk_id, acl_class_id fast")):
        r = rows[name]
        lines.append(f"| {label} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | {r['build_s']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path("bench-results/bm25"))
    ns = parser.parse_args()
    result = run(ns.chunks, ns.queries)
    ns.out.mkdir(parents=True, exist_ok=True)
    (ns.out / f"bm25-{ns.chunks}.json").write_text(json.dumps(result, indent=2))
    table = markdown(result)
    (ns.out / f"bm25-{ns.chunks}.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
