"""The learned router with the real embedding model, on the held-out questions it was never trained or tuned on
(docs/evaluation.md, the dev/test split): it must beat the pattern list there. Prints both accuracies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgrag_core.graph_retrieval.learned_router import LearnedRouter, parse_fitted, parse_router_examples
from kgrag_core.graph_retrieval.router import QuestionKind, QuestionRouter, RuleRouter
from kgrag_runtime.graph import BUNDLED_ROUTER_DEV, BUNDLED_ROUTER_FITTED, BUNDLED_ROUTER_SET, build_router
from kgrag_runtime.router_fit import bundled_dev_lines, refit, same_fit
from kgrag_runtime.settings import KgragSettings

pytestmark = pytest.mark.pipeline
CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "northwind"
EVAL_FILES = ("questions.jsonl", "questions-test.jsonl")
ROUTER_DEV_SET = BUNDLED_ROUTER_SET.with_name("questions-dev.jsonl")


def _typed(split: str) -> list[dict[str, str]]:
    rows = [json.loads(line) for name in EVAL_FILES for line in (CORPUS / name).read_text("utf-8").splitlines() if line]
    return [q for q in rows if q.get("split") == split and q["type"] != "unanswerable"]


def _accuracy(router: QuestionRouter, questions: list[dict[str, str]]) -> float:
    return sum(router.route(q["question"]).kind.value == q["type"] for q in questions) / len(questions)


def test_the_router_set_copies_no_eval_question() -> None:
    examples = parse_router_examples(BUNDLED_ROUTER_SET.read_text("utf-8").splitlines())
    asked = {q["question"].casefold() for split in ("dev", "test") for q in _typed(split)}
    assert len(examples) >= 150
    assert not {e.question.casefold() for e in examples} & asked


def test_the_router_dev_set_is_new_dev_and_covers_every_kind() -> None:
    rows = [json.loads(line) for line in ROUTER_DEV_SET.read_text("utf-8").splitlines() if line]
    every_eval = [
        json.loads(line)["question"].casefold()
        for path in sorted(CORPUS.glob("questions*.jsonl"))
        for line in path.read_text("utf-8").splitlines()
        if line
    ]
    trained = {e.question.casefold() for e in parse_router_examples(BUNDLED_ROUTER_SET.read_text("utf-8").splitlines())}
    asked = [r["question"].casefold() for r in rows]
    assert len(rows) >= 50 and len(set(asked)) == len(asked)
    assert {r["split"] for r in rows} == {"dev"}
    assert {r["kind"] for r in rows} == {k.value for k in QuestionKind} | {"unanswerable"}
    assert not set(asked) & (set(every_eval) | trained)


def test_the_bundled_dev_copy_is_exactly_the_dev_split_and_holds_no_test_question() -> None:
    assert BUNDLED_ROUTER_DEV.read_text("utf-8") == bundled_dev_lines()
    copied = {json.loads(line)["question"] for line in BUNDLED_ROUTER_DEV.read_text("utf-8").splitlines() if line}
    assert copied == {q["question"] for q in _typed("dev") if not q["id"].startswith("t")}
    assert not copied & {q["question"] for q in _typed("test")}


def test_the_shipped_fit_is_what_the_bundled_sets_fit_with_the_real_model(embedder) -> None:  # type: ignore[no-untyped-def]
    shipped = parse_fitted(BUNDLED_ROUTER_FITTED.read_text("utf-8"))
    assert same_fit(shipped, refit(embedder))
    built = build_router(KgragSettings(), embedder)  # the default router, with the bundled sets
    assert isinstance(built, LearnedRouter) and built.fitted is not None and built.version == shipped.version


def test_the_learned_router_beats_the_rules_on_the_test_split(embedder, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    learned = build_router(KgragSettings(router="learned"), embedder)
    assert isinstance(learned, LearnedRouter)
    rules = RuleRouter()
    test, dev = _typed("test"), _typed("dev")
    scores = {name: (_accuracy(r, dev), _accuracy(r, test)) for name, r in (("rules", rules), ("learned", learned))}
    with capsys.disabled():
        for name, (on_dev, on_test) in scores.items():
            print(
                f"\nrouter {name}: dev {on_dev:.3f} ({len(dev)}, learned: in-sample), test {on_test:.3f} ({len(test)})"
            )
    assert len(test) >= 50
    assert scores["learned"][1] > scores["rules"][1]
    assert scores["learned"][1] >= 0.75
