"""Negation, hedging and modality read off an evidence quote.

A negated or hedged statement must not become a plain edge: "LEJ-2 no longer uses Harbor" is a negative
USES, "we might get back to 64" is hypothetical, not a capacity. The patterns are word-bounded and kept
deliberately narrow; what they miss stays a positive fact, which is the extractor's own reading.
"""

from __future__ import annotations

import re
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
_PLAN = re.compile(
    r"\b(?:plan(?:s|ned|ning)? to|planned|planning|is (?:the )?plan|draft|proposed|proposal|propose|roadmap"
    r"|we aim|aims? to|intend(?:s|ed)? to|going to|scheduled (?:to|for)|expected to|will be|upcoming"
    r"|approved plan|the target|(?:we|they|I) target|targets? (?:date|architecture|state|go-live|launch)"
    r"|targeting|targeted (?:for|at)"
    r"|by the end of)\b"
    r"|\b(?:we|they|it|he|she|I)'ll\b",
    _I,
)
# Lower-case only: "will" the auxiliary, not Will the name.
_WILL = re.compile(r"\bwill\b|\bwon't\b")


def detect_qualifiers(quote: str) -> Qualifiers:
    """Polarity and (if any) modality that the wording of `quote` shows."""
    text = normalise_for_quote(quote)
    return Qualifiers(polarity=detect_polarity(text), modality=detect_modality(text))


def detect_polarity(text: str) -> Polarity:
    text = _NOT_NEGATION.sub(" ", _UNDECIDED.sub(" ", normalise_for_quote(text)))
    return Polarity.NEGATIVE if _NEGATION.search(text) else Polarity.POSITIVE


def detect_modality(text: str) -> Modality | None:
    """The strongest qualifier wins: who said it first, then how sure, then whether it is yet to happen."""
    text = normalise_for_quote(text)
    if _AI_SUGGESTION.search(text):
        return Modality.AI_SUGGESTION
    if _REPORTED.search(text):
        return Modality.REPORTED
    if _OPINION.search(text):
        return Modality.OPINION
    if _HYPOTHETICAL_CI.search(text) or _MAY.search(text):
        return Modality.HYPOTHETICAL
    if _PLAN.search(text) or _WILL.search(text) or _UNDECIDED.search(text):
        return Modality.PLAN
    if _IF.search(text):
        return Modality.HYPOTHETICAL
    return None
