"""Theme recall, document recall and the unreadable-theme check, and the bundled global questions' file."""

from __future__ import annotations

import json
from pathlib import Path

from kgrag_core.evaluation.global_metrics import (
    GoldTheme,
    document_recall,
    parse_gold_themes,
    theme_recall,
    unreadable_themes,
    visible_themes,
)
from kgrag_core.evaluation.questions import parse_questions

CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "northwind"
THEMES = (GoldTheme("certs", ("inc-a", "review")), GoldTheme("config", ("inc-b",)), GoldTheme("vendor", ("secret",)))


def test_theme_recall_counts_a_theme_once_any_supporting_document_is_cited() -> None:
    assert theme_recall(THEMES, {"review", "unrelated"}) == 1 / 3
    assert theme_recall(THEMES, {"inc-a", "inc-b", "secret"}) == 1.0
    assert theme_recall(THEMES, set()) == 0.0
    assert theme_recall((), {"inc-a"}) == 0.0


def test_document_recall_is_over_every_supporting_document() -> None:
    assert document_recall(THEMES, {"inc-a", "inc-b"}) == 2 / 4


def test_an_outsiders_gold_keeps_only_themes_it_could_know() -> None:
    mine = visible_themes(THEMES, {"inc-a", "inc-b"})
    assert [t.theme for t in mine] == ["certs", "config"]
    assert mine[0].docs == ("inc-a",)
    assert unreadable_themes([{"inc-a"}, {"secret"}], {"inc-a", "inc-b"}) == 1
    assert unreadable_themes([{"inc-a"}, {"inc-b", "secret"}], {"inc-a", "inc-b"}) == 0


def test_bundled_global_questions_are_held_out_and_their_themes_name_real_documents() -> None:
    lines = (CORPUS / "questions-global.jsonl").read_text(encoding="utf-8").splitlines()
    questions = parse_questions(lines)
    themes = parse_gold_themes(lines)
    docs = {json.loads(line)["id"] for line in (CORPUS / "documents.jsonl").read_text(encoding="utf-8").splitlines()}
    assert len(questions) >= 12
    assert all(q.type == "global" and q.split == "test" for q in questions)
    assert set(themes) == {q.id for q in questions}
    for q in questions:
        assert len(themes[q.id]) >= 3
        supporting = {d for t in themes[q.id] for d in t.docs}
        assert supporting <= docs
        assert supporting == set(q.gold)
