"""The dev/test split of the bundled questions and the held-out question file (docs/evaluation.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.evaluation.questions import parse_questions

CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "northwind"


def _load(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (CORPUS / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def _passes_the_corpus_checker(name: str) -> None:
    done = subprocess.run(
        [sys.executable, str(CORPUS / "check_corpus.py"), "--questions", str(CORPUS / name), "--min-per-type", "0"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout


def test_the_bundled_split_is_the_scripted_assignment() -> None:
    done = subprocess.run(
        [sys.executable, str(CORPUS / "split_questions.py"), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_the_split_is_stratified_and_every_type_has_test_questions() -> None:
    everything = _load("questions.jsonl")
    # Questions written later for tuning (d01, ...) are all dev and outside the stratified draw.
    written_for_dev = [q for q in everything if str(q["id"]).startswith("d")]
    assert len(written_for_dev) >= 8 and {q["split"] for q in written_for_dev} == {"dev"}
    bundled = [q for q in everything if q not in written_for_dev]
    by_type = Counter(str(q["type"]) for q in bundled)
    held_out = Counter(str(q["type"]) for q in bundled if q["split"] == "test")
    for qtype, n in by_type.items():
        assert held_out[qtype] == round(n / 3), qtype


def test_the_held_out_file_is_all_test_with_new_ids_and_the_design_examples() -> None:
    bundled, extra = _load("questions.jsonl"), _load("questions-test.jsonl")
    assert len(extra) >= 40
    assert {q["split"] for q in extra} == {"test"}
    assert not {q["id"] for q in extra} & {q["id"] for q in bundled}
    assert not {q["question"] for q in extra} & {q["question"] for q in bundled}
    asked = {str(q["question"]) for q in extra}
    assert "Which customers are affected by vendors that had a security incident in 2024?" in asked
    assert "Which vendors supply the customers that use Atlas?" in asked
    parsed = parse_questions((CORPUS / "questions-test.jsonl").read_text(encoding="utf-8").splitlines())
    assert any(q.conflict_values for q in parsed) and any(q.plan_values for q in parsed)


def test_the_held_out_file_passes_the_corpus_checker() -> None:
    _passes_the_corpus_checker("questions-test.jsonl")


def test_the_conflict_set_is_dev_only_labelled_and_passes_the_corpus_checker() -> None:
    """Issue 11's dev conflict set: tuned on, so every question is dev, each names two competing values, and
    none repeats a test question."""
    conflicts = _load("questions-conflicts.jsonl")
    assert len(conflicts) >= 6 and {q["split"] for q in conflicts} == {"dev"}
    parsed = parse_questions((CORPUS / "questions-conflicts.jsonl").read_text(encoding="utf-8").splitlines())
    assert all(len(q.conflict_values) >= 2 for q in parsed)
    tests = _load("questions-test.jsonl") + [q for q in _load("questions.jsonl") if q["split"] == "test"]
    assert not {q["question"] for q in conflicts} & {q["question"] for q in tests}
    _passes_the_corpus_checker("questions-conflicts.jsonl")


def test_the_answer_dev_set_is_dev_only_varied_and_passes_the_corpus_checker() -> None:
    """Issue 11's second dev set (tuned on): current values asked many ways, plans asked as if done, negations and
    a repost that disagrees; all dev, none repeats a test or an older dev question."""
    extra = _load("questions-answers-dev.jsonl")
    assert len(extra) >= 24 and {q["split"] for q in extra} == {"dev"}
    parsed = parse_questions((CORPUS / "questions-answers-dev.jsonl").read_text(encoding="utf-8").splitlines())
    assert sum(1 for q in parsed if q.outdated_values) >= 10 and sum(1 for q in parsed if q.plan_values) >= 5
    assert sum(1 for q in parsed if q.conflict_values) >= 2
    older = _load("questions-test.jsonl") + _load("questions.jsonl") + _load("questions-conflicts.jsonl")
    assert not {q["question"] for q in extra} & {q["question"] for q in older}
    assert not {q["id"] for q in extra} & {q["id"] for q in older}
    _passes_the_corpus_checker("questions-answers-dev.jsonl")


@pytest.mark.parametrize(
    ("extra", "message"),
    [({"split": "train"}, "unknown split"), ({"conflict_values": ["Lars"]}, "at least two")],
)
def test_a_bad_split_or_a_one_sided_conflict_is_a_missing_field(extra: dict[str, object], message: str) -> None:
    line = json.dumps({"id": "x", "question": "q?", "type": "lookup", **extra})
    with pytest.raises(KgragError) as caught:
        parse_questions([line])
    assert caught.value.code is ErrorCode.MISSING_FIELD and message in str(caught.value)


def test_the_entity_dev_set_is_new_dev_entity_questions_passing_the_corpus_checker() -> None:
    """Issue 11's entity retrieval dev set: tuned on, so all dev; new questions, none repeating another file's."""
    entity = _load("questions-entity-dev.jsonl")
    assert len(entity) >= 20 and {q["split"] for q in entity} == {"dev"} and {q["type"] for q in entity} == {"entity"}
    others = [q for path in sorted(CORPUS.glob("questions*.jsonl")) if path.name != "questions-entity-dev.jsonl"
              for q in _load(path.name)]  # fmt: skip
    assert not {str(q["question"]).casefold() for q in entity} & {str(q["question"]).casefold() for q in others}
    assert not {q["id"] for q in entity} & {q["id"] for q in others}
    _passes_the_corpus_checker("questions-entity-dev.jsonl")
