"""Records of what ingestion did, one per document event."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from kgrag_core.errors import ErrorCode
from kgrag_core.shredding import StorePurge


class IngestStatus(StrEnum):
    INDEXED = "INDEXED"
    UPDATED = "UPDATED"
    UNCHANGED = "UNCHANGED"
    DELETED = "DELETED"
    REJECTED = "REJECTED"
    QUEUED = "QUEUED"  # accepted onto the event bus; the workers index it asynchronously
    ACL_UPDATED = "ACL_UPDATED"


@dataclass(frozen=True, slots=True)
class IngestOutcome:
    doc_id: str
    status: IngestStatus
    source: str = ""
    uri: str = ""
    error_code: ErrorCode | None = None
    message: str = ""
    chunks_total: int = 0
    chunks_embedded: int = 0
    chunks_removed: int = 0
    at: datetime | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "doc_id": self.doc_id,
            "status": self.status.value,
            "source": self.source,
            "uri": self.uri,
            "error_code": self.error_code.value if self.error_code else None,
            "message": self.message,
            "chunks_total": self.chunks_total,
            "chunks_embedded": self.chunks_embedded,
            "chunks_removed": self.chunks_removed,
        }


@dataclass(frozen=True, slots=True)
class DeletionRecord:
    """An audit record of everything a deletion removed (invariant 3)."""

    doc_id: str
    chunk_ids: tuple[str, ...]
    object_keys: tuple[str, ...]
    stores: tuple[str, ...]
    at: datetime | None = None
    # per store: purged / shredded / deleted / failed, with when (the compliance trail of ADR 0008)
    purges: tuple[StorePurge, ...] = ()
    # the communities the deletion made stale, in its own transaction (summaries fail closed on them)
    communities: tuple[str, ...] = ()


def no_active_document(doc_id: str) -> IngestOutcome:
    """The one answer, on every runtime, to a delete or ACL change of an ID with no active document."""
    message = f"No active document {doc_id!r}."
    return IngestOutcome(doc_id, IngestStatus.REJECTED, error_code=ErrorCode.DOCUMENT_NOT_FOUND, message=message)
