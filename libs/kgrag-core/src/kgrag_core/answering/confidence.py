"""Answer confidence from the evidence: how well each sentence is supported, whether sources agree, whether
they conflict, and how much of the context had to be left out. One rule for every answerer.

The grade is the weakest sentence's support blended with the mean (one unsupported sentence drags the
answer down, but not to the floor when the rest is solid), lowered for conflicts and truncation and raised a
little when independent sources agree.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgrag_core.text_terms import content_terms

HIGH = 0.8
MEDIUM = 0.55
_CONFLICT_PENALTY = 0.25
_TRUNCATION_PENALTY = 0.1
_AGREEMENT_BONUS = 0.1


def grade(supports: Sequence[float], *, conflicts: int = 0, truncated: bool = False, corroborated: bool = False) -> str:
    """HIGH | MEDIUM | LOW. `supports`: one value in [0, 1] per answer sentence (none: LOW)."""
    if not supports:
        return "LOW"
    clipped = [min(1.0, max(0.0, s)) for s in supports]
    score = 0.5 * min(clipped) + 0.5 * sum(clipped) / len(clipped)
    if conflicts:
        score -= _CONFLICT_PENALTY
    if truncated:
        score -= _TRUNCATION_PENALTY
    if corroborated:
        score += _AGREEMENT_BONUS
    return "HIGH" if score >= HIGH else "MEDIUM" if score >= MEDIUM else "LOW"


def lexical_support(sentence: str, quotes: Sequence[str]) -> float:
    """Share of the sentence's content terms found in its quotes: a sentence that only paraphrases its quote
    scores lower than one that restates it, and one that adds names or numbers of its own lower still."""
    terms = set(content_terms(sentence))
    if not terms:
        return 0.0
    quoted = set().union(*(set(content_terms(q)) for q in quotes)) if quotes else set()
    return len(terms & quoted) / len(terms)
