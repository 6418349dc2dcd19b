"""Extractive answers: the best supporting sentences from the evidence, each cited, no model involved.

Used when no LLM is configured. It says so in its notice, and it abstains when the evidence does not
cover the question's content terms well enough, instead of quoting something merely nearby.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from kgrag_core.answering.model import Answer, AnswerMode, AnswerSentence, Citation, cite
from kgrag_core.answering.sentences import SentenceSpan, split_sentences
from kgrag_core.search import SearchHit
from kgrag_core.text_terms import content_terms

NO_ANSWER = "The documents I can see don't answer this."


@dataclass(frozen=True, slots=True)
class ExtractiveSettings:
    max_sentences: int = 3
    min_coverage: float = 0.5  # share of the question's content terms the evidence must contain
    # The best sentence must hold about a third of the question's content terms. Chosen on the bundled
    # corpus (docs/evaluation.md has the trade-off table): at 0.2, 8 of 13 unanswerable questions got a
    # loosely related quote; at 0.4, a third of the answerable ones got no answer.
    min_sentence_score: float = 0.3
    evidence_chunks: int = 8
    # Skip lines that are not sentences of prose: headings, e-mail header lines, a document's title, questions
    # (the composed answerer's rule; off reproduces the answers of the "sentences" style exactly).
    prose_only: bool = False
    # With `prose_only`, still take a field line ("- Next on-call primary: Mei (18–24 March), secondary Lars.")
    # when no prose sentence qualifies: a value on a labelled line beats no answer; headings never pass.
    label_lines: bool = False
    # Words meet across inflections the light stemmer leaves apart ("nightly" and "night", "city" and
    # "cities") and a contraction or possessive is no term of its own ("What's", "Kestrel's"): a question in
    # other words than its source still finds it (the composed answerer's rule; off is the old picker).
    loose_terms: bool = False


@dataclass(frozen=True, slots=True)
class _Scored:
    score: float
    hit_index: int
    text: str
    start_byte: int
    end_byte: int


def extractive_answer(
    question: str,
    hits: Sequence[SearchHit],
    settings: ExtractiveSettings | None = None,
    *,
    as_of: date | None = None,  # filters.as_of: the day the answer is about (the fact-aware answerer reads it)
) -> Answer:
    cfg = settings or ExtractiveSettings()
    evidence = list(hits[: cfg.evidence_chunks])
    q_terms = set(content_terms(_POSSESSIVE.sub("", question) if cfg.loose_terms else question))
    evidence_ids = tuple(h.chunk_id for h in evidence)
    if not q_terms or not evidence:
        return _abstain(question, evidence_ids)

    seen = set().union(*(set(content_terms(h.title + " " + h.text)) for h in evidence))
    covered = _met(q_terms, seen) if cfg.loose_terms else seen & q_terms
    coverage = len(covered) / len(q_terms)
    if coverage < cfg.min_coverage:
        return _abstain(question, evidence_ids)

    chosen = _choose(evidence, q_terms, cfg, labels=False)
    if not chosen and cfg.prose_only and cfg.label_lines:
        chosen = _choose(evidence, q_terms, cfg, labels=True)
    if not chosen:
        return _abstain(question, evidence_ids)
    # Read in evidence order so the answer flows like the sources.
    chosen.sort(key=lambda s: (s.hit_index, s.start_byte))

    citations: list[Citation] = []
    sentences: list[AnswerSentence] = []
    for s in chosen:
        hit = evidence[s.hit_index]
        citation = cite(len(citations) + 1, hit, s.start_byte, s.end_byte, s.text)
        citations.append(citation)
        sentences.append(AnswerSentence(s.text, (citation.id,)))
    # The label describes what is quoted, not only the evidence around it: a sentence that shares one word
    # with the question is a LOW-confidence answer however well the other chunks cover the rest.
    said = set().union(*(set(content_terms(s.text)) for s in chosen))
    quoted = _met(q_terms, said) if cfg.loose_terms else said & q_terms
    confidence = _confidence(min(coverage, len(quoted) / len(q_terms)))
    return Answer(
        question=question,
        mode=AnswerMode.EXTRACTIVE,
        sentences=tuple(sentences),
        citations=tuple(citations),
        notice="Extractive answer: no language model is configured, so these are the best supporting "
        "sentences from your documents, quoted as written.",
        confidence=confidence,
        evidence_chunk_ids=evidence_ids,
    )


_POSSESSIVE = re.compile(r"(?<=\w)['’]s?\b")


def _met(wanted: set[str], seen: set[str]) -> set[str]:
    """The wanted terms that some seen term meets: equal, one a prefix of the other when the shorter has five
    letters, or four and most of the longer ("night" and "nightly"), or equal but for a final y/i ("city" and
    "citi", the stem of "cities")."""
    out = wanted & seen
    for term in wanted - out:
        for other in seen:
            short, long = sorted((len(term), len(other)))
            close = short >= 5 or (short >= 4 and short >= 0.75 * long)  # "data" never meets "database"
            if (close and (term.startswith(other) or other.startswith(term))) or (
                short >= 3 and term.rstrip("yi") == other.rstrip("yi")
            ):
                out.add(term)
                break
    return out


def _choose(
    evidence: Sequence[SearchHit], q_terms: set[str], cfg: ExtractiveSettings, *, labels: bool
) -> list[_Scored]:
    """The best sentences at or above the score floor, best first; `labels` admits field lines too."""
    scored: list[_Scored] = []
    for index, hit in enumerate(evidence):
        rank_prior = 1.0 / math.log2(index + 2)
        for sentence in split_sentences(hit.text):
            if cfg.prose_only and not is_prose(hit, sentence, labels=labels):
                continue
            terms = set(content_terms(sentence.text))
            if not terms:
                continue
            matched = _met(q_terms, terms) if cfg.loose_terms else terms & q_terms
            overlap = len(matched) / len(q_terms)
            score = overlap * (0.6 + 0.4 * rank_prior)
            scored.append(
                _Scored(
                    score,
                    index,
                    sentence.text,
                    hit.start_byte + sentence.start_byte,
                    hit.start_byte + sentence.end_byte,
                )
            )
    # Highest score first; ties keep document order (hit rank, then position) for determinism.
    scored.sort(key=lambda s: (-s.score, s.hit_index, s.start_byte))
    return [s for s in scored if s.score >= cfg.min_sentence_score][: cfg.max_sentences]


_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_HEADER_FIELD = re.compile(r"^(?:subject|from|to|cc|bcc|date|sent|re|fwd?)\s*:", re.IGNORECASE)
# A record's or ticket's field line ("Summary: …", "**Date:** …", "Status: Resolved"): a label of at most three
# words opening its line. What follows is a value, not a sentence a reader would take as an answer.
_LABEL_LINE = re.compile(r"^(?:\*\*|__)?[A-Z][\w/&.-]*(?:[ -][\w/&.-]+){0,2}\s*:(?:\*\*|__)?(?:\s|$)")


def is_prose(hit: SearchHit, sentence: SentenceSpan, *, labels: bool = False) -> bool:
    """Whether a cut sentence is prose a reader would accept as an answer: not a Markdown heading (the issue's
    demo answered with a plan's title), not an e-mail header line, not the document's title or a section name,
    and not a question. `labels`: a field line ("Status: Resolved") passes too."""
    text = sentence.text.strip()
    if text.endswith("?") or _HEADER_FIELD.match(text):
        return False
    raw = hit.text.encode("utf-8")
    prefix = raw[: sentence.start_byte].decode("utf-8", errors="ignore")
    line_start = prefix[prefix.rfind("\n") + 1 :]
    if line_start.lstrip().startswith("#"):
        return False
    if not labels and not line_start.strip(" \t-*") and _LABEL_LINE.match(text):
        return False  # a field line, opening its line (a bullet's label too)
    following = raw[sentence.end_byte :].decode("utf-8", errors="ignore").lstrip(" \t|").split("\n", 2)
    if line_start.lstrip().startswith("|") and len(following) > 1 and _TABLE_RULE.match(following[1]):
        return False  # a table's header row
    names = {_norm(hit.title), *(_norm(b) for b in hit.breadcrumb)}
    return _norm(text) not in names


def _norm(text: str) -> str:
    return " ".join(content_terms(text))


def _confidence(coverage: float) -> str:
    return "HIGH" if coverage >= 0.85 else "MEDIUM" if coverage >= 0.65 else "LOW"


def _abstain(question: str, evidence_ids: tuple[str, ...]) -> Answer:
    return Answer(
        question=question,
        mode=AnswerMode.ABSTAINED,
        sentences=(),
        citations=(),
        notice=NO_ANSWER,
        confidence="LOW",
        evidence_chunk_ids=evidence_ids,
    )
