"""Answer metrics: is what an answer says right, current, not a plan passed off as done, and backed by its quotes?

Pure functions over one question's gold (`EvalQuestion`) and one answer as the API returns it (`sentences`
with their citation ids, `citations` with their quotes). The checks are deliberately simple and visible,
so that a reader can tell why a number moved:

- a value is "in" a text as whole tokens, case-folded, thousands separators ignored (as `values@B`);
- an outdated value is presented as current when a sentence names it with no word that places it in the
  past ("until", "previously", "from … to", "replaced") and without the current value beside it;
- a plan is presented as done when a sentence names it with no word of planning, hedging or negation;
- a sentence is supported when the verifier would keep it (`answering.verification.check_sentence`, the one
  support check): every date, number and name in it occurs in its quotes, or in a graph fact or a source's
  title and date whose chunk it cites, with the polarity and modality of its quotes;
- a citation is precise when it alone supports its sentence (the sentence's only citation), or holds at
  least one of the sentence's dates, numbers or names with the sentence's polarity (one of several).

The support facts are the answer path's own (`kgrag_runtime.answer_flow.supporting_facts`), passed in by
the caller; without them a sentence has only its quotes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgrag_core.answering.verification import SupportingFact, check_sentence, supports_some
from kgrag_core.evaluation.metrics import value_in
from kgrag_core.evaluation.questions import EvalQuestion

_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|cannot|can't|didn't|doesn't|isn't|wasn't|weren't|won't|without|neither|nor)\b",
    re.IGNORECASE,
)
_HISTORY = re.compile(
    r"\b(?:until|previously|previous|was|were|before|earlier|formerly|used\s+to|replac\w*|supersed\w*|old|from|"
    r"instead\s+of|no\s+longer|chang\w*|lowered|reduced|raised|rather\s+than|up\s+from|down\s+from|then)\b",
    re.IGNORECASE,
)
_PLANNED = re.compile(
    r"\b(?:plan\w*|propos\w*|draft|would|will|might|may|could|intend\w*|consider\w*|cancel\w*|postpon\w*|"
    r"shelv\w*|dropped|abandon\w*|reject\w*|instead|rather|rfc|idea|hope\w*|think|expect\w*|estimat\w*|if|pilot\s+that|"
    r"exploratory|discussed|studied|request\w*|wanted|wish\w*|asked\s+for|possibl[ey]|potential(?:ly)?)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class _Sentence:
    text: str
    quotes: tuple[str, ...]
    facts: tuple[tuple[str, ...], ...]  # per quote, the support facts resting on its chunk


def _sentences(answer: Mapping[str, object], facts: Sequence[SupportingFact]) -> list[_Sentence]:
    cited: dict[int, tuple[str, tuple[str, ...]]] = {}
    for c in answer.get("citations") or []:  # type: ignore[attr-defined]
        if isinstance(c, Mapping) and isinstance(c.get("id"), int):
            chunk = str(c.get("chunk_id") or "")
            cited[int(c["id"])] = (str(c.get("quote") or ""), tuple(f.text for f in facts if chunk in f.chunk_ids))
    out: list[_Sentence] = []
    for s in answer.get("sentences") or []:  # type: ignore[attr-defined]
        if not isinstance(s, Mapping):
            continue
        pairs = [cited[i] for i in s.get("citations") or [] if isinstance(i, int) and i in cited]
        out.append(_Sentence(str(s.get("text") or ""), tuple(q for q, _ in pairs), tuple(f for _, f in pairs)))
    return out


def _negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


def sentence_supported(sentence: str, quotes: Sequence[str], facts: Sequence[str] = ()) -> bool:
    """The verifier's verdict: the eval and the answer path judge support with one piece of code."""
    return bool(quotes) and check_sentence(sentence, quotes, facts) is None


def citation_precise(sentence: str, quote: str, facts: Sequence[str] = (), *, only_citation: bool) -> bool:
    if only_citation:
        return check_sentence(sentence, [quote], facts) is None
    return supports_some(sentence, [quote], facts)


def _answer_text(sentences: Sequence[_Sentence]) -> str:
    return "\n".join(s.text for s in sentences)


def outdated_as_current(sentences: Sequence[_Sentence], current: Sequence[str], outdated: Sequence[str]) -> bool:
    for s in sentences:
        if not any(value_in(s.text, v) for v in outdated):
            continue
        if _HISTORY.search(s.text) or any(value_in(s.text, v) for v in current):
            continue
        return True
    return False


def plan_as_done(sentences: Sequence[_Sentence], plans: Sequence[str]) -> bool:
    return any(
        any(value_in(s.text, p) for p in plans) and not _PLANNED.search(s.text) and not _negated(s.text)
        for s in sentences
    )


def answer_metrics(
    q: EvalQuestion, answer: Mapping[str, object], facts: Sequence[SupportingFact] = ()
) -> dict[str, float]:
    """The answer metrics of one question (docs/evaluation.md, answer metrics); only those its gold allows.
    `facts` are what may back a sentence besides its quotes, as the verifier is given them."""
    answered = bool(answer.get("answered"))
    if not q.answerable:
        return {"abstained": 0.0 if answered else 1.0}
    sentences = _sentences(answer, facts) if answered else []
    text = _answer_text(sentences)
    out: dict[str, float] = {"abstained": 0.0 if answered else 1.0}
    checks: list[bool] = [answered]
    if q.answer_values:
        found = sum(1 for v in q.answer_values if value_in(text, v)) / len(q.answer_values)
        out["value_accuracy"] = found
        checks.append(found > 0)
    if q.outdated_values:
        stale = outdated_as_current(sentences, q.answer_values, q.outdated_values)
        out["outdated_as_current"] = 1.0 if stale else 0.0
        checks.append(not stale)
    if q.plan_values:
        done = plan_as_done(sentences, q.plan_values)
        out["plan_as_done"] = 1.0 if done else 0.0
        checks.append(not done)
    if q.conflict_values:
        surfaced = all(value_in(text, v) for v in q.conflict_values)
        out["conflict_surfaced"] = 1.0 if surfaced else 0.0
        checks.append(surfaced)
    if sentences:
        unsupported = sum(
            1 for s in sentences if not sentence_supported(s.text, s.quotes, [f for fs in s.facts for f in fs])
        )
        out["unsupported_rate"] = unsupported / len(sentences)
        pairs = [
            citation_precise(s.text, quote, held, only_citation=len(s.quotes) == 1)
            for s in sentences
            for quote, held in zip(s.quotes, s.facts, strict=True)
        ]
        if pairs:
            out["citation_precision"] = sum(pairs) / len(pairs)
        checks.append(unsupported == 0)
    out["answer_ok"] = 1.0 if all(checks) else 0.0
    return out
