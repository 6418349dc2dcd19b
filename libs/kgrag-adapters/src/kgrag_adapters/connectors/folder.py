"""Folder connector: Markdown, plain-text and e-mail files, and CSV record exports, under a root directory.

Files come in sorted relative-path order; hidden files and directories (a name starting with `.`) are
skipped. doc_id is the relative POSIX path unless a Markdown file's front matter gives an `id`; each row
of a CSV file is a record document of its own (see `csv_records`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from kgrag_adapters.connectors._common import failure, failure_from
from kgrag_adapters.connectors.csv_records import iter_csv
from kgrag_adapters.connectors.email_file import load_email
from kgrag_adapters.connectors.markdown_file import load_markdown
from kgrag_core.acl import acl_from_source
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.validation import validate_doc_id


class Loader(Protocol):
    def __call__(self, data: bytes, *, doc_id: str, source: str, uri: str, stem: str) -> ConnectorItem: ...


def _load_text(data: bytes, *, doc_id: str, source: str, uri: str, stem: str) -> ConnectorItem:
    # Undecodable bytes are passed on untouched: the core reports INVALID_UTF8 for every entry point.
    return SourceDocument(doc_id, source, uri, stem, data, acl_from_source(None), media_type="text/plain")


LOADERS: dict[str, Loader] = {
    ".md": load_markdown,
    ".markdown": load_markdown,
    ".txt": _load_text,
    ".eml": load_email,
}
# Suffixes whose files hold many documents each.
MULTI_LOADERS = {".csv": iter_csv}


def iter_folder(root: Path, *, source: str = "folder") -> Iterator[ConnectorItem]:
    root = root.absolute()
    if not root.is_dir():
        yield failure(root.as_uri(), None, ErrorCode.DOCUMENT_NOT_FOUND, f"{root} is not a directory.")
        return
    unreadable: list[OSError] = []
    files: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable.append):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if not name.startswith("."):
                path = Path(dirpath, name)
                files.append((path.relative_to(root).as_posix(), path))
    for err in unreadable:
        where = Path(err.filename).as_uri() if err.filename else root.as_uri()
        yield failure(where, None, ErrorCode.SOURCE_UNREADABLE, f"Cannot list {err.filename}: {err.strerror or err}")
    for relative, path in sorted(files):
        many = MULTI_LOADERS.get(path.suffix.lower())
        if many is not None:
            yield from many(path, source=source)
        else:
            yield load_file(path, doc_id=relative, source=source)


def load_file(path: Path, *, doc_id: str, source: str) -> ConnectorItem:
    """One file as a document (or a failure). `doc_id` is the default ID (front matter may override)."""
    path = path.absolute()
    uri = path.as_uri()
    loader = LOADERS.get(path.suffix.lower())
    if loader is None:
        supported = ", ".join(sorted(LOADERS))
        return failure(
            uri,
            doc_id,
            ErrorCode.UNSUPPORTED_FILE_TYPE,
            f"{doc_id}: unsupported file type {path.suffix or '(no extension)'!r}; supported: {supported}.",
        )
    try:
        validate_doc_id(doc_id)
    except KgragError as err:
        return failure_from(err, uri, doc_id)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return failure(uri, doc_id, ErrorCode.DOCUMENT_NOT_FOUND, f"{doc_id} disappeared before it was read.")
    except OSError as err:
        return failure(uri, doc_id, ErrorCode.SOURCE_UNREADABLE, f"{doc_id} cannot be read: {err.strerror or err}")
    return loader(data, doc_id=doc_id, source=source, uri=uri, stem=path.stem)
