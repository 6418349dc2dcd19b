"""BM25 with and without tantivy fast fields for `chunk_id` and `acl_class_id`, in one run (issue 10).

Two `TantivyKeywordIndex` directories get the same chunks (`scale.py`'s corpus: a quarter finance-only,
the caller reads public only, so every search carries the ACL clause): one with the shipped schema (the
"before"), one with `chunk_id` and `acl_class_id` also declared fast (columns), the same adapter code
otherwise. The same queries then run against both, alternating query by query, so a change of machine
load during the run weighs on both sides alike. Index only: no PostgreSQL, no vectors, no hydration.
(The fast fields are not shipped: at 100k chunks they changed nothing measurable, docs/benchmarks.md.)

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

import tantivy

from kgrag_adapters.tantivy import keyword_index
from kgrag_adapters.tantivy.keyword_index import TantivyKeywordIndex
from kgrag_core.acl import PUBLIC_ACL
from kgrag_core.search import KeywordDoc
from kgrag_runtime.benchmarks.scale import ScaleConfig, _documents, _percentiles, _queries

BATCH = 5000
FAST_FIELDS = frozenset({"chunk_id", "acl_class_id"})


@contextmanager
def _schema_with_fast_fields() -> Iterator[None]:
    """The adapter with `chunk_id` and `acl_class_id` declared fast, for the indexes opened inside."""
    shipped = keyword_index._build_schema

    def with_fast_fields() -> tantivy.Schema:
        builder = tantivy.SchemaBuilder()
        for name in keyword_index._RAW_FIELDS:
            fast = name in FAST_FIELDS
            builder.add_text_field(name, stored=True, fast=fast, tokenizer_name="raw", index_option="basic")
        for name in keyword_index._SEARCH_FIELDS:
            builder.add_text_field(name, stored=False, tokenizer_name=keyword_index._TEXT_TOKENIZER)
        builder.add_date_field(keyword_index._DATE_FIELD, indexed=True, fast=True)
        return builder.build()

    keyword_index._build_schema = with_fast_fields
    try:
        yield
    finally:
        keyword_index._build_schema = shipped


def run(chunks: int, queries: int, seed: int = 2026) -> dict[str, object]:
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="kgrag-bm25-") as tmp:
        before = TantivyKeywordIndex(Path(tmp) / "before")
        with _schema_with_fast_fields():
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
    for name, label in (("before", "shipped (no fast fields)"), ("after", "chunk_id, acl_class_id fast")):
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
