"""One stored document as its caller may read it: metadata and the stored body's text (GET /v1/documents/{id}).

A document the caller cannot read is DOCUMENT_NOT_FOUND, exactly like one that does not exist or was deleted:
the answer must not tell an outsider which documents exist. Citation spans are byte offsets into this text's
UTF-8 encoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kgrag_core.acl import Caller, readable_classes
from kgrag_core.documents import DocumentStatus, StoredDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.indexing.indexer import body_object_key
from kgrag_runtime.app import KgragApp


@dataclass(frozen=True, slots=True)
class DocumentView:
    doc: StoredDocument
    text: str

    def as_dict(self) -> dict[str, object]:
        doc = self.doc
        return {
            "doc_id": doc.doc_id,
            "title": doc.title,
            "source": doc.source,
            "uri": doc.uri,
            "version": doc.version,
            "modified_at": _iso(doc.modified_at),
            "media_type": doc.media_type,
            "byte_length": len(self.text.encode("utf-8")),
            "text": self.text,
        }


def read_document(kg: KgragApp, doc_id: str, caller: Caller) -> DocumentView:
    unknown = KgragError(ErrorCode.DOCUMENT_NOT_FOUND, f"No document '{doc_id}'.")
    documents = kg.searcher.documents
    doc = documents.get_document(doc_id)
    if doc is None or doc.status is not DocumentStatus.ACTIVE:
        raise unknown
    if doc.acl_class_id not in readable_classes(kg.searcher.acls.acl_classes(), caller):
        raise unknown
    if kg.body_store is None:
        raise KgragError(ErrorCode.CONFIGURATION_INVALID, "This server keeps no document bodies to show.")
    stored = kg.body_store().get(body_object_key(doc.doc_id, doc.content_hash))
    if stored is None:
        raise unknown  # deleted between the two reads
    body = stored if kg.answer_cipher is None else kg.answer_cipher.open(doc.doc_id, stored)
    if body is None:
        raise unknown  # shredded: its key is gone, so is its text
    return DocumentView(doc, body.decode("utf-8", errors="replace"))


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()
