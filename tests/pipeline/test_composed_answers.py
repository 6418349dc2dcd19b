"""Composed answers end to end on the embedded runtime: the demo's "Did Beacon move to CockroachDB?" on the
Beacon documents of the bundled corpus, with tier 3 reading the bundled reply book, and a restricted document
whose fact must never reach an outsider's answer or conflicts (a reader who may read it sees both).

Before facts reached answers, the answer to the demo question was the plan's title and one of its open
questions, although the graph knows the migration was a plan that was cancelled.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgrag_adapters.connectors import iter_path
from kgrag_core.acl import Caller
from kgrag_core.ingest import IngestStatus
from kgrag_runtime.app import KgragApp
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded

pytestmark = pytest.mark.pipeline

CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "northwind"
BEACON_DOCS = (
    "wiki-beacon-overview",
    "meeting-arch-review-2023-05",
    "wiki-beacon-lodestar-migration-plan",
    "meeting-arch-review-2024-02",
    "wiki-beacon-lodestar-decision-record",
    "wiki-beacon-postgres16-upgrade",
    "meeting-all-hands-2025-01",
)
# Finance-only, written the same day as the January 2025 all-hands that says PostgreSQL 16: a reader of both
# sees two sources disagree; an engineer must see neither the value nor the disagreement.
SECRET_QUOTE = "Beacon runs on Oracle 23 under the January licence deal."
SECRET_DOC = {
    "id": "finance-beacon-hosting-2025-01",
    "title": "Beacon hosting costs — January 2025",
    "source": "finance",
    "uri": "https://finance.northwind.example/beacon-hosting",
    "published_at": "2025-01-30",
    "acl": {"groups": ["finance"], "users": []},
    "text": f"# Beacon hosting costs — January 2025\n\n{SECRET_QUOTE} The contract is reviewed yearly.\n",
}
SECRET_REPLY = {
    "doc_id": SECRET_DOC["id"],
    "reply": {
        "entities": [{"name": "Beacon", "type": "System", "quote": SECRET_QUOTE}],
        "relations": [],
        "claims": [
            {
                "entity": "Beacon",
                "entity_type": "System",
                "attribute": "database",
                "value": "Oracle 23",
                "quote": SECRET_QUOTE,
                "polarity": "positive",
                "modality": "fact",
                "valid_from": None,
                "valid_to": None,
                "confidence": 0.9,
            }
        ],
    },
}
ENGINEER = Caller(user="sam.ortiz", groups=("engineering",))
FINANCE_ENGINEER = Caller(user="fin.eng", groups=("engineering", "finance"))


@pytest.fixture(scope="module")
def beacon(tmp_path_factory: pytest.TempPathFactory, pg_server_dsn: str, embedder) -> Iterator[KgragApp]:  # type: ignore[no-untyped-def]
    import psycopg
    from psycopg.conninfo import make_conninfo

    folder = tmp_path_factory.mktemp("beacon")
    docs = [json.loads(line) for line in (CORPUS / "documents.jsonl").read_text(encoding="utf-8").splitlines()]
    chosen = [d for d in docs if d["id"] in BEACON_DOCS] + [SECRET_DOC]
    (folder / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in chosen), encoding="utf-8")
    book = (CORPUS / "extraction" / "corpus_replies.jsonl").read_text(encoding="utf-8").splitlines()
    lines = [line for line in book if json.loads(line)["doc_id"] in BEACON_DOCS] + [json.dumps(SECRET_REPLY)]
    (folder / "replies.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS kgrag_d1_beacon WITH (FORCE)")
        conn.execute("CREATE DATABASE kgrag_d1_beacon")
    settings = KgragSettings(
        data_dir=folder / "index",
        pg_dsn=make_conninfo(pg_server_dsn, dbname="kgrag_d1_beacon"),
        extraction_reply_book=folder / "replies.jsonl",
        extraction_priority_sources=["*"],
        # Wide budgets: a loaded machine must not truncate the walk and change what the answer can say.
        graph_expansion_budget_s=10.0,
        graph_timeout_s=30.0,
    )
    with open_embedded(settings, embedder=embedder) as kg:
        outcomes = kg.ingest(iter_path(folder / "docs.jsonl"))
        assert {o.status for o in outcomes} == {IngestStatus.INDEXED}
        yield kg


def _bodies() -> dict[str, bytes]:
    docs = [json.loads(line) for line in (CORPUS / "documents.jsonl").read_text(encoding="utf-8").splitlines()]
    return {d["id"]: d["text"].encode("utf-8") for d in [*docs, SECRET_DOC]}


def _assert_exact_bytes(answer: dict[str, object]) -> None:
    bodies = _bodies()
    citations = answer["citations"]
    assert isinstance(citations, list) and citations
    for c in citations:
        start, end = c["span"]
        assert bodies[c["doc_id"]][start:end].decode("utf-8") == c["quote"], c


@pytest.mark.parametrize("graph", [None, True], ids=["default", "graph"])
def test_did_beacon_move_to_cockroachdb_says_no_and_reports_the_plan_as_a_plan(
    beacon: KgragApp, graph: bool | None
) -> None:
    answer = beacon.ask("Did Beacon move to CockroachDB?", ENGINEER, graph=graph)
    text = str(answer["answer"])
    no = "No: Project Lodestar, the planned migration of Beacon from PostgreSQL to CockroachDB, is cancelled."
    assert text.startswith(no), text
    assert "“" not in text  # titles are on the citations, not inlined
    first = answer["citations"][0]  # type: ignore[index]
    assert first["title"] == "Decision record: Project Lodestar cancelled", first
    assert "describes a plan" in text and "none of the documents says it happened" in text
    quotes = [c["quote"] for c in answer["citations"]]  # type: ignore[union-attr]
    assert "Project Lodestar: migrating Beacon to CockroachDB" not in quotes  # the title is no longer an answer
    assert all(not q.endswith("?") for q in quotes)
    assert answer["confidence"] in ("HIGH", "MEDIUM", "LOW") and answer["conflicts"] == []
    _assert_exact_bytes(answer)


def test_the_sentences_style_still_answers_as_before(beacon: KgragApp) -> None:
    composed = beacon.ask("Did Beacon move to CockroachDB?", ENGINEER)
    sentences = beacon.ask("Did Beacon move to CockroachDB?", ENGINEER, answer_style="sentences")
    assert sentences["mode"] == "extractive" and sentences["facts"] == []
    assert not str(sentences["answer"]).startswith("No:") and sentences["answer"] != composed["answer"]


@pytest.mark.parametrize("graph", [None, True], ids=["default", "graph"])
def test_a_restricted_fact_never_reaches_an_outsider_and_its_reader_sees_the_conflict(
    beacon: KgragApp, graph: bool | None
) -> None:
    question = "What database does Beacon run on?"
    insider = beacon.ask(question, FINANCE_ENGINEER, graph=graph)
    (conflict,) = insider["conflicts"]  # type: ignore[misc]
    values = {v["value"]: v for v in conflict["values"]}
    assert set(values) == {"PostgreSQL 16", "Oracle 23"}
    assert [s["doc_id"] for s in values["Oracle 23"]["sources"]] == [SECRET_DOC["id"]]
    assert "disagree" in str(insider["answer"]) and "Oracle 23" in str(insider["answer"])
    assert insider["confidence"] != "HIGH"
    _assert_exact_bytes(insider)

    outsider = beacon.ask(question, ENGINEER, graph=graph)
    assert "Oracle" not in json.dumps(outsider)  # not in the answer, its facts, conflicts or citations
    assert outsider["conflicts"] == []
    assert str(outsider["answer"]).startswith("Beacon's database is PostgreSQL 16, since 19 October 2024")
    assert "Until 19 October 2024 it was PostgreSQL 12." in str(outsider["answer"])
    _assert_exact_bytes(outsider)
