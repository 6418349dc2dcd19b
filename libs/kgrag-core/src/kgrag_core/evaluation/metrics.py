"""Retrieval and answer metrics (pure functions over ranked document and chunk lists)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import date

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
    ranked_texts: Sequence[str],
    key_facts: Sequence[str],
    budget_tokens: int,
    count_tokens: Callable[[str], int],
) -> float:
    """Share of key facts whose exact quote lies inside the first `budget_tokens` the answerer reads.

    A chunk that would overflow the budget is not read at all, as a context builder would drop it.
    """
    if not key_facts:
        return 0.0
    return key_facts_found(read_in_budget(ranked_texts, budget_tokens, count_tokens), key_facts)


def read_in_budget(ranked_texts: Sequence[str], budget_tokens: int, count_tokens: Callable[[str], int]) -> list[str]:
    """The texts an answerer reads within the budget, in order, stopping at the first that does not fit."""
    used = 0
    read: list[str] = []
    for text in ranked_texts:
        cost = count_tokens(text)
        if used + cost > budget_tokens:
            break
        used += cost
        read.append(text)
    return read


def key_facts_found(read_texts: Sequence[str], key_facts: Sequence[str]) -> float:
    """Share of key facts whose exact quote (normalised as quote checks are) lies in the texts read, in order."""
    if not key_facts:
        return 0.0
    window = "\n".join(normalise_for_quote(t) for t in read_texts)
    return sum(1 for fact in key_facts if normalise_for_quote(fact) in window) / len(key_facts)


# "24,500", "24 500" and "24500" are one number to a reader; lines carry normalised values, documents
# carry them as written.
_THOUSANDS = re.compile(r"(?<=\d)[,\u00a0\u202f ](?=\d{3}(?!\d))")


def _for_values(text: str) -> str:
    return _THOUSANDS.sub("", normalise_for_quote(text).casefold())


def _first_offset(window: str, value: str) -> int | None:
    """Where `value` first occurs as a whole token sequence ("2.1" is not found in "2.15")."""
    needle = _for_values(value)
    if not needle:
        return None
    found = re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", window)
    return found.start() if found else None


def value_in(text: str, value: str) -> bool:
    """Whether `value` occurs in `text` as whole tokens (case-folded, thousands separators ignored)."""
    return _first_offset(_for_values(text), value) is not None


def values_found(read_texts: Sequence[str], values: Sequence[str]) -> float:
    """Share of the answer's values ("Zoë Müller", "24,500") that occur in the texts read."""
    if not values:
        return 0.0
    window = "\n".join(_for_values(t) for t in read_texts)
    return sum(1 for v in values if _first_offset(window, v) is not None) / len(values)


def current_value_first(read_texts: Sequence[str], current: Sequence[str], outdated: Sequence[str]) -> float:
    """1 if, reading in order, a current value is met before any outdated one (and is met at all), else 0."""
    window = "\n".join(_for_values(t) for t in read_texts)
    first_current = min((o for v in current if (o := _first_offset(window, v)) is not None), default=None)
    if first_current is None:
        return 0.0
    first_outdated = min((o for v in outdated if (o := _first_offset(window, v)) is not None), default=None)
    return 1.0 if first_outdated is None or first_current < first_outdated else 0.0


def temporal_gold(
    gold: Mapping[str, int], dates: Mapping[str, date | None]
) -> tuple[frozenset[str], str, frozenset[str]] | None:
    """Split a temporal question's gold into (current documents, the latest one, outdated documents).

    Current: the grade-2 documents (they hold the value asked for). Latest: the newest of them. Outdated: the
    grade-1 documents dated before the latest one (an older value, the distractor). None when the split says
    nothing: no dated grade-2 document, or no older grade-1 document to rank against.
    """
    current = {d: dates.get(d) for d, grade in gold.items() if grade >= 2}
    dated = {d: when for d, when in current.items() if when is not None}
    if not dated:
        return None
    latest = max(dated, key=lambda d: (dated[d], d))
    newest = dated[latest]
    outdated = frozenset(
        d for d, grade in gold.items() if grade == 1 and (when := dates.get(d)) is not None and when < newest
    )
    if not outdated:
        return None
    return frozenset(current), latest, outdated


def ranks_before(ranked_docs: Sequence[str], first: Collection[str], later: Collection[str]) -> float:
    """1 if the best-ranked of `first` comes before every document of `later` that is ranked at all, else 0.

    0 when no document of `first` is ranked: a current value that never reaches the reader loses to any
    outdated one, ranked or not.
    """
    position = {d: i for i, d in enumerate(ranked_docs)}
    best = min((position[d] for d in first if d in position), default=None)
    if best is None:
        return 0.0
    return 1.0 if all(position.get(d, len(ranked_docs)) > best for d in later) else 0.0


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
