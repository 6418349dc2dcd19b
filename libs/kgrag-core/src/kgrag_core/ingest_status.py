"""What became of one document: the one answer of `GET /v1/ingest/documents/{id}/status` and
`kgrag status --doc ID`, on both runtimes (both read the ingest log that whoever handled the document wrote)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgrag_core.errors import ErrorCode, KgragError

if TYPE_CHECKING:
    from kgrag_core.ports import IngestLog

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


def document_status(log: IngestLog, doc_id: str, *, limit: int = DEFAULT_LIMIT) -> dict[str, object]:
    """The document's latest outcomes, newest first, with `status` the latest; DOCUMENT_NOT_FOUND when none
    was ever recorded (distributed: also while a queued document waits for its worker)."""
    if not 1 <= limit <= MAX_LIMIT:
        raise KgragError(
            ErrorCode.LIMIT_EXCEEDED, f"limit must be 1-{MAX_LIMIT}, not {limit}.", hint=f"Pass 1-{MAX_LIMIT}."
        )
    outcomes = log.outcomes_for(doc_id, limit=limit)
    if not outcomes:
        raise KgragError(
            ErrorCode.DOCUMENT_NOT_FOUND,
            f"No outcome recorded for {doc_id!r}.",
            hint="Distributed: a QUEUED document shows here once a worker has handled it.",
        )
    return {
        "doc_id": doc_id,
        "status": outcomes[0].status.value,
        # `at`: when the outcome was logged (each runtime's handler writes it), so an operator can tell a
        # rejection from last week from one a minute ago.
        "outcomes": [{**o.as_dict(), "at": o.at.isoformat() if o.at else None} for o in outcomes],
    }
