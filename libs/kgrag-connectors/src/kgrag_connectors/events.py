"""Change events as a source system describes them: a document changed (its full current content), or
was deleted. Each carries the source's `cursor` (a sequence number, a modification time, a page token),
which the checkpoint keeps so a restarted connector resumes after the last event kgrag has taken."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Acl:
    """Who may read the document at its source. No ACL (None on the event) means everyone; an Acl with
    no groups and no users means nobody but admins (kgrag fails closed)."""

    groups: tuple[str, ...] = ()
    users: tuple[str, ...] = ()

    def as_json(self) -> dict[str, list[str]]:
        return {"groups": list(self.groups), "users": list(self.users)}


@dataclass(frozen=True, slots=True)
class DocumentChanged:
    """A document was created or changed: its whole current content (kgrag diffs it chunk by chunk)."""

    doc_id: str
    title: str
    text: str | None = None  # the body as text, or
    body: bytes | None = None  # the exact bytes (e.g. a PDF), sent base64-encoded
    source: str = "api"
    uri: str | None = None
    acl: Acl | None = None
    modified_at: datetime | None = None
    media_type: str = "text/markdown"
    cursor: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # further request fields the API may take

    def __post_init__(self) -> None:
        if (self.text is None) == (self.body is None):
            raise ValueError("a DocumentChanged carries exactly one of `text` and `body`")

    def request_body(self) -> dict[str, Any]:
        """The JSON of POST /v1/ingest/documents."""
        out: dict[str, Any] = {"doc_id": self.doc_id, "source": self.source, "title": self.title}
        if self.text is not None:
            out["text"] = self.text
        else:
            out["body_b64"] = base64.b64encode(self.body or b"").decode("ascii")
        if self.uri is not None:
            out["uri"] = self.uri
        if self.acl is not None:
            out["acl"] = self.acl.as_json()
        if self.modified_at is not None:
            out["modified_at"] = self.modified_at.isoformat()
        out["media_type"] = self.media_type
        out.update(self.extra)
        return out

    @property
    def event_id(self) -> str:
        """A digest of what the event says (not of its cursor): the same change twice has the same id."""
        return _digest("changed", self.request_body())


@dataclass(frozen=True, slots=True)
class DocumentDeleted:
    doc_id: str
    cursor: str | None = None

    @property
    def event_id(self) -> str:
        return _digest("deleted", {"doc_id": self.doc_id})


ChangeEvent = DocumentChanged | DocumentDeleted


def _digest(kind: str, body: dict[str, Any]) -> str:
    text = json.dumps([kind, body], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
