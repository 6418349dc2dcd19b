"""A watched folder's delivery state: which documents each file gave, and a fingerprint of what was
ingested, so the same file event twice (or a restart) has one effect. Pure: the state's port and the
digest; the watcher that reads files is in the runtime, the store in the adapters."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from kgrag_core.connectors import ConnectorFailure, ConnectorItem


@dataclass(frozen=True, slots=True)
class FileState:
    relative_path: str  # POSIX, relative to the watched root
    doc_ids: tuple[str, ...]  # sorted
    fingerprint: str


class WatchState(Protocol):
    """Per watched root (an absolute path), the state of every file delivered."""

    def load(self, root: str) -> dict[str, FileState]: ...

    def save(self, root: str, state: FileState) -> None: ...

    def remove(self, root: str, relative_path: str) -> None: ...


def fingerprint(items: Iterable[ConnectorItem]) -> str:
    """A digest of what ingesting these items would store: ids, titles, uris, body hashes, ACL classes,
    media types, dates and metadata of the documents, and the codes of the failures. Warnings and the time
    the file was seen are left out, so touching a file without changing it changes nothing."""
    parts: list[object] = []
    for item in items:
        if isinstance(item, ConnectorFailure):
            parts.append(["failure", item.doc_id, item.code.value, item.uri])
            continue
        parts.append(
            [
                item.doc_id,
                item.source,
                item.uri,
                item.title,
                hashlib.sha256(item.body).hexdigest(),
                item.acl.acl_class_id,
                item.media_type,
                item.modified_at.isoformat() if item.modified_at else None,
                sorted(item.metadata.items()),
            ]
        )
    parts.sort(key=lambda p: json.dumps(p, sort_keys=True, default=str))
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def unclaimed(previous: Iterable[str], states: Mapping[str, FileState]) -> list[str]:
    """The document ids among `previous` that no file's state claims any more (to delete), sorted."""
    claimed = {doc_id for s in states.values() for doc_id in s.doc_ids}
    return sorted(set(previous) - claimed)
