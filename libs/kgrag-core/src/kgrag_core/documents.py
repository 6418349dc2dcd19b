"""Documents and chunks: the evidence layer every other index points back to."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from kgrag_core.acl import AclClass


class DocumentStatus(StrEnum):
    ACTIVE = "ACTIVE"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class SourceDocument:
    """A document as a connector or the ingest API delivers it, before validation.

    `body` is raw bytes: validation (UTF-8, size, emptiness) happens in the core, so every entry point
    reports the same error codes.
    """

    doc_id: str
    source: str
    uri: str
    title: str
    body: bytes
    acl: AclClass
    modified_at: datetime | None = None
    media_type: str = "text/markdown"
    metadata: dict[str, str] = field(default_factory=dict)
    observed_at: datetime | None = None  # when the producer saw this change: orders it against deletions
    # What the connector noticed but did not reject (a misspelt front-matter key, an unclosed block), for the
    # person who runs the ingest; not part of the document, so it never changes its identity or its hash.
    warnings: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True, slots=True)
class StoredDocument:
    doc_id: str
    source: str
    uri: str
    title: str
    version: int
    content_hash: str
    acl_class_id: str
    modified_at: datetime | None
    status: DocumentStatus
    media_type: str = "text/markdown"
    byte_length: int = 0
    observed_at: datetime | None = None  # the newest change event applied
    deleted_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    """What the chunker returns: a byte span of the document plus its place in the outline."""

    seq: int
    start_byte: int
    end_byte: int
    breadcrumb: tuple[str, ...]
    kind: str  # paragraph | list | code | table | heading | mixed


@dataclass(frozen=True, slots=True)
class Chunk:
    """A stored chunk. `text` is exactly the document's UTF-8 bytes [start_byte, end_byte) (invariant 1)."""

    chunk_id: str
    doc_id: str
    seq: int
    breadcrumb: tuple[str, ...]
    start_byte: int
    end_byte: int
    text: str
    token_count: int
    content_hash: str
    acl_class_id: str
    doc_time: datetime | None = None

    @property
    def section_path(self) -> str:
        return " > ".join(self.breadcrumb)
