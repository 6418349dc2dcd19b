"""Versioned event payloads (pydantic models; their JSON Schemas are exported under `schemas/events/`)."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kgrag_core.acl import AclClass
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.shredding import ContentCipher, Sealer

DOCUMENTS_CHANGED = "documents.changed"
DOCUMENTS_DELETED = "documents.deleted"
CHUNKS_CHANGED = "chunks.changed"
ACL_CHANGED = "acl.changed"
GRAPH_CHANGED = "graph.changed"
ENTITIES_CHANGED = "entities.changed"


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: Literal[1] = 1


class DocumentChanged(_Event):
    """A document was created or changed at its source. The body travels base64-encoded so that the
    core, not the transport, decides whether its bytes are valid UTF-8."""

    event_type: Literal["documents.changed"] = "documents.changed"
    doc_id: str = Field(min_length=1, max_length=256)
    source: str = Field(min_length=1, max_length=128)
    uri: str = Field(max_length=4096)
    title: str = Field(max_length=1024)
    body_b64: str
    acl_principals: list[str]
    acl_malformed: bool = False
    modified_at: datetime | None = None
    media_type: str = "text/markdown"
    metadata: dict[str, str] = Field(default_factory=dict)
    observed_at: datetime | None = Field(None, description="When the producer saw the change (UTC).")
    sealed_b64: str | None = Field(
        None,
        description="Title, URI, body and metadata sealed under the document's data key (ADR 0008); when set, "
        "those fields are empty, so the topic's log holds ciphertext that a deletion shreds.",
    )


class DocumentDeleted(_Event):
    event_type: Literal["documents.deleted"] = "documents.deleted"
    doc_id: str = Field(min_length=1, max_length=256)
    reason: str = ""
    observed_at: datetime | None = Field(None, description="When the deletion was requested (UTC).")


class ChunksChanged(_Event):
    """A document's chunks in PostgreSQL changed (indexed, re-indexed, re-permissioned or deleted: then
    `chunk_ids` is empty). Consumers re-read the store; the event only says which document to look at."""

    event_type: Literal["chunks.changed"] = "chunks.changed"
    doc_id: str
    version: int
    chunk_ids: list[str]


class AclChanged(_Event):
    """A document's readers changed at its source. Consumers fail closed: the authoritative store is
    updated first, so until every projection has the new class the final recheck hides the chunks
    from anyone who lost access, and anyone who gained it waits for the projections."""

    event_type: Literal["acl.changed"] = "acl.changed"
    doc_id: str = Field(min_length=1, max_length=256)
    acl_principals: list[str]
    acl_malformed: bool = False


class GraphChanged(_Event):
    """The extractor stored a document's facts (or found none): entity resolution and the graph projection
    follow. Like chunks.changed it names the document only; consumers re-read PostgreSQL."""

    event_type: Literal["graph.changed"] = "graph.changed"
    doc_id: str = Field(min_length=1, max_length=256)
    items: int = Field(0, ge=0, description="Validated items stored for the document's chunks.")


class EntitiesChanged(_Event):
    """Resolution changed which canonical entity these ids belong to (a merge, split or review decision),
    or (hubs) relabelled the hubs. Projections re-read PostgreSQL for the named clusters."""

    event_type: Literal["entities.changed"] = "entities.changed"
    entity_ids: list[str] = Field(default_factory=list)
    reason: str = Field("", max_length=64, description="merge | split | review | hubs")
    hubs: bool = False


def document_changed_from_source(doc: SourceDocument, sealer: Sealer | None = None) -> DocumentChanged:
    """The event for a document; with `sealer` (the document's, ADR 0008) its content travels sealed."""
    body_b64 = base64.b64encode(doc.body).decode("ascii")
    sealed_b64 = None
    if sealer is not None:
        content = {"title": doc.title, "uri": doc.uri, "body_b64": body_b64, "metadata": dict(doc.metadata)}
        sealed_b64 = base64.b64encode(sealer(json.dumps(content).encode("utf-8"))).decode("ascii")
    return DocumentChanged(
        doc_id=doc.doc_id,
        source=doc.source,
        uri="" if sealer else doc.uri,
        title="" if sealer else doc.title,
        body_b64="" if sealer else body_b64,
        acl_principals=[p for p in doc.acl.principals],
        acl_malformed=doc.acl.malformed,
        modified_at=doc.modified_at,
        media_type=doc.media_type,
        metadata={} if sealer else dict(doc.metadata),
        observed_at=doc.observed_at or datetime.now(UTC),
        sealed_b64=sealed_b64,
    )


def _opened(event: DocumentChanged, cipher: ContentCipher | None) -> DocumentChanged:
    if event.sealed_b64 is None:
        return event
    if cipher is None:
        raise KgragError(ErrorCode.MALFORMED_EVENT, "A sealed event reached a consumer without a cipher.")
    try:
        sealed = base64.b64decode(event.sealed_b64, validate=True)
        plain = cipher.open(event.doc_id, sealed)
    except (binascii.Error, ValueError) as err:
        raise KgragError(ErrorCode.MALFORMED_EVENT, f"sealed_b64 does not open: {err}") from err
    if plain is None:
        raise KgragError(
            ErrorCode.CONTENT_SHREDDED, f"Document {event.doc_id!r} was deleted: the event's key is destroyed."
        )
    try:
        content = json.loads(plain)
        return event.model_copy(
            update={
                "title": str(content["title"]),
                "uri": str(content["uri"]),
                "body_b64": str(content["body_b64"]),
                "metadata": {str(k): str(v) for k, v in dict(content["metadata"]).items()},
                "sealed_b64": None,
            }
        )
    except (ValueError, KeyError, TypeError) as err:
        raise KgragError(ErrorCode.MALFORMED_EVENT, f"sealed content is malformed: {err}") from err


def source_from_document_changed(event: DocumentChanged, cipher: ContentCipher | None = None) -> SourceDocument:
    event = _opened(event, cipher)
    try:
        body = base64.b64decode(event.body_b64, validate=True)
    except (binascii.Error, ValueError) as err:
        raise KgragError(ErrorCode.MALFORMED_EVENT, f"body_b64 is not valid base64: {err}") from err
    return SourceDocument(
        doc_id=event.doc_id,
        source=event.source,
        uri=event.uri,
        title=event.title,
        body=body,
        acl=AclClass.of(event.acl_principals, malformed=event.acl_malformed),
        modified_at=event.modified_at,
        media_type=event.media_type,
        metadata=dict(event.metadata),
        observed_at=event.observed_at,
    )
