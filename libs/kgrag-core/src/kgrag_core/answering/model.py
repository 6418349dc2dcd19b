"""The answer a caller receives: sentences, each citing exact byte spans of stored documents."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from kgrag_core.chunking.locators import quote_locator
from kgrag_core.search import SearchHit


class AnswerMode(StrEnum):
    EXTRACTIVE = "extractive"
    LLM = "llm"
    ABSTAINED = "abstained"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class Citation:
    id: int
    chunk_id: str
    doc_id: str
    title: str
    uri: str
    start_byte: int
    end_byte: int
    quote: str
    # Where the quote stands in a paged or timed source (None for other formats).
    page: int | None = None
    speaker: str | None = None
    time: str | None = None

    def as_dict(self) -> dict[str, object]:
        located = {k: v for k, v in (("page", self.page), ("speaker", self.speaker), ("time", self.time)) if v}
        return located | {
            "id": self.id,
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "title": self.title,
            "uri": self.uri,
            "span": [self.start_byte, self.end_byte],
            "quote": self.quote,
        }


def cite(citation_id: int, hit: SearchHit, start_byte: int, end_byte: int, quote: str) -> Citation:
    """A citation of `hit`'s document span [start_byte, end_byte), with the page or speaker and time of
    the quote when the source has them."""
    place = quote_locator(hit.locator, hit.text, start_byte - hit.start_byte)
    return Citation(
        citation_id,
        hit.chunk_id,
        hit.doc_id,
        hit.title,
        hit.uri,
        start_byte,
        end_byte,
        quote,
        page=place.page if place else None,
        speaker=place.speaker if place else None,
        time=place.time if place else None,
    )


@dataclass(frozen=True, slots=True)
class AnswerSentence:
    text: str
    citation_ids: tuple[int, ...]
    # The graph facts (AnswerContext ids, F1...) a composed sentence states: what its dates and values rest on
    # besides its quotes.
    fact_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ConflictValue:
    """One side of a disagreement: a value, the sources that give it and when they were written."""

    value: str
    sources: tuple[tuple[str, str, str], ...]  # (doc_id, chunk_id, title), one per evidence chunk
    written_at: tuple[str | None, ...]  # ISO dates, one per source
    fact_ids: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {
            "value": self.value,
            "sources": [
                {"doc_id": d, "chunk_id": c, "title": t, "written_at": w}
                for (d, c, t), w in zip(self.sources, self.written_at, strict=True)
            ],
            "fact_ids": list(self.fact_ids),
        }


@dataclass(frozen=True, slots=True)
class Conflict:
    """Sources that disagree on one attribute (or on whether a relation holds), each side with its sources."""

    subject: str
    attribute: str  # the attribute, or the relation and its object for a relation
    kind: str  # claim | relation | record (two copies of one record that differ)
    values: tuple[ConflictValue, ...]
    note: str

    def as_dict(self) -> dict[str, object]:
        return {
            "subject": self.subject,
            "attribute": self.attribute,
            "kind": self.kind,
            "values": [v.as_dict() for v in self.values],
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class RemovedSentence:
    """A sentence the answerer did not keep, by the hash of its text (traces hold no text) and why."""

    text_sha256: str
    reason: str  # e.g. quote_not_found

    def as_dict(self) -> dict[str, object]:
        return {"text_sha256": self.text_sha256, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    mode: AnswerMode
    sentences: tuple[AnswerSentence, ...]
    citations: tuple[Citation, ...]
    notice: str
    confidence: str  # HIGH | MEDIUM | LOW
    error_code: str | None = None
    evidence_chunk_ids: tuple[str, ...] = field(default_factory=tuple)
    removed: tuple[RemovedSentence, ...] = ()  # for the trace; not part of the response
    # Sentences of a model's reply withheld because no quote of theirs was found in its source (a metric:
    # kgrag_answer_sentences_removed_total); not part of the response body.
    removed_sentences: int = 0
    # Why the model's answer was replaced by the extractive one (llm_timeout, llm_unavailable, ...), or None.
    fallback: str | None = None
    conflicts: tuple[Conflict, ...] = ()
    # The graph facts the answer states (Fact.as_dict() of each), for the response and for verification.
    facts: tuple[dict[str, object], ...] = ()

    @property
    def answered(self) -> bool:
        return self.mode in (AnswerMode.EXTRACTIVE, AnswerMode.LLM) and bool(self.sentences)

    def render(self) -> str:
        """Plain text with inline [n] markers, the way a reader sees it."""
        if not self.sentences:
            return self.notice
        parts = [s.text + "".join(f" [{c}]" for c in s.citation_ids) for s in self.sentences]
        return " ".join(parts)

    def as_dict(self) -> dict[str, object]:
        return {
            "question": self.question,
            "answer": self.render(),
            "answered": self.answered,
            "mode": self.mode.value,
            "notice": self.notice,
            "confidence": self.confidence,
            "error_code": self.error_code,
            "sentences": [
                {"text": s.text, "citations": list(s.citation_ids), "facts": list(s.fact_ids)} for s in self.sentences
            ],
            "citations": [c.as_dict() for c in self.citations],
            "evidence_chunk_ids": list(self.evidence_chunk_ids),
            "removed": self.removal_summary(),
            "fallback": None if self.fallback is None else {"reason": self.fallback},
            "conflicts": [c.as_dict() for c in self.conflicts],
            "facts": [dict(f) for f in self.facts],
        }

    def removal_summary(self) -> dict[str, object]:
        """How many sentences verification removed, per reason (their text stays out of the response)."""
        reasons: dict[str, int] = {}
        for r in self.removed:
            reasons[r.reason] = reasons.get(r.reason, 0) + 1
        return {"count": self.removed_sentences, "reasons": dict(sorted(reasons.items()))}
