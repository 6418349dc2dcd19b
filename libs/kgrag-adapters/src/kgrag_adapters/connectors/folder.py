"""Folder connector: Markdown, plain-text, e-mail, PDF, Word and HTML files, and CSV record exports, under a root
directory (docs/connectors.md lists every format).

Files come in sorted relative-path order; hidden files and directories (a name starting with `.`) are
skipped, and so are ACL sidecars (`NAME.acl.yaml`): who may read each file comes from `acl_files`.
doc_id is the relative POSIX path unless a Markdown file's front matter gives an `id`; each row of a CSV
file is a record document of its own (see `csv_records`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from kgrag_adapters.connectors._common import failure, failure_from
from kgrag_adapters.connectors.acl_files import AclFiles, is_sidecar, with_file_acl
from kgrag_adapters.connectors.docx_file import load_docx
from kgrag_adapters.connectors.email_file import load_email
from kgrag_adapters.connectors.html_file import load_html
from kgrag_adapters.connectors.markdown_file import load_markdown
from kgrag_adapters.connectors.pdf_file import load_pdf
from kgrag_adapters.connectors.slack_export import is_slack_export, iter_slack_export
from kgrag_adapters.connectors.tickets import iter_csv_export, iter_tickets
from kgrag_adapters.connectors.transcript_file import PLAIN_SUFFIX, load_plain_transcript, load_srt, load_vtt
from kgrag_core.acl import PUBLIC_ACL, AclClass
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.validation import validate_doc_id


class Loader(Protocol):
    """`default_acl`: the ACL the file has unless it names its own (acl_files: sidecar or folder ACL file)."""

    def __call__(
        self, data: bytes, *, doc_id: str, source: str, uri: str, stem: str, default_acl: AclClass = PUBLIC_ACL
    ) -> ConnectorItem: ...


def _load_text(
    data: bytes, *, doc_id: str, source: str, uri: str, stem: str, default_acl: AclClass = PUBLIC_ACL
) -> ConnectorItem:
    # Undecodable bytes are passed on untouched: the core reports INVALID_UTF8 for every entry point.
    return SourceDocument(doc_id, source, uri, stem, data, default_acl, media_type="text/plain")


LOADERS: dict[str, Loader] = {
    ".md": load_markdown,
    ".markdown": load_markdown,
    ".txt": _load_text,
    ".eml": load_email,
    ".pdf": load_pdf,
    ".docx": load_docx,
    ".html": load_html,
    ".htm": load_html,
    ".vtt": load_vtt,
    ".srt": load_srt,
}
# Whole name endings that beat the last suffix (`standup.transcript.txt` is a transcript, not plain text).
NAME_LOADERS: dict[str, Loader] = {PLAIN_SUFFIX: load_plain_transcript}
# Suffixes whose files hold many documents each.
MULTI_LOADERS = {".csv": iter_csv_export, ".json": iter_tickets}


def iter_folder(root: Path, *, source: str = "folder") -> Iterator[ConnectorItem]:
    root = root.absolute()
    if not root.is_dir():
        yield failure(root.as_uri(), None, ErrorCode.DOCUMENT_NOT_FOUND, f"{root} is not a directory.")
        return
    unreadable: list[OSError] = []
    files: list[tuple[str, Path]] = []
    exports: list[tuple[str, Path]] = []  # Slack export folders: read as a whole, not file by file
    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable.append):
        if is_slack_export(Path(dirpath)):
            exports.append((Path(dirpath).relative_to(root).as_posix().removeprefix("."), Path(dirpath)))
            dirnames[:] = []
            continue
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if not name.startswith(".") and not is_sidecar(name):
                path = Path(dirpath, name)
                files.append((path.relative_to(root).as_posix(), path))
    for err in unreadable:
        where = Path(err.filename).as_uri() if err.filename else root.as_uri()
        yield failure(where, None, ErrorCode.SOURCE_UNREADABLE, f"Cannot list {err.filename}: {err.strerror or err}")
    acl_files = AclFiles(root)
    for relative, path in sorted(files):
        yield from load_path(path, doc_id=relative, source=source, acl_files=acl_files)
    for relative, path in sorted(exports):
        yield from iter_slack_export(path, prefix=relative)


def load_path(path: Path, *, doc_id: str, source: str, acl_files: AclFiles) -> Iterator[ConnectorItem]:
    """One file's documents (a CSV file has one per row), with the ACL its sidecar or folder gives."""
    found = acl_files.for_file(path)
    many = MULTI_LOADERS.get(path.suffix.lower())
    if many is not None:
        items = many(path, source=source, default_acl=found.acl)
    else:
        items = iter([load_file(path, doc_id=doc_id, source=source, default_acl=found.acl)])
    for item in items:
        yield with_file_acl(item, found)


def loader_for(path: Path) -> Loader | None:
    name = path.name.lower()
    by_name = next((loader for ending, loader in NAME_LOADERS.items() if name.endswith(ending)), None)
    return by_name or LOADERS.get(path.suffix.lower())


def load_file(path: Path, *, doc_id: str, source: str, default_acl: AclClass = PUBLIC_ACL) -> ConnectorItem:
    """One file as a document (or a failure). `doc_id` is the default ID (front matter may override);
    `default_acl` the ACL unless the file names its own (Markdown front matter)."""
    path = path.absolute()
    uri = path.as_uri()
    loader = loader_for(path)
    if loader is None:
        supported = ", ".join(sorted([*LOADERS, *NAME_LOADERS]))
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
    return loader(data, doc_id=doc_id, source=source, uri=uri, stem=path.stem, default_acl=default_acl)
