"""5. The cost of crypto-shredding (ADR 0008): ingest and search with content encryption on and off.

Same run, same machine, same synthetic chunks, two PostgreSQL databases on one embedded server: one store
sealing every title, URI, breadcrumb and chunk text under per-document keys (and writing a key row per
document), one storing them unencrypted (KGRAG_CONTENT_ENCRYPTION=false). The commit cost is measured
document by document, alternating between the two stores; the cipher alone is measured without I/O.
Each store gets its own vector and keyword index built from the same input, so the only difference in a
search is opening the sealed chunks of the final evidence set. Ingest is also set against embedding the
same chunks with the real model, the step that dominates a real ingest, to say what share of an ingest
the cipher costs.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo
from rich.console import Console

from kgrag_adapters.postgres.embedded import EmbeddedPostgres
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.qdrant_edge.vector_index import EdgeVectorIndex
from kgrag_adapters.tantivy.keyword_index import TantivyKeywordIndex
from kgrag_core.acl import PUBLIC_ACL, Caller
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_runtime.benchmarks.runner import CHUNKS_PER_DOC, _latencies, _load
from kgrag_runtime.benchmarks.synthetic import WORDS, bag_of_words_vectors, synthetic_texts
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_embedder


def run_encryption_benchmark(chunks: int, queries: int, console: Console) -> dict[str, float]:
    settings = KgragSettings()
    embedder = build_embedder(settings)
    texts = synthetic_texts(chunks)
    vectors = bag_of_words_vectors(texts, embedder.dimension)
    acl_of = [PUBLIC_ACL] * len(texts)
    rng = random.Random(7)
    query_texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5))) for _ in range(queries)]
    caller = Caller(user="bench", groups=("engineering",))
    out: dict[str, float] = {"chunks": chunks, "documents": chunks // CHUNKS_PER_DOC, "queries": queries}
    with tempfile.TemporaryDirectory() as tmp, EmbeddedPostgres(Path(tmp) / "pg") as pg:
        searchers: dict[str, HybridSearcher] = {}
        opened = []
        for label, encrypt in (("plain", False), ("sealed", True)):
            with psycopg.connect(pg.admin_dsn, autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE bench_{label}")
            store = PostgresGraphStore.connect(make_conninfo(pg.admin_dsn, dbname=f"bench_{label}"), encrypt=encrypt)
            vindex = EdgeVectorIndex(Path(tmp) / f"qdrant-{label}", embedder.dimension)
            kindex = TantivyKeywordIndex(Path(tmp) / f"bm25-{label}")
            opened.append((store, vindex, kindex))
            console.print(f"Encryption benchmark: loading {chunks} chunks ({label})…")
            started = time.perf_counter()
            _load(store, vindex, kindex, texts, vectors, acl_of)
            out[f"load_{label}_s"] = time.perf_counter() - started
            searchers[label] = HybridSearcher(store, store, vindex, kindex, embedder)
        out.update(_commit_cost([o[0] for o in opened], texts))
        out.update(_read_cost([o[0] for o in opened]))
        out.update(_facts_cost([o[0] for o in opened]))
        # Embedding the same chunks with the model: what a real ingest spends most of its time on.
        sample = texts[: min(len(texts), 200)]
        started = time.perf_counter()
        embedder.embed_documents(sample)
        out["embed_ms_per_chunk"] = (time.perf_counter() - started) * 1000 / len(sample)
        for searcher in searchers.values():
            searcher.search(query_texts[0], caller)  # warm-up
        # Interleaved, so drift of a shared machine hits both the same.
        for label in ("plain", "sealed", "plain", "sealed"):
            searcher = searchers[label]
            p50, p95 = _latencies(lambda q: searcher.search(q, caller, top_k=10), query_texts)  # noqa: B023
            out[f"search_{label}_p50_ms"] = min(out.get(f"search_{label}_p50_ms", p50), p50)
            out[f"search_{label}_p95_ms"] = min(out.get(f"search_{label}_p95_ms", p95), p95)
        for store, vindex, kindex in opened:
            vindex.close()
            kindex.close()
            store.close()
    out.update(_cipher_cost(texts))
    # Share of an ingest: the sealed commit's extra time per chunk over what an unencrypted ingest spends
    # per chunk (loading the store and both indexes, and embedding).
    extra = (out["commit_sealed_ms_per_doc"] - out["commit_plain_ms_per_doc"]) / CHUNKS_PER_DOC
    plain_per_chunk = out["load_plain_s"] * 1000 / chunks + out["embed_ms_per_chunk"]
    out["ingest_overhead_pct"] = 100 * extra / plain_per_chunk
    out["commit_overhead_pct"] = 100 * (out["commit_sealed_ms_per_doc"] / out["commit_plain_ms_per_doc"] - 1)
    out["search_overhead_p50_pct"] = 100 * (out["search_sealed_p50_ms"] / out["search_plain_p50_ms"] - 1)
    out["search_overhead_p95_pct"] = 100 * (out["search_sealed_p95_ms"] / out["search_plain_p95_ms"] - 1)
    out["facts_save_overhead_pct"] = 100 * (out["facts_sealed_ms_per_doc"] / out["facts_plain_ms_per_doc"] - 1)
    out["named_overhead_pct"] = 100 * (out["named_sealed_ms"] / out["named_plain_ms"] - 1)
    return out


def _facts_cost(stores: list[PostgresGraphStore], docs: int = 100, rounds: int = 200) -> dict[str, float]:
    """Extraction facts (migration 0010: names, identifiers and values sealed per document, blind-indexed):
    `save` of one result per chunk (three mentions, one with an identifier, a relation, a claim) for the
    documents the commit step stored, and `entities_named` of a name shared across documents plus one
    document's own, as a graph read starts; plain vs sealed, the order alternating."""
    from kgrag_core.extraction.model import ChunkExtraction, ClaimItem, EntityMention, ExtractionKey, RelationItem, Tier

    spent = [0.0, 0.0]
    for n in range(docs):
        results = []
        for chunk in stores[0].chunks_of(f"commit-{n:05d}"):
            text = chunk.text
            person, team = f"Person {n} {chunk.seq}", f"Team {n % 7}"
            results.append(
                ChunkExtraction(
                    chunk.chunk_id,
                    ExtractionKey(chunk.content_hash, "bench", "1"),
                    Tier.NER,
                    (
                        EntityMention(person, "Person", text, 0.9, (("email", f"p{n}.{chunk.seq}@example.com"),)),
                        EntityMention(team, "Team", text, 0.8),
                        EntityMention("Shared Site", "Site", text, 0.7),
                    ),
                    (RelationItem(person, "Person", "MEMBER_OF", team, "Team", text, 0.8),),
                    (ClaimItem(person, "Person", "role", f"role {n}", text, 0.9),),
                )
            )
        for i in (0, 1) if n % 2 == 0 else (1, 0):
            started = time.perf_counter()
            stores[i].save(results)
            spent[i] += time.perf_counter() - started
    read = [0.0, 0.0]
    rng = random.Random(11)
    for n in range(rounds):
        names = ["Shared Site", f"Team {n % 7}", f"Person {rng.randrange(docs)} 0"]
        for i in (0, 1) if n % 2 == 0 else (1, 0):
            started = time.perf_counter()
            stores[i].entities_named(names, None)
            read[i] += time.perf_counter() - started
    return {
        "facts_plain_ms_per_doc": spent[0] * 1000 / docs,
        "facts_sealed_ms_per_doc": spent[1] * 1000 / docs,
        "named_plain_ms": read[0] * 1000 / rounds,
        "named_sealed_ms": read[1] * 1000 / rounds,
    }


def _commit_cost(stores: list[PostgresGraphStore], texts: list[str], docs: int = 100) -> dict[str, float]:
    """The store commit of the same documents into the plain and the sealed store, interleaved document by
    document (the order alternating), so a shared machine's drift hits both alike."""
    from kgrag_core.acl import AclClass
    from kgrag_core.documents import Chunk, DocumentStatus, StoredDocument
    from kgrag_core.ids import chunk_id_for, content_hash

    spent = [0.0, 0.0]
    acl: AclClass = PUBLIC_ACL
    for n in range(docs):
        doc_id = f"commit-{n:05d}"
        parts = texts[(n * CHUNKS_PER_DOC) % len(texts) :][:CHUNKS_PER_DOC]
        chunks, offset = [], 0
        for seq, text in enumerate(parts):
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
            content_hash(doc_id.encode()),
            acl.acl_class_id,
            None,
            DocumentStatus.ACTIVE,
            byte_length=offset,
        )
        order = (0, 1) if n % 2 == 0 else (1, 0)
        for i in order:
            started = time.perf_counter()
            stores[i].commit_document(doc, acl, chunks)
            spent[i] += time.perf_counter() - started
    return {"commit_plain_ms_per_doc": spent[0] * 1000 / docs, "commit_sealed_ms_per_doc": spent[1] * 1000 / docs}


def _read_cost(stores: list[PostgresGraphStore], rounds: int = 300, top_k: int = 10) -> dict[str, float]:
    """What a search reads from the store after ranking: `top_k` chunks by id (plain vs sealed, the order
    alternating). The searches above include it; this isolates it from the rest of a search's noise."""
    ids = sorted(c.chunk_id for d in stores[0].list_documents() for c in stores[0].chunks_of(d.doc_id))
    rng = random.Random(9)
    spent = [0.0, 0.0]
    for n in range(rounds):
        wanted = rng.sample(ids, top_k)
        for i in (0, 1) if n % 2 == 0 else (1, 0):
            started = time.perf_counter()
            stores[i].get_chunks(wanted)
            spent[i] += time.perf_counter() - started
    return {"read_plain_ms_per_search": spent[0] * 1000 / rounds, "read_sealed_ms_per_search": spent[1] * 1000 / rounds}


def _cipher_cost(texts: list[str]) -> dict[str, float]:
    """The cipher alone, per chunk (CPU only, no database): seal and open the text and breadcrumb the way
    the store does, with a key store in memory. A number a loaded machine disturbs far less than a load."""
    from kgrag_adapters.crypto.envelope import EnvelopeCipher
    from kgrag_adapters.crypto.kek import KeyRing, new_key
    from kgrag_adapters.memory.keys import MemoryKeyStore

    cipher = EnvelopeCipher(MemoryKeyStore(), KeyRing([new_key()]))
    sealed: list[tuple[str, bytes, bytes]] = []
    started = time.perf_counter()
    for start in range(0, len(texts), CHUNKS_PER_DOC):
        doc_id = f"bench-{start // CHUNKS_PER_DOC:06d}"
        seal, same = cipher.sealer(doc_id), cipher.sealer(doc_id, deterministic=True)
        for text in texts[start : start + CHUNKS_PER_DOC]:
            sealed.append((doc_id, seal(text.encode("utf-8")), same(json.dumps([doc_id]).encode("utf-8"))))
    seal_s = time.perf_counter() - started
    started = time.perf_counter()
    for doc_id, sealed_text, sealed_crumb in sealed:
        cipher.open(doc_id, sealed_text)
        cipher.open(doc_id, sealed_crumb)
    open_s = time.perf_counter() - started
    return {
        "cipher_seal_us_per_chunk": seal_s * 1e6 / len(texts),
        "cipher_open_us_per_chunk": open_s * 1e6 / len(texts),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=None, help="Write the numbers as JSON here.")
    args = parser.parse_args()
    console = Console()
    result = run_encryption_benchmark(args.chunks, args.queries, console)
    console.print_json(json.dumps(result))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
