"""Sentence-level verification: a sentence is kept only if the quotes it cites support it.

A quote that exists is not enough: a model can cite a real sentence and write the opposite of it. Every
answerer's sentences pass through `check_sentence`, which asks three cheap, deterministic questions:

- is every number, date, amount and named entity of the sentence in its quotes (or in a graph fact whose
  evidence chunks are among its citations)?
- does the polarity agree (no "moved" against a quote saying "did not move")?
- is a plan, proposal or hedge in the quotes stated as done?

It errs on the side of removing: a sentence it cannot tie to its quotes is dropped, never shown with a
caveat. Polarity and modality are scoped to the word a cue governs (the next content word), so a quote
"Atlas runs on Postgres, not MySQL" still supports "Atlas runs on Postgres".
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from kgrag_core.answering.model import Answer, AnswerMode, AnswerSentence, Citation, RemovedSentence
from kgrag_core.answering.quotes import normalise_for_quote
from kgrag_core.errors import ErrorCode
from kgrag_core.text_terms import STOPWORDS, light_stem

# Reasons, stable strings (traces and responses count them).
UNSUPPORTED_NUMBER = "unsupported_number"
UNSUPPORTED_DATE = "unsupported_date"
UNSUPPORTED_ENTITY = "unsupported_entity"
POLARITY_MISMATCH = "polarity_mismatch"
PLAN_AS_FACT = "plan_as_fact"
NO_CITATION = "no_citation"


@dataclass(frozen=True, slots=True)
class SupportingFact:
    """A graph fact's text and the chunks it rests on; it supports a sentence citing one of them.

    `planned` is set on a fact the documents hold only as a plan, proposal or hedge (no current or past fact
    gives its value): that value must never be stated as done, whatever the sentence cites (`plan_stated`).
    `subject`, when set, must be named too (a bare figure, or a relation's object, is a plan only beside it)."""

    text: str
    chunk_ids: tuple[str, ...]
    planned: str = ""
    subject: str = ""


_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})(?:-(\d{2}))?\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\s+(\d{{4}})\b", re.IGNORECASE)
_YEAR = re.compile(r"\d{4}")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
_NUMBER_WORDS = {w: str(i) for i, w in enumerate([*_UNITS.split(" "), "seventeen", "eighteen", "nineteen", "twenty"])}
_NUMBER_WORDS |= {"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000"}
_WORD = re.compile(r"[^\W_]+(?:[-'’.][^\W_]+)*", re.UNICODE)
_NEGATIONS = frozenset(["not", "never", "no", "none", "nobody", "nothing", "neither", "nor", "without", "cannot"])
# Words between a cue and the word it governs ("did not yet move", "no longer uses", "plans to move").
_SKIP = STOPWORDS | frozenset(["yet", "ever", "longer", "also", "still", "been", "be", "to", "go", "going", "actually"])
_MODALITY = frozenset(
    [
        "plan",
        "plans",
        "planned",
        "planning",
        "proposal",
        "propose",
        "proposes",
        "proposed",
        "intend",
        "intends",
        "intended",
        "aim",
        "aims",
        "will",
        "would",
        "could",
        "might",
        "may",
        "should",
        "consider",
        "considering",
        "considered",
        "expect",
        "expects",
        "expected",
        "schedule",
        "scheduled",
        "roadmap",
        "tentative",
        "tentatively",
        "hope",
        "hopes",
        "want",
        "wants",
        "draft",
        "rfc",
        "option",
        "idea",
        "reportedly",
        "possibly",
        "possible",
        "potential",
        "potentially",
        "probably",
        "maybe",
        "perhaps",
    ]
)
# Cues that follow what they govern ("the move was planned", "a migration is proposed").
_POSTFIX_MODALITY = frozenset(["planned", "proposed", "scheduled", "considered", "expected", "intended"])
# A capitalised first word is still a name unless it is a function word or one of these.
_GENERIC_OPENERS = frozenset(
    [
        "according",
        "also",
        "currently",
        "however",
        "today",
        "yes",
        "none",
        "every",
        "each",
        "since",
        "sources",
        "documents",
        "both",
        "one",
        "another",
        "instead",
        "previously",
        "later",
        "earlier",
        "meanwhile",
        "overall",
        "in",
        "as",
    ]
)


# A yes/no question's verdict opening a sentence ("No: <what the source says>"): it answers the question and
# negates nothing in the sentence, so the statement after it is checked on its own. "No" still needs a source
# that denies or calls something off; "Yes" needs nothing more than the statement's own support.
_VERDICT = re.compile(r"^(yes|no)\s*:\s+", re.IGNORECASE)
_CALLED_OFF = frozenset(
    ["cancelled", "canceled", "cancel", "abandoned", "shelved", "rejected", "dropped", "scrapped", "withdrawn"]
)


def check_sentence(text: str, quotes: Sequence[str], facts: Sequence[str] = ()) -> str | None:
    """None when `quotes` (and `facts`) support `text`, else the first reason they do not."""
    if not quotes and not facts:
        return NO_CITATION
    verdict = _VERDICT.match(text)
    if verdict is not None:
        if verdict.group(1).lower() == "no" and not any(
            t in _NEGATIONS or t.endswith("n't") or t in _CALLED_OFF for q in quotes for t in _tokens(q)
        ):
            return POLARITY_MISMATCH  # "No" where no quote denies or calls anything off
        text = text[verdict.end() :]
    sentence = normalise_for_quote(text)
    quoted = [normalise_for_quote(q) for q in [*quotes, *facts]]
    if sentence.rstrip(".!?;: ") in {q.rstrip(".!?;: ") for q in quoted}:
        return None  # the sentence is one of its quotes, as an extractive answer's are
    support = " ".join(quoted)
    reason = _dates_supported(sentence, support)
    if reason is not None:
        return reason
    stripped = _strip_dates(sentence)
    if not _numbers(stripped) <= _numbers(_strip_dates(support)) | _iso_numbers(support):
        return UNSUPPORTED_NUMBER
    if any(not _has_word(support, name) for name in _names(stripped)):
        return UNSUPPORTED_ENTITY
    if not _has_cue(sentence) and not any(_has_cue(q) for q in quoted):
        return None  # no negation, plan or hedge on either side: polarity and modality agree
    s, readings = _read(sentence), [_read(q) for q in quoted]
    if _polarity_differs(s, readings):
        return POLARITY_MISMATCH
    if _plan_as_fact(s, readings):
        return PLAN_AS_FACT
    return None


# Words that tell a plan did not happen, or that it is only that ("the rewrite will not be pursued").
_CALLED_OFF_TEXT = re.compile(
    r"\b(?:not|no|never|none|nothing|cancel\w*|postpon\w*|shelv\w*|dropped|abandon\w*|reject\w*|instead|without|"
    r"scrapped|withdrawn|pursued)\b",
    re.IGNORECASE,
)


def called_off(text: str) -> bool:
    """Whether the text negates or calls something off ("cancelled", "not started", "will not be pursued")."""
    return _CALLED_OFF_TEXT.search(text) is not None


def plan_stated(text: str, facts: Sequence[SupportingFact], cited: Sequence[Citation] = ()) -> bool:
    """Whether the sentence states as done a value the facts hold only as a plan: it names the value (with its
    subject, for a bare figure or a relation's object), with no word of planning, hedging or negation. A quote
    from outside the plan's own evidence that states the value plainly is another source saying it happened,
    and the sentence may say so too; the plan's own words ("Beacon moves to CockroachDB in Q3") are not."""
    from kgrag_core.evaluation.metrics import value_in  # evaluation imports this module's package

    if hedged(text) or called_off(text):
        return False
    for fact in facts:
        if not fact.planned or not value_in(text, fact.planned):
            continue
        if fact.subject and not value_in(text, fact.subject):
            continue
        elsewhere = [c for c in cited if c.chunk_id not in fact.chunk_ids and value_in(c.quote, fact.planned)]
        if any(not hedged(c.quote) and not called_off(c.quote) for c in elsewhere):
            continue
        return True
    return False


def supports_some(text: str, quotes: Sequence[str], facts: Sequence[str] = ()) -> bool:
    """Whether `quotes` (and `facts`) hold at least one of the sentence's dates, numbers or names with its
    polarity: one citation's share of a sentence that cites several (a sentence with no such term is held
    by any quote that agrees with it)."""
    verdict = _VERDICT.match(text)
    if verdict is not None:
        text = text[verdict.end() :]
    sentence = normalise_for_quote(text)
    quoted = [normalise_for_quote(q) for q in [*quotes, *facts]]
    if not quoted:
        return False
    support = " ".join(quoted)
    if sentence.rstrip(".!?;: ") in {q.rstrip(".!?;: ") for q in quoted}:
        return True
    cued = _has_cue(sentence) or any(_has_cue(q) for q in quoted)
    if cued and _polarity_differs(_read(sentence), [_read(q) for q in quoted]):
        return False
    known = _dates(support)
    dates = _dates(sentence)
    stripped = _strip_dates(sentence)
    numbers = _numbers(stripped)
    names = _names(stripped)
    if not (dates or numbers or names):
        return True
    held_numbers = _numbers(_strip_dates(support)) | _iso_numbers(support)
    return (
        any(any(k == d or k.startswith(d + "-") for k in known) for d in dates)
        or bool(numbers & held_numbers)
        or any(_has_word(support, name) for name in names)
    )


def hedged(text: str) -> bool:
    """Whether the text carries a plan, proposal or hedge cue ("we propose", "will", "might"); the month
    ("down in May 2024", "since May") is not one."""
    return _read(_MONTH_MAY.sub(" ", _strip_dates(text))).hedged


_MONTH_MAY = re.compile(r"(?<=\S)(\s+)May\b")


def verify_answer(answer: Answer, facts: Iterable[SupportingFact] = ()) -> Answer:
    """The answer without its unsupported sentences (removed and counted); abstains when none is left.

    Citations no kept sentence refers to are dropped and the rest renumbered, so [n] stays dense."""
    if not answer.sentences:
        return answer
    known = list(facts)
    by_id = {c.id: c for c in answer.citations}
    kept: list[AnswerSentence] = []
    removed: list[RemovedSentence] = []
    for sentence in answer.sentences:
        cited = [by_id[i] for i in sentence.citation_ids if i in by_id]
        reason = check_sentence(sentence.text, [c.quote for c in cited], facts_for(known, cited))
        if reason is None and plan_stated(sentence.text, known, cited):
            reason = PLAN_AS_FACT
        if reason is None:
            kept.append(sentence)
        else:
            removed.append(removed_sentence(sentence.text, reason))
    if not removed:
        return answer
    all_removed = (*answer.removed, *removed)
    count = answer.removed_sentences + len(removed)
    if not kept:
        return replace(
            answer,
            mode=AnswerMode.REFUSED if answer.mode is AnswerMode.LLM else AnswerMode.ABSTAINED,
            sentences=(),
            citations=(),
            notice=f"{_no_answer_notice()} No sentence of the answer was supported by its quotes.",
            confidence="LOW",
            error_code=ErrorCode.INSUFFICIENT_EVIDENCE.value,
            removed=all_removed,
            removed_sentences=count,
        )
    sentences, citations = renumber(kept, by_id)
    return replace(answer, sentences=sentences, citations=citations, removed=all_removed, removed_sentences=count)


def facts_for(facts: Sequence[SupportingFact], cited: Sequence[Citation]) -> list[str]:
    """The texts of the facts whose evidence is among the cited chunks."""
    chunks = {c.chunk_id for c in cited}
    return [f.text for f in facts if chunks.intersection(f.chunk_ids)]


def removed_sentence(text: str, reason: str) -> RemovedSentence:
    return RemovedSentence(hashlib.sha256(text.encode("utf-8")).hexdigest(), reason)


def renumber(
    kept: Sequence[AnswerSentence], by_id: dict[int, Citation]
) -> tuple[tuple[AnswerSentence, ...], tuple[Citation, ...]]:
    new_ids: dict[int, int] = {}
    citations: list[Citation] = []
    sentences: list[AnswerSentence] = []
    for sentence in kept:
        ids: list[int] = []
        for old in sentence.citation_ids:
            if old not in by_id:
                continue
            if old not in new_ids:
                new_ids[old] = len(citations) + 1
                citations.append(replace(by_id[old], id=new_ids[old]))
            ids.append(new_ids[old])
        sentences.append(replace(sentence, citation_ids=tuple(ids)))
    return tuple(sentences), tuple(citations)


# --- the checks ---------------------------------------------------------------------------------------


def _no_answer_notice() -> str:
    from kgrag_core.answering.extractive import NO_ANSWER  # extractive imports nothing from here

    return NO_ANSWER


def _dates(text: str) -> set[str]:
    """Dates as ISO prefixes: YYYY-MM-DD for a day, YYYY-MM for a month."""
    out: set[str] = set()
    if not _YEAR.search(text):
        return out  # every date form has a year: skip the month patterns
    for m in _ISO_DATE.finditer(text):
        out.add(f"{m.group(1)}-{m.group(2)}" + (f"-{m.group(3)}" if m.group(3) else ""))
    for m in _DAY_MONTH_YEAR.finditer(text):
        out.add(f"{m.group(3)}-{_month(m.group(2)):02d}-{int(m.group(1)):02d}")
    for m in _MONTH_DAY_YEAR.finditer(text):
        out.add(f"{m.group(3)}-{_month(m.group(1)):02d}-{int(m.group(2)):02d}")
    for m in _MONTH_YEAR.finditer(text):
        out.add(f"{m.group(2)}-{_month(m.group(1)):02d}")
    return out


def _month(name: str) -> int:
    return _MONTHS[name.lower().rstrip(".")]


def _strip_dates(text: str) -> str:
    if not _YEAR.search(text):
        return text
    for pattern in (_DAY_MONTH_YEAR, _MONTH_DAY_YEAR, _MONTH_YEAR, _ISO_DATE):
        text = pattern.sub(" ", text)
    return text


_BARE_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")


def value_figures(text: str) -> frozenset[str]:
    """The numbers a sentence states as values: its dates (every form, a bare year too) left out, so two
    sentences that differ only in when they were dated state the same figures."""
    return frozenset(m.group(0).replace(",", "") for m in _NUMBER.finditer(_BARE_YEAR.sub(" ", _strip_dates(text))))


def _dates_supported(sentence: str, support: str) -> str | None:
    known = _dates(support)
    for date in _dates(sentence):
        # "March 2024" is supported by "2024-03-15"; a day needs that day.
        if not any(k == date or k.startswith(date + "-") for k in known):
            return UNSUPPORTED_DATE
    return None


def _numbers(text: str) -> set[str]:
    out = {m.group(0).replace(",", "") for m in _NUMBER.finditer(text)}
    for word in _WORD.findall(text.lower()):
        if word in _NUMBER_WORDS:
            out.add(_NUMBER_WORDS[word])
    return out


def _iso_numbers(text: str) -> set[str]:
    """The parts of the support's dates: a sentence may name the year of a date its quote gives."""
    out: set[str] = set()
    for date in _dates(text):
        for part in date.split("-"):
            out.update({part, str(int(part))})
    return out


def _names(text: str) -> list[str]:
    """Capitalised words (and words with inner capitals or digits): the sentence's named entities."""
    out: list[str] = []
    for index, match in enumerate(_WORD.finditer(text)):
        word = match.group(0)
        if word.endswith(("'s", "’s")):
            word = word[:-2]
        if not word or not (word[0].isupper() or any(ch.isupper() for ch in word[1:])):
            continue
        if word.isdigit() or word.lower() in _MONTHS:
            continue
        lowered = word.lower()
        if index == 0 and (lowered in STOPWORDS or lowered in _GENERIC_OPENERS or lowered in _MODALITY):
            continue
        if lowered in STOPWORDS and not any(ch.isupper() for ch in word[1:]):
            continue  # "The", "It" inside a title-cased phrase
        out.append(word)
    return out


def _has_word(support: str, word: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", support, re.IGNORECASE) is not None


def _tokens(text: str) -> list[str]:
    return [w.replace("’", "'") for w in _WORD.findall(text.lower())]


@dataclass(frozen=True, slots=True)
class _Reading:
    negated: frozenset[str]
    planned: frozenset[str]
    asserted: frozenset[str]  # content words neither negated nor planned
    hedged: bool  # any modality cue at all


def _read(text: str) -> _Reading:
    tokens = _tokens(text)
    negated: set[str] = set()
    planned: set[str] = set()
    governed: set[int] = set()
    for i, token in enumerate(tokens):
        negation = token in _NEGATIONS or token.endswith("n't")
        modal = token in _MODALITY
        if not (negation or modal):
            continue
        j = _governed(tokens, i)
        if j is not None:
            governed.add(j)
            (negated if negation else planned).add(light_stem(tokens[j]))
        if token in _POSTFIX_MODALITY:
            for k in range(max(0, i - 3), i):
                if tokens[k] not in _SKIP and tokens[k] not in _MODALITY:
                    governed.add(k)
                    planned.add(light_stem(tokens[k]))
    asserted = {
        light_stem(t)
        for k, t in enumerate(tokens)
        if k not in governed and t not in _SKIP and t not in _NEGATIONS and t not in _MODALITY
    }
    return _Reading(frozenset(negated), frozenset(planned), frozenset(asserted), any(t in _MODALITY for t in tokens))


def _governed(tokens: Sequence[str], cue: int) -> int | None:
    for j in range(cue + 1, min(len(tokens), cue + 5)):
        if tokens[j] not in _SKIP and tokens[j] not in _NEGATIONS and tokens[j] not in _MODALITY:
            return j
    return None


def _meets(term: str, terms: Iterable[str]) -> bool:
    """Stems meet when equal or one starts the other ("mov" and "move"), at three letters or more."""
    return any(term == t or (min(len(term), len(t)) >= 3 and (term.startswith(t) or t.startswith(term))) for t in terms)


def _has_cue(text: str) -> bool:
    return any(t in _NEGATIONS or t.endswith("n't") or t in _MODALITY for t in _tokens(text))


def _polarity_differs(s: _Reading, readings: Sequence[_Reading]) -> bool:
    q_negated = {t for r in readings for t in r.negated}
    q_asserted = {t for r in readings for t in r.asserted | r.planned}
    # The sentence denies what its quotes assert...
    if any(_meets(t, q_asserted) and not _meets(t, q_negated) for t in s.negated):
        return True
    # ...or asserts what its quotes deny.
    return any(
        _meets(t, s.asserted | s.planned) and not _meets(t, q_asserted) and not _meets(t, s.negated) for t in q_negated
    )


def _plan_as_fact(s: _Reading, readings: Sequence[_Reading]) -> bool:
    if s.hedged:
        return False
    q_planned = {t for r in readings for t in r.planned}
    q_asserted = {t for r in readings for t in r.asserted}
    return any(_meets(t, s.asserted) and not _meets(t, q_asserted) for t in q_planned)
