"""Answer metrics: is what an answer says right, current, not a plan passed off as done, and backed by its quotes?

Pure functions over one question's gold (`EvalQuestion`) and one answer as the API returns it (`sentences`
with their citation ids, `citations` with their quotes). The checks are deliberately simple and visible,
so that a reader can tell why a number moved:

- a value is "in" a text as whole tokens, case-folded, thousands separators ignored (as `values@B`);
- an outdated value is presented as current when a sentence names it with no word that places it in the
  past ("until", "previously", "from … to", "replaced") and without the current value beside it;
- a plan is presented as done when a sentence names it with no word of planning, hedging or negation;
- a sentence is supported when it cites something and every number and name in it occurs in its quotes,
  with the same polarity as the closest quote sentence (a "not" in the sentence needs one there, and the
  other way round);
- a citation is precise when its own quote shares the sentence's polarity and at least one of the
  sentence's numbers or names (all of them when the sentence has only one citation).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgrag_core.answering.quotes import normalise_for_quote
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
    r"shelv\w*|dropped|abandon\w*|instead|rather|rfc|idea|hope\w*|think|expect\w*|estimat\w*|if|pilot\s+that|"
    r"exploratory|discussed|studied|request\w*|wanted|wish\w*|asked\s+for)\b",
    re.IGNORECASE,
)
# A number with what is glued to it ("2nd", "99.9%", "€2.40", "18–24"), less trailing punctuation.
_NUMBER = re.compile(r"[€$£]?\d[\w.,:/%\-–]*")
# A name: a capitalised word that is not a common sentence opener.
_NAME = re.compile(r"\b[A-ZÀ-Þ][\w\-]*\w")
_NOT_NAMES = frozenset(
    [
        "I",
        "A",
        "An",
        "The",
        "It",
        "Its",
        "This",
        "That",
        "These",
        "Those",
        "In",
        "On",
        "At",
        "For",
        "From",
        "After",
        "Before",
        "Since",
        "Until",
        "No",
        "Yes",
        "Not",
        "There",
        "We",
        "They",
        "He",
        "She",
        "Our",
        "Their",
        "As",
        "If",
        "When",
        "While",
        "Both",
        "All",
        "Each",
        "Every",
        "Only",
        "Also",
        "But",
        "And",
        "Or",
        "So",
        "Then",
        "With",
        "Without",
        "By",
        "Of",
        "To",
        "Instead",
        "However",
        "None",
        "Nothing",
        "What",
        "Which",
        "Who",
        "How",
        "Why",
        "Where",
        "Today",
        "Now",
        "Previously",
        "Currently",
        "Since",
    ]
)


@dataclass(frozen=True, slots=True)
class _Sentence:
    text: str
    quotes: tuple[str, ...]


def _sentences(answer: Mapping[str, object]) -> list[_Sentence]:
    quotes: dict[int, str] = {}
    for c in answer.get("citations") or []:  # type: ignore[attr-defined]
        if isinstance(c, Mapping) and isinstance(c.get("id"), int):
            quotes[int(c["id"])] = str(c.get("quote") or "")
    out: list[_Sentence] = []
    for s in answer.get("sentences") or []:  # type: ignore[attr-defined]
        if not isinstance(s, Mapping):
            continue
        cited = [quotes[i] for i in s.get("citations") or [] if isinstance(i, int) and i in quotes]
        out.append(_Sentence(str(s.get("text") or ""), tuple(cited)))
    return out


def checkable_tokens(sentence: str) -> list[str]:
    """The sentence's numbers, amounts and dates, and its names: what its quotes must contain."""
    numbers = [n.rstrip(".,:/-–") for n in _NUMBER.findall(sentence)]
    # The opening word is capitalised anyway: it counts as a name only with a capital or digit inside it.
    opener = re.match(r"\s*([\w\-]+)", sentence)
    first = opener.group(1) if opener else ""
    skip_first = bool(first) and not re.search(r"[A-ZÀ-Þ0-9]", first[1:])
    found = _NAME.findall(sentence)
    if skip_first and found and found[0] == first:
        found = found[1:]
    names = [n for n in found if n not in _NOT_NAMES]
    return [*numbers, *names]


def _negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w{3,}")


def _same_polarity(sentence: str, quotes: str) -> bool:
    """Whether the sentence and the quote sentence closest to it (most words in common) agree on negation:
    a "not" elsewhere in a long quote says nothing about this sentence."""
    words = {w.casefold() for w in _WORD.findall(sentence)}
    parts = [p for p in _SPLIT.split(quotes) if p.strip()] or [quotes]
    closest = max(parts, key=lambda p: len(words & {w.casefold() for w in _WORD.findall(p)}))
    return _negated(sentence) == _negated(closest)


def _quoted(sentence: str, quote: str) -> bool:
    """A sentence that is its quote, word for word (as extractive sentences are), is supported by it."""
    return bool(sentence.strip()) and normalise_for_quote(sentence.strip()) in normalise_for_quote(quote)


def sentence_supported(sentence: str, quotes: Sequence[str]) -> bool:
    if not quotes:
        return False
    if any(_quoted(sentence, q) for q in quotes):
        return True
    window = "\n".join(quotes)
    if not _same_polarity(sentence, window):
        return False
    return all(value_in(window, token) for token in checkable_tokens(sentence))


def citation_precise(sentence: str, quote: str, *, only_citation: bool) -> bool:
    if _quoted(sentence, quote):
        return True
    if not _same_polarity(sentence, quote):
        return False
    tokens = checkable_tokens(sentence)
    if not tokens:
        return True
    found = [value_in(quote, t) for t in tokens]
    return all(found) if only_citation else any(found)


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


def answer_metrics(q: EvalQuestion, answer: Mapping[str, object]) -> dict[str, float]:
    """The answer metrics of one question (docs/evaluation.md, answer metrics); only those its gold allows."""
    answered = bool(answer.get("answered"))
    if not q.answerable:
        return {"abstained": 0.0 if answered else 1.0}
    sentences = _sentences(answer) if answered else []
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
        unsupported = sum(1 for s in sentences if not sentence_supported(s.text, s.quotes))
        out["unsupported_rate"] = unsupported / len(sentences)
        pairs = [
            citation_precise(s.text, quote, only_citation=len(s.quotes) == 1) for s in sentences for quote in s.quotes
        ]
        if pairs:
            out["citation_precision"] = sum(pairs) / len(pairs)
        checks.append(unsupported == 0)
    out["answer_ok"] = 1.0 if all(checks) else 0.0
    return out
