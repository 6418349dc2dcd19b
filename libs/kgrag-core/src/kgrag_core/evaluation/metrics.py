"""Retrieval and answer metrics (pure functions over ranked document and chunk lists)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from kgrag_core.answering.quotes import normalise_for_quote


def unique_docs(doc_ids: Sequence[str]) -> list[str]:
    """Documents in the order their first chunk appears."""
    seen: set[str] = set()
    out: list[str] = []
    for doc_id in doc_ids:
        if doc_id not in seen:
            seen.add(doc_id)
            out.append(doc_id)
    return out


def recall_at(ranked_docs: Sequence[str], gold: Mapping[str, int], k: int) -> float:
    if not gold:
        return 0.0
    return len(set(ranked_docs[:k]) & set(gold)) / len(gold)


def all_gold_at(ranked_docs: Sequence[str], gold: Mapping[str, int], k: int) -> float:
    return 1.0 if gold and set(gold) <= set(ranked_docs[:k]) else 0.0


def reciprocal_rank(ranked_docs: Sequence[str], gold: Mapping[str, int]) -> float:
    for position, doc_id in enumerate(ranked_docs, start=1):
        if doc_id in gold:
            return 1.0 / position
    return 0.0


def ndcg_at(ranked_docs: Sequence[str], gold: Mapping[str, int], k: int) -> float:
    """Graded nDCG with gain 2^grade - 1."""
    dcg = sum((2 ** gold.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked_docs[:k]))
    ideal = sorted(gold.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def key_fact_recall(
    ranked_texts: Sequence[str], key_facts: Sequence[str], budget_tokens: int,
    count_tokens: Callable[[str], int],
) -> float:
    """Share of key facts whose exact quote lies inside the first `budget_tokens` the answerer reads.

    A chunk that would overflow the budget is not read at all, as a context builder would drop it.
    """
    if not key_facts:
        return 0.0
    used = 0
    read: list[str] = []
    for text in ranked_texts:
        cost = count_tokens(text)
        if used + cost > budget_tokens:
            break
        used += cost
        read.append(normalise_for_quote(text))
    window = "\n".join(read)
    return sum(1 for fact in key_facts if normalise_for_quote(fact) in window) / len(key_facts)


def sign_test(a: Sequence[float], b: Sequence[float]) -> dict[str, float | int]:
    """Two-sided exact sign test over paired per-question scores (ties dropped)."""
    if len(a) != len(b):
        raise ValueError("paired samples must have equal length")
    wins = sum(1 for x, y in zip(a, b, strict=True) if x > y)
    losses = sum(1 for x, y in zip(a, b, strict=True) if x < y)
    ties = len(a) - wins - losses
    n = wins + losses
    if n == 0:
        return {"wins": 0, "losses": 0, "ties": ties, "p_value": 1.0}
    tail = sum(math.comb(n, i) for i in range(0, min(wins, losses) + 1)) / 2**n
    return {"wins": wins, "losses": losses, "ties": ties, "p_value": min(1.0, 2 * tail)}


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
