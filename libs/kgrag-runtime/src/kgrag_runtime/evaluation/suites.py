"""The evaluation suites a service may run: bundled question sets, chosen by name, never by path.

An HTTP caller names a suite; the files it reads are fixed here, under the suites folder
(KGRAG_EVAL_SUITES_DIR, default the repository's `corpora/`). A name that is not in the registry is refused
before anything is read, so no request can make the server open a file of its choosing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from kgrag_core.errors import ErrorCode, KgragError

# libs/kgrag-runtime/src/kgrag_runtime/evaluation/suites.py -> the repository (or /app in the image)
BUNDLED_SUITES_DIR = Path(__file__).resolve().parents[5] / "corpora"
SUITE_NAME = re.compile(r"[a-z][a-z0-9-]{0,63}")


@dataclass(frozen=True, slots=True)
class EvalSuite:
    name: str
    description: str
    questions: str  # relative to the suites folder
    corpus: tuple[str, ...]
    reply_book: str | None = None  # tier 3 reads every chunk from it when the run asks for reply_book
    question_ids: tuple[str, ...] | None = None  # None: every question in the file
    # Only these documents of the corpus are indexed (None: all); keeps a smoke suite's index small.
    doc_ids: tuple[str, ...] | None = None

    def paths(self, root: Path) -> tuple[Path, tuple[Path, ...], Path | None]:
        questions = root / self.questions
        corpus = tuple(root / c for c in self.corpus)
        book = root / self.reply_book if self.reply_book else None
        for path in (questions, *corpus, *([book] if book else [])):
            if not path.is_file():
                raise KgragError(  # NOT_FOUND (404): the suite exists, but not in this deployment
                    ErrorCode.NOT_FOUND,
                    f"Suite {self.name!r} is not installed here: {path.name} is missing.",
                    hint="Point KGRAG_EVAL_SUITES_DIR at a copy of the repository's corpora/ folder.",
                )
        return questions, corpus, book

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "description": self.description,
            "questions": len(self.question_ids) if self.question_ids is not None else "all",
            "reply_book": self.reply_book is not None,
        }


_SMOKE_QUESTIONS = ("q01", "q11", "q17", "q25", "q46")
_SMOKE_DOCS = (
    "wiki-beacon-api-rate-limits",
    "wiki-atlas-overview",
    "wiki-team-ownership",
    "ticket-nw-4812-brightwater-picking-outage",
    "wiki-harbor-guide",
    "incident-inc-2023-019-harbor-picklist-outage",
    "wiki-oncall-policy-2025",
    "wiki-atlas-oncall-handover-2024",
    "email-atlas-oncall-handover-announcement",
    "wiki-atlas-oncall-runbook",
)

SUITES: dict[str, EvalSuite] = {
    suite.name: suite
    for suite in (
        EvalSuite(
            "northwind",
            "The bundled Northwind questions (67, every type: 58 + the dev-only d01-d09) on its 106 documents "
            "(docs/evaluation.md).",
            "northwind/questions.jsonl",
            ("northwind/documents.jsonl",),
            reply_book="northwind/extraction/corpus_replies.jsonl",
        ),
        EvalSuite(
            "northwind-smoke",
            "Five Northwind questions (lookup, entity, multi-hop, temporal, unanswerable) on the ten documents "
            "that answer them: a minute-long check that the harness and the service work, not a benchmark.",
            "northwind/questions.jsonl",
            ("northwind/documents.jsonl",),
            reply_book="northwind/extraction/corpus_replies.jsonl",
            question_ids=_SMOKE_QUESTIONS,
            doc_ids=_SMOKE_DOCS,
        ),
    )
}


def suite_named(name: str) -> EvalSuite:
    suite = SUITES.get(name) if SUITE_NAME.fullmatch(name) else None
    if suite is None:
        raise KgragError(
            ErrorCode.INVALID_QUERY,
            f"No evaluation suite {name[:64]!r}.",
            hint=f"Suites: {', '.join(sorted(SUITES))} (GET /v1/admin/eval lists them).",
        )
    return suite


class EvalConfig(BaseModel):
    """What a run may vary: all bounded, none a path."""

    model_config = ConfigDict(extra="forbid")

    budget_tokens: int = Field(2000, ge=100, le=32_000, description="Token budget for key-fact recall.")
    graph: bool = Field(True, strict=True, description="Also score hybrid+graph (the graph layer).")
    reply_book: bool = Field(
        False,
        strict=True,
        description="Build the graph with tier 3 reading every chunk from the suite's bundled reply book "
        "(an offline stand-in for a model); otherwise tiers 0-2 only.",
    )
