"""The bundled Northwind corpus end to end: ingest, evaluate, and guard quality and access control.

The thresholds are floors a little under the current results (docs/evaluation.md), so a regression in
chunking, fusion or answering fails here rather than going unnoticed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgrag_adapters.connectors import iter_path
from kgrag_core.acl import readable_classes
from kgrag_core.evaluation.questions import parse_questions
from kgrag_core.ingest import IngestStatus
from kgrag_runtime.app import KgragApp
from kgrag_runtime.evaluation.runner import run_evaluation
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded

CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "northwind"


@pytest.fixture(scope="module")
def bundled_questions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 58 bundled questions the retrieval floors below were measured on: `d01`, ... were added to the file
    later for tuning answers (docs/evaluation.md, the dev/test split) and move none of these floors' meaning."""
    lines = (CORPUS / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if line.strip() and not json.loads(line)["id"].startswith("d")]
    assert len(kept) == 58
    path = tmp_path_factory.mktemp("bundled-questions") / "questions.jsonl"
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def northwind(tmp_path_factory: pytest.TempPathFactory, pg_server_dsn: str, embedder) -> Iterator[KgragApp]:  # type: ignore[no-untyped-def]
    import psycopg
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS kgrag_northwind WITH (FORCE)")
        conn.execute("CREATE DATABASE kgrag_northwind")
    # The graph's time budgets are widened, as in northwind_read below: on a loaded machine (load 13-17 on
    # 2 cores) one question ran over the 1 s layer budget and degraded, which `degraded == 0` must not see.
    settings = KgragSettings(
        data_dir=tmp_path_factory.mktemp("northwind"),
        pg_dsn=make_conninfo(pg_server_dsn, dbname="kgrag_northwind"),
        graph_expansion_budget_s=10.0,
        graph_timeout_s=30.0,
    )
    with open_embedded(settings, embedder=embedder) as kg:
        outcomes = kg.ingest(iter_path(CORPUS / "documents.jsonl"))
        assert {o.status for o in outcomes} == {IngestStatus.INDEXED}
        yield kg


def test_every_hit_for_every_question_is_readable_by_its_asker(northwind: KgragApp) -> None:
    questions = parse_questions((CORPUS / "questions.jsonl").read_text(encoding="utf-8").splitlines())
    classes = northwind.searcher.acls.acl_classes()
    for q in questions:
        allowed = set(readable_classes(classes, q.caller))
        for hit in northwind.search(q.question, q.caller, top_k=20).hits:
            chunk = northwind.searcher.documents.get_chunks([hit.chunk_id])[hit.chunk_id]
            assert chunk.acl_class_id in allowed, (q.id, hit.doc_id)
        if q.acl_denied:
            answer = northwind.ask(q.question, q.caller)
            cited = {c["doc_id"] for c in answer["citations"]}  # type: ignore[union-attr]
            assert all(chunk_doc_readable(northwind, d, allowed) for d in cited), q.id


def chunk_doc_readable(kg: KgragApp, doc_id: str, allowed: set[str]) -> bool:
    doc = kg.searcher.documents.get_document(doc_id)
    return doc is not None and doc.acl_class_id in allowed


def test_quality_floors_per_question_type(northwind: KgragApp, bundled_questions: Path) -> None:
    report = run_evaluation(northwind, bundled_questions, budget_tokens=2000, progress_console=None)
    per_type = report["per_type"]
    hybrid, bm25 = per_type["hybrid"], per_type["bm25"]  # type: ignore[index]
    assert hybrid["lookup"]["recall@10"] >= 0.9
    assert hybrid["ALL"]["ndcg@10"] >= bm25["ALL"]["ndcg@10"]
    assert hybrid["ALL"]["key_facts@2000"] >= 0.8
    # 0.778 since answers never quote a heading or title as a sentence: three answers that cited a gold
    # document only by quoting its title now abstain (q22, q44, the Beacon question; docs/getting-started.md).
    assert hybrid["ALL"]["cites_gold"] >= 0.75
    assert hybrid["unanswerable"]["abstained"] >= 0.6
    assert hybrid["temporal"]["recall@20"] >= 0.9
    sign = report["sign_tests"]["hybrid vs bm25 (nDCG@10)"]  # type: ignore[index]
    assert sign["wins"] > sign["losses"]
    # The graph layer must never cost quality: lookups go to plain hybrid, and nothing degrades.
    graph = per_type["hybrid+graph"]  # type: ignore[index]
    assert {k: v for k, v in graph["lookup"].items() if k in hybrid["lookup"]} == hybrid["lookup"]
    assert graph["lookup"]["graph_used"] == 0.0
    assert graph["ALL"]["key_facts@2000"] >= hybrid["ALL"]["key_facts@2000"]
    layered = report["sign_tests"]["hybrid+graph vs hybrid (ndcg@10)"]  # type: ignore[index]
    assert layered["losses"] <= layered["wins"]
    assert report["graph"]["degraded"] == 0  # type: ignore[index]
    assert report["graph"]["router_accuracy"] >= 0.8  # type: ignore[index]


@pytest.fixture(scope="module")
def northwind_read(tmp_path_factory: pytest.TempPathFactory, pg_server_dsn: str, embedder) -> Iterator[KgragApp]:  # type: ignore[no-untyped-def]
    """The corpus with a prose-level graph: tier 3 reads every chunk from the bundled reply book (a stand-in
    for a model, corpora/northwind/extraction/README.md). The graph's time budgets are widened so a busy
    machine cannot truncate a walk and make the floors below depend on load."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS kgrag_northwind_read WITH (FORCE)")
        conn.execute("CREATE DATABASE kgrag_northwind_read")
    settings = KgragSettings(
        data_dir=tmp_path_factory.mktemp("northwind-read"),
        pg_dsn=make_conninfo(pg_server_dsn, dbname="kgrag_northwind_read"),
        extraction_reply_book=CORPUS / "extraction" / "corpus_replies.jsonl",
        extraction_priority_sources=["*"],
        graph_expansion_budget_s=10.0,
        graph_timeout_s=30.0,
        # The floors below are about what the graph layer retrieves, so both sides answer with the same
        # sentence picker; the composed answerer (which reads the graph's facts too) is compared with it by the
        # answer metrics (docs/evaluation.md), not here.
        answer_style="sentences",
    )
    with open_embedded(settings, embedder=embedder) as kg:
        outcomes = kg.ingest(iter_path(CORPUS / "documents.jsonl"))
        assert {o.status for o in outcomes} == {IngestStatus.INDEXED}
        yield kg


def test_on_a_prose_level_graph_the_layer_wins_multi_hop_and_temporal_and_never_costs_lookups(
    northwind_read: KgragApp, bundled_questions: Path
) -> None:
    report = run_evaluation(northwind_read, bundled_questions, budget_tokens=2000, progress_console=None)
    per_type = report["per_type"]
    hybrid, graph = per_type["hybrid"], per_type["hybrid+graph"]  # type: ignore[index]
    assert {k: v for k, v in graph["lookup"].items() if k in hybrid["lookup"]} == hybrid["lookup"]
    by_type = report["graph"]["vs_hybrid_by_type"]  # type: ignore[index]
    multi_hop, temporal = by_type["multi_hop"], by_type["temporal"]
    # Floors a little under the measured multi-hop 7 / 1 / 0 (nDCG@10), 4 / 0 / 4 (recall@10), 1 / 0 / 7 (key
    # facts) and temporal 2 / 0 / 5 (current_first).
    assert multi_hop["ndcg@10"]["wins"] >= 5 and multi_hop["ndcg@10"]["losses"] <= 2
    assert multi_hop["recall@10"]["wins"] >= 3 and multi_hop["recall@10"]["losses"] == 0
    assert multi_hop["key_facts@2000"]["losses"] == 0
    current = report["sign_tests"]["hybrid+graph vs hybrid (current_first, temporal)"]  # type: ignore[index]
    assert current["wins"] >= 1 and current["losses"] == 0
    assert temporal["ndcg@10"]["wins"] >= temporal["ndcg@10"]["losses"]
    assert graph["temporal"]["current_value_first"] >= hybrid["temporal"]["current_value_first"]
    for metric in ("key_facts@2000", "values@2000", "cites_gold", "answered"):
        assert graph["ALL"][metric] >= hybrid["ALL"][metric]
    overall = report["sign_tests"]["hybrid+graph vs hybrid (ndcg@10)"]  # type: ignore[index]
    assert overall["wins"] > 2 * overall["losses"]
    assert report["graph"]["degraded"] == 0  # type: ignore[index]
