"""The extraction throughput benchmark on a tiny input: the report's structure and that its counts add up.

No timing is asserted (speed targets live in `make bench`); only that every chunk is accounted for once.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from rich.console import Console

from kgrag_core.acl import PUBLIC_ACL
from kgrag_core.chunking import estimate_tokens
from kgrag_core.documents import SourceDocument
from kgrag_core.extraction.model import SkipReason
from kgrag_runtime.benchmarks.extraction import (
    PARTS,
    DatabaseFactory,
    PreparedDocument,
    corpus_documents,
    edited_copy,
    extraction_markdown,
    measure_corpus,
    prepare_documents,
    synthetic_set,
)
from kgrag_runtime.settings import KgragSettings

CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "northwind"
DOC_IDS = ("wiki-team-ownership", "meeting-routing-weekly-2024-03-12", "meeting-routing-weekly-2024-03-12-repost")
SIGNATURE = "Thanks,\n\nPriya\n\nSent from my phone"


def _prepare(docs: Sequence[SourceDocument]) -> list[PreparedDocument]:
    return prepare_documents(docs, max_tokens=200, overlap_tokens=24, count_tokens=estimate_tokens)


@pytest.fixture
def fresh_database(pg_server_dsn: str) -> Iterator[DatabaseFactory]:
    created: list[str] = []

    @contextmanager
    def fresh(name: str) -> Iterator[str]:
        database = f"kgrag_test_bench_{name}_{uuid.uuid4().hex[:12]}"
        created.append(database)
        with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
        yield make_conninfo(pg_server_dsn, dbname=database)

    yield fresh
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        for database in created:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))


def _tiny_corpus() -> list[SourceDocument]:
    docs = corpus_documents(CORPUS)
    chosen = [d for d in docs if d.doc_id in DOC_IDS] + [d for d in docs if d.source == "records"][:3]
    boilerplate = SourceDocument(
        doc_id="mail-signature",
        source="mail",
        uri="mail://1",
        title="Signature",
        body=SIGNATURE.encode(),
        acl=PUBLIC_ACL,
    )
    return [*chosen, boilerplate]


@pytest.fixture(scope="module")
def tiny() -> list[PreparedDocument]:
    base = _tiny_corpus()
    # Twice the corpus's chunks: every chunk of the second copy repeats one of the first, exactly or nearly.
    return synthetic_set(base, 2 * sum(len(p.chunks) for p in _prepare(base)), _prepare)


def test_edited_copy_changes_long_numbers_but_not_dates() -> None:
    doc = SourceDocument(
        doc_id="d",
        source="wiki",
        uri="wiki://d",
        title="D",
        acl=PUBLIC_ACL,
        body=b"LEJ-2 has 24,500 pallets since 2024-06-01, ticket 1234 at 10:30; 12 docks.",
    )
    copy = edited_copy(doc, 3)
    assert copy.doc_id != doc.doc_id and copy.uri != doc.uri
    assert copy.body == b"LEJ-2 has 24,503 pallets since 2024-06-01, ticket 1237 at 10:30; 12 docks."
    assert edited_copy(doc, 0) is doc


def test_synthetic_set_repeats_whole_documents_until_the_target(tiny: list[PreparedDocument]) -> None:
    base = _prepare(_tiny_corpus())
    base_chunks = sum(len(p.chunks) for p in base)
    chunks = [c for p in tiny for c in p.chunks]
    assert len(chunks) >= 2 * base_chunks
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    assert [p.document.doc_id for p in tiny[: len(base)]] == [p.document.doc_id for p in base]
    for p in tiny:
        for c in p.chunks:  # a chunk is the byte span of its own document, as the indexer cuts it
            assert p.document.body[c.start_byte : c.end_byte].decode("utf-8") == c.text
            assert c.doc_id == p.document.doc_id


def test_measure_corpus_accounts_for_every_chunk(tiny: list[PreparedDocument], fresh_database: DatabaseFactory) -> None:
    settings = KgragSettings(ingest_batch_documents=4)
    row = measure_corpus(
        "tiny", tiny, settings=settings, fresh_database=fresh_database, model_sample=10, console=Console(quiet=True)
    )
    chunks = sum(len(p.chunks) for p in tiny)
    assert row["chunks"] == chunks and row["documents"] == len(tiny)
    assert row["batches"] == -(-len(tiny) // 4)

    tier0 = row["tier0"]
    assert tier0["chunks"] == chunks
    assert set(tier0["skipped"]) <= {r.value for r in SkipReason}
    assert tier0["skipped"][SkipReason.BOILERPLATE.value] == 2  # the signature and its copy
    assert tier0["skipped"].get("exact_duplicate", 0) + tier0["skipped"].get("near_duplicate", 0) > 0

    for key in ("cold", "warm"):
        run: dict[str, Any] = row[key]
        assert run["chunks"] == chunks
        assert sum(run["by_tier"].values()) == chunks  # every chunk handled by exactly one tier
        assert sum(run["skipped"].values()) == run["by_tier"]["0"]  # tier 0 is exactly the skipped chunks
        assert run["skipped"].get("exact_duplicate", 0) == run["exact_duplicates"]
        assert run["dedup_rate"] == pytest.approx((run["exact_duplicates"] + run["near_duplicates"]) / chunks)
        assert 0 <= run["cache_hits"] <= chunks
        # Boilerplate and low information depend on the text alone: the same as tier 0 alone found.
        for reason in (SkipReason.BOILERPLATE.value, SkipReason.LOW_INFORMATION.value):
            assert run["skipped"].get(reason, 0) == tier0["skipped"].get(reason, 0)
    for run in (tier0, row["cold"], row["warm"]):
        assert list(run["parts"]) == list(PARTS)
        assert all(v >= 0 for v in run["parts"].values())
        assert sum(run["parts"].values()) == pytest.approx(run["seconds"])
    assert row["tier0"]["parts"]["t2 spaCy"] == 0
    assert row["cold"]["parts"]["t2 spaCy"] > 0

    cold, warm = row["cold"], row["warm"]
    assert cold["by_tier"]["1"] > 0 and cold["by_tier"]["2"] > 0
    # Everything the cold run could cache (not skipped, not waiting for the LLM) is a hit the second time.
    assert warm["cache_hits"] >= chunks - cold["by_tier"]["0"] - cold["pending_llm"]
    assert warm["cache_hits"] > cold["cache_hits"]
    assert row["model"]["texts"] == 10 and row["model"]["chunks_per_s"] > 0

    results = {
        "machine": {
            "architecture": "x86_64",
            "cpu": "cpu",
            "cores": 2,
            "python": "3.11",
            "os": "Linux",
            "spacy": "3.8",
            "spacy_model": "m",
            "load_average_1m": 0.5,
            "load_average_1m_after": 0.7,
        },
        "batch_documents": 4,
        "analyzed": True,
        "corpora": [row],
        "wall_s": 12.0,
    }
    markdown = extraction_markdown(results)
    for title in (
        "(a) tier 0 alone",
        "(b) tiers 0–2, cold cache",
        "(c) tiers 0–2, warm cache",
        "(d) spaCy model alone",
    ):
        assert f"| tiny ({len(tiny)} docs) | {title}" in markdown
    assert f"dedup rate (cold run) {cold['exact_duplicates'] + cold['near_duplicates']}/{chunks}" in markdown
