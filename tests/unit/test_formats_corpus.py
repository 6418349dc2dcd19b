"""The formats corpus and its questions stay true: every key fact stands verbatim in a gold document's
stored text, every gold document exists, and every question is held out (split "test")."""

from __future__ import annotations

import json
from pathlib import Path

from kgrag_adapters.connectors import iter_path
from kgrag_core.documents import SourceDocument

FORMATS = Path(__file__).resolve().parents[2] / "corpora" / "formats"


def test_questions_point_at_real_documents_and_verbatim_facts() -> None:
    docs = {i.doc_id: i.body.decode("utf-8") for i in iter_path(FORMATS / "samples") if isinstance(i, SourceDocument)}
    questions = [json.loads(line) for line in (FORMATS / "questions.jsonl").read_text("utf-8").splitlines()]
    assert len(questions) >= 12 and len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        assert q["split"] == "test", q["id"]
        assert set(q["gold"]) <= set(docs), q["id"]
        for fact in q["key_facts"]:
            assert any(fact in docs[doc_id] for doc_id in q["gold"]), (q["id"], fact)
        assert q["gold"] or q["type"] == "unanswerable", q["id"]
    # Every format answers at least one question.
    gold = {doc_id for q in questions for doc_id in q["gold"]}
    for prefix in (
        "handbook/returns-policy.pdf",
        "handbook/warehouse-safety.docx",
        "web/",
        "meetings/",
        "ticket-",
        "slack/",
    ):
        assert any(doc_id.startswith(prefix) for doc_id in gold), prefix
