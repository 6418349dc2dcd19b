"""The generated multi-hop corpus (corpora/multihop): deterministic, split before tuning, gold hop by hop."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

from kgrag_core.evaluation.questions import parse_questions
from kgrag_runtime.benchmarks.multihop_corpus import KINDS, QUESTION_COUNTS, assign_splits, generate, to_jsonl

CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "multihop"


def _load(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (CORPUS / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_checked_in_files_are_what_the_generator_writes() -> None:
    done = subprocess.run(
        [sys.executable, str(CORPUS / "generate.py"), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_the_same_seed_gives_the_same_corpus_and_another_seed_does_not() -> None:
    first, again, other = generate(), generate(), generate(seed=7)
    assert to_jsonl(first[0]) == to_jsonl(again[0]) and to_jsonl(first[1]) == to_jsonl(again[1])
    assert to_jsonl(first[0]) != to_jsonl(other[0])


def test_the_split_is_stratified_by_kind_and_depends_only_on_the_ids() -> None:
    questions = _load("questions.jsonl")
    assert Counter(str(q["kind"]) for q in questions) == Counter(QUESTION_COUNTS)
    held_out = Counter(str(q["kind"]) for q in questions if q["split"] == "test")
    for kind in KINDS:
        assert held_out[kind] == round(QUESTION_COUNTS[kind] / 3), kind
    shuffled = list(questions)
    random.Random(5).shuffle(shuffled)
    assert assign_splits(shuffled) == {str(q["id"]): str(q["split"]) for q in questions}


def test_every_hop_is_a_distinct_passage_and_the_last_one_states_the_answer() -> None:
    docs = {str(d["id"]): str(d["text"]) for d in _load("documents.jsonl")}
    questions = _load("questions.jsonl")
    parsed = {q.id: q for q in parse_questions((CORPUS / "questions.jsonl").read_text(encoding="utf-8").splitlines())}
    assert len(docs) >= 2000 and len(questions) >= 150
    for q in questions:
        hops = [str(h) for h in q["hops"]]  # type: ignore[attr-defined]
        assert len(set(hops)) == len(hops) and set(hops) == set(parsed[str(q["id"])].gold)
        expected = {"lookup": 1, "bridge": 2, "chain3": 3, "chain4": 4}.get(str(q["kind"]))
        assert expected is None or len(hops) == expected, q["id"]
        if q["answer"] not in ("yes", "no"):
            stating = [h for h, grade in parsed[str(q["id"])].gold.items() if grade == 2]
            assert any(str(q["answer"]) in docs[h] for h in stating), q["id"]
    # A bridge's second passage does not name the person the question starts from (else it is no bridge).
    for q in questions:
        if q["kind"] == "bridge" and q["entity_heavy"] and "employer of" in str(q["question"]):
            person = str(q["question"]).split("employer of ")[1].rstrip("?").split(" based")[0]
            assert person not in docs[str(q["hops"][1])], q["id"]  # type: ignore[index]
