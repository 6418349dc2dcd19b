"""Word files (.docx, python-docx): paragraphs and tables in document order, rendered as Markdown.

Headings come from the paragraph styles (`Title` and `Heading 1` → `#`, `Heading N` → N `#`), lists from
the list styles (`List Bullet…` → `- `, `List Number…` → `1. `), tables become Markdown tables. The
document's core properties give the title, the author (metadata `author`), the date (modified, else
created) and `published_at` (created). The stored body is the rendering; a file that is not a Word
document gets MALFORMED_FILE.
"""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime
from typing import Any

import docx
from docx.opc.exceptions import PackageNotFoundError
from docx.table import Table
from docx.text.paragraph import Paragraph

from kgrag_adapters.connectors._common import failure, markdown_table
from kgrag_core.acl import PUBLIC_ACL, AclClass
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode

MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_PARSE_ERRORS = (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError, AttributeError)


def load_docx(
    data: bytes, *, doc_id: str, source: str, uri: str, stem: str, default_acl: AclClass = PUBLIC_ACL
) -> ConnectorItem:
    try:
        document = docx.Document(io.BytesIO(data))
        blocks = [block for item in document.iter_inner_content() if (block := _render(item))]
        props = document.core_properties
        title, author, created, modified = props.title, props.author, props.created, props.modified
    except _PARSE_ERRORS as err:
        return failure(uri, doc_id, ErrorCode.MALFORMED_FILE, f"{doc_id} is not a readable Word document: {err}")
    body = "\n\n".join(_join_lists(blocks))
    metadata: dict[str, str] = {}
    if author and author.strip():
        metadata["author"] = " ".join(author.split())
    if created is not None:
        metadata["published_at"] = _utc(created).isoformat()
    return SourceDocument(
        doc_id=doc_id,
        source=source,
        uri=uri,
        title=" ".join((title or "").split()) or _first_heading(blocks) or stem,
        body=(body + "\n").encode("utf-8") if body else b"",  # empty: the core reports EMPTY_DOCUMENT
        acl=default_acl,  # a .docx carries no reader list: its sidecar or folder ACL file gives it (else public)
        modified_at=_utc(modified) if modified is not None else (_utc(created) if created is not None else None),
        media_type=MEDIA_TYPE,
        metadata=metadata,
    )


def _render(item: Any) -> str:
    if isinstance(item, Table):
        return _table(item)
    if not isinstance(item, Paragraph):
        return ""
    text = " ".join(item.text.split())
    if not text:
        return ""
    style = (item.style.name if item.style is not None else "") or ""
    if style == "Title":
        return f"# {text}"
    if style.startswith("Heading "):
        level = style.removeprefix("Heading ").strip()
        return "#" * (int(level) if level.isdigit() and 1 <= int(level) <= 6 else 1) + " " + text
    if style.startswith("List Bullet"):
        return f"- {text}"
    if style.startswith("List Number"):
        return f"1. {text}"
    return text


def _table(table: Table) -> str:
    return markdown_table([[cell.text for cell in row.cells] for row in table.rows])


def _join_lists(blocks: list[str]) -> list[str]:
    """Consecutive list items form one list block (no blank line between them)."""
    out: list[str] = []
    for block in blocks:
        if out and block.startswith(("- ", "1. ")) and out[-1].split("\n")[-1].startswith(("- ", "1. ")):
            out[-1] += "\n" + block
        else:
            out.append(block)
    return out


def _first_heading(blocks: list[str]) -> str:
    return next((b.lstrip("#").strip() for b in blocks if b.startswith("#")), "")


def _utc(value: datetime) -> datetime:
    # python-docx reads W3CDTF dates as naive UTC.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
