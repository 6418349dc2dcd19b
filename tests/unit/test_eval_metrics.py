import math

import pytest

from kgrag_core.evaluation.metrics import (
    all_gold_at,
    key_fact_recall,
    ndcg_at,
    recall_at,
    reciprocal_rank,
    sign_test,
    unique_docs,
)


def test_ranking_metrics() -> None:
    ranked = unique_docs(["x", "a", "x", "b", "c"])
    assert ranked == ["x", "a", "b", "c"]
    gold = {"a": 2, "c": 1}
    assert recall_at(ranked, gold, 2) == 0.5
    assert recall_at(ranked, gold, 10) == 1.0
    assert reciprocal_rank(ranked, gold) == 0.5
    assert all_gold_at(ranked, gold, 3) == 0.0
    assert all_gold_at(ranked, gold, 4) == 1.0
    expected = (3 / math.log2(3) + 1 / math.log2(5)) / (3 / math.log2(2) + 1 / math.log2(3))
    assert ndcg_at(ranked, gold, 10) == pytest.approx(expected)
    assert ndcg_at(["a", "c"], gold, 10) == pytest.approx(1.0)


def test_key_fact_recall_respects_the_budget() -> None:
    texts = ["one two three four", "the key fact is here", "another fact far away"]
    words = lambda t: len(t.split())  # noqa: E731
    assert key_fact_recall(texts, ["key fact is"], 9, words) == 1.0
    assert key_fact_recall(texts, ["key fact is"], 8, words) == 0.0
    assert key_fact_recall(texts, ["key  fact is", "far away"], 100, words) == 1.0
    assert key_fact_recall(texts, [], 100, words) == 0.0


def test_sign_test() -> None:
    result = sign_test([1, 1, 1, 1, 1, 1, 0.5], [0, 0, 0, 0, 0, 0, 0.5])
    assert (result["wins"], result["losses"], result["ties"]) == (6, 0, 1)
    assert result["p_value"] == pytest.approx(2 / 64)
    assert sign_test([1, 0], [0, 1])["p_value"] == 1.0
    assert sign_test([], [])["p_value"] == 1.0
    with pytest.raises(ValueError, match="equal length"):
        sign_test([1], [])
