"""Negation, hedging and modality read off an evidence quote.

A negated or hedged statement must not become a plain edge: "LEJ-2 no longer uses Harbor" is a negative
USES, "we might get back to 64" is hypothetical, not a capacity. The patterns are word-bounded and kept
deliberately narrow; what they miss stays a positive fact, which is the extractor's own reading.

`detect_qualifiers` reads a whole quote (tier 2 proposes one item per sentence). A quote often holds more
than the item it backs ("Engineering headcount is 58, in line with the plan, with no layoffs"), so
validation uses `scoped_polarity` and `scoped_modality`, which read only the part of the quote about the
item: a negation counts only between or right before the item's own words in one clause, a plan or hedge
only in a clause that names the item.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kgrag_core.answering.quotes import normalise_for_quote
from kgrag_core.extraction.model import Modality, Polarity


@dataclass(frozen=True, slots=True)
class Qualifiers:
    polarity: Polarity
    modality: Modality | None  # None: the quote shows no sign of being anything but a plain statement


_I = re.IGNORECASE

# "not decided", "no decision": the statement is open, not denied; read as a plan, never as negation.
_UNDECIDED = re.compile(
    r"\b(?:no decision|not (?:yet )?(?:decided|final|agreed|approved|confirmed)|undecided|tbd|to be decided)\b", _I
)
_NEGATION = re.compile(
    r"\b(?:not|never|no longer|no more|neither|nor|cannot|none of)\b"
    r"|\b\w+n't\b"
    r"|\b(?:has|have|had|there (?:is|are|was|were)|with) no\b"
    r"|^no\b",
    _I,
)
# Inside an item's own words a bare "no" denies it ("LEJ-2 has no Harbor"), and so does an exception
# ("all leads report to Maria Chen, except Ravi Patel").
_SCOPED_NEGATION = re.compile(_NEGATION.pattern + r"|\b(?:no|except|excepting|without)\b", _I)
# "not only X but Y" and "whether or not" assert, they do not deny.
_NOT_NEGATION = re.compile(r"\b(?:not only|not just|whether or not|if not)\b", _I)

_AI_SUGGESTION = re.compile(
    r"\b(?:chat ?gpt|gpt-?\d\w*|copilot|claude|gemini|the (?:ai )?assistant|an? (?:ai|llm)(?: assistant)?"
    r"|the (?:ai|bot|llm))"
    r"\b[^.;]{0,40}?\b(?:suggest(?:s|ed)?|recommend(?:s|ed)?|propos(?:es|ed)|said|says|thinks|answered|replied)\b",
    _I,
)
_REPORTED = re.compile(
    r"(?i:\baccording to\b|\breportedly\b|\bwe (?:were|was) told\b|\bwe heard\b|\brumou?rs?\b)"
    r"|\b[A-Z][\w'.-]*(?: [A-Z][\w'.-]*)? (?:said|says|told us|claimed|claims|mentioned|reported|confirmed)"
    r"(?: (?:that|to us|he|she|they|we|it)\b|,|:)",
)
_OPINION = re.compile(
    r"\b(?:I|we) (?:think|believe|feel|guess|suspect|expect)\b|\bin (?:my|our) (?:opinion|view)\b"
    r"|\bprobably\b|\blikely\b|\bseems?\b|\bshould\b|\bIMO\b|\bpersonally\b",
    _I,
)
_HYPOTHETICAL_CI = re.compile(r"\b(?:might|could|would|perhaps|maybe|possibly|potentially|in theory)\b", _I)
# Lower-case only, and not before a number: "may" the modal, not May the month.
_MAY = re.compile(r"\bmay\b(?!\s+\d)")
_IF = re.compile(r"\b(?:if|unless|in case)\b", _I)
# Only a plan that is stated: "plan to", "is planned for", "the plan is". A word that merely contains
# "plan" ("route planning", "the planned migration ... is cancelled", "in line with the plan") refers to
# a plan without saying that the item is one.
_PLAN = re.compile(
    r"\b(?:plan(?:s|ning)? to|(?:is|are|was|were|be|been|being|now|still|also) plann(?:ed|ing)"
    r"|planned (?:for|to|in|as|by|from|until)|is (?:the|a|our) plan|the plan is|plan is to"
    r"|proposed|proposal|propose|roadmap"
    r"|we aim|aims? to|intend(?:s|ed)? to|going to|scheduled (?:to|for)|expected to|will be|upcoming"
    r"|the target|(?:we|they|I) target|targets? (?:date|architecture|state|go-live|launch)"
    r"|targeting|targeted (?:for|at)"
    r"|by the end of)\b"
    r"|\b(?:we|they|it|he|she|I)'ll\b",
    _I,
)
# Lower-case only: "will" the auxiliary, not Will the name.
_WILL = re.compile(r"\bwill\b|\bwon't\b")
# "Status: Approved plan", "**Status:** Draft - for discussion": a status field names the state something
# is in, which is a fact about it, not a plan. The field runs to the next field separator or sentence end.
_STATUS_FIELD = re.compile(r"\bstatus\b[*_\s]*[:=][^·|]*?(?=\s*(?:[·|]|[.;!?](?:\s|$)|$))", _I)

# Clause boundaries, for reading only the part of a quote that is about one item. Table cells and "·"
# separate fields as much as a full stop separates sentences.
_CLAUSE_SPLIT = re.compile(r"[.;!?](?:\s|$)|[|·\n]|\s(?:but|whereas|however|instead|although)\b|,\s*(?:and|so)\s", _I)
# 24,500 / 24 500 / 24500 are one number: separators between digit groups are dropped before matching.
_DIGIT_GROUPS = re.compile(r"(?<=\d)[,\s\u00a0\u202f\u2009](?=\d{3}\b)")
# How many words right before an item's word still scope over it ("no longer uses Harbor", "not 30,000").
_NEAR_WORDS = 3


def detect_qualifiers(quote: str) -> Qualifiers:
    """Polarity and (if any) modality that the wording of `quote` shows."""
    text = normalise_for_quote(quote)
    return Qualifiers(polarity=detect_polarity(text), modality=detect_modality(text))


def _without_non_negations(text: str) -> str:
    return _NOT_NEGATION.sub(" ", _UNDECIDED.sub(" ", text))


def detect_polarity(text: str) -> Polarity:
    text = _without_non_negations(normalise_for_quote(text))
    return Polarity.NEGATIVE if _NEGATION.search(text) else Polarity.POSITIVE


def detect_modality(text: str) -> Modality | None:
    """The strongest qualifier wins: who said it first, then how sure, then whether it is yet to happen.

    A hedge beats an opinion ("I think we might get back to 64"): the statement is about a possible
    value, not a judgement of a real one.
    """
    text = _STATUS_FIELD.sub(" ", normalise_for_quote(text))
    if _AI_SUGGESTION.search(text):
        return Modality.AI_SUGGESTION
    if _REPORTED.search(text):
        return Modality.REPORTED
    if _HYPOTHETICAL_CI.search(text) or _MAY.search(text):
        return Modality.HYPOTHETICAL
    if _OPINION.search(text):
        return Modality.OPINION
    if _PLAN.search(text) or _WILL.search(text) or _UNDECIDED.search(text):
        return Modality.PLAN
    if _IF.search(text):
        return Modality.HYPOTHETICAL
    return None


def _key(text: str) -> str:
    return _DIGIT_GROUPS.sub("", normalise_for_quote(text).casefold())


def _clauses(quote: str) -> list[str]:
    """The clauses of `quote`, case kept (the modal "will" and the name Will differ only by it)."""
    return [normalise_for_quote(c) for c in _CLAUSE_SPLIT.split(quote) if c.strip()]


def _negates(text: str) -> bool:
    return _SCOPED_NEGATION.search(_without_non_negations(text)) is not None


def _words_before(clause: str, position: int) -> str:
    return " ".join(clause[:position].split()[-_NEAR_WORDS:])


def scoped_polarity(quote: str, first: str, last: str) -> Polarity:
    """NEGATIVE when a negation in `quote` scopes over the item that relates `first` to `last`.

    `first` is the subject (a relation's subject, a claim's entity), `last` what is said of it (the object,
    the value). In a clause naming both, the negation must sit between them or right before the earlier
    one; otherwise it must sit right before `last` in its clause. A negation elsewhere in the quote ("58,
    in line with the plan, with no layoffs"; "No four-day week trial" for a status value the quote does
    not name) is about something else.
    """
    first_key, last_key = _key(first), _key(last)
    if not last_key:
        return Polarity.POSITIVE
    for clause in map(_key, _clauses(quote)):
        at_last = clause.find(last_key)
        at_first = clause.find(first_key) if first_key else -1
        if at_last < 0:
            continue
        if at_first >= 0:
            start, end = sorted((at_first, at_last))
            earlier_len = len(first_key) if start == at_first and at_first != at_last else len(last_key)
            between = clause[start + earlier_len : end]
            if _negates(between) or _negates(_words_before(clause, start)):
                return Polarity.NEGATIVE
        elif _negates(_words_before(clause, at_last)):
            return Polarity.NEGATIVE
    return Polarity.POSITIVE


def scoped_modality(quote: str, names: Sequence[str]) -> Modality | None:
    """The modality of the clauses of `quote` that name any of `names` (the whole quote when none does)."""
    keys = [k for k in (_key(n) for n in names) if k]
    about = [c for c in _clauses(quote) if any(k in _key(c) for k in keys)]
    return detect_modality(" . ".join(about) if about else quote)
