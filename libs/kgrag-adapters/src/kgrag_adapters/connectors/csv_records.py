"""CSV files: each row a structured record, stored as a document tier 1 maps to graph items.

The header names the fields (normalised to record keys). The record type is the row's `record_type`
column, else the file stem; the document ID is `record-<type>-<key>` with the key from an `id` column,
else the first column. Optional `title` and `published_at` columns become the document's title and date.
A bad row becomes a failure with `uri=<file uri>#L<line>`; the other rows go on.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

from kgrag_adapters.connectors._common import decode_utf8, failure, failure_from, read_source
from kgrag_core.acl import PUBLIC_ACL, AclClass
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.records_text import RECORD_MEDIA_TYPE, TYPE_FIELD, field_key, render_record
from kgrag_core.validation import parse_timestamp, validate_doc_id

_METADATA_COLUMNS = frozenset({"title", "published_at"})


def iter_csv(path: Path, *, source: str = "csv", default_acl: AclClass = PUBLIC_ACL) -> Iterator[ConnectorItem]:
    """One record document per row, each with `default_acl` (the file's sidecar or folder ACL; else public)."""
    path = path.absolute()
    file_uri = path.as_uri()
    try:
        text = decode_utf8(read_source(path), path.name)
    except KgragError as err:
        yield failure_from(err, file_uri, None)
        return

    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as err:
        yield failure(f"{file_uri}#L1", None, ErrorCode.MALFORMED_EVENT, f"The header row cannot be read: {err}")
        return
    columns = [field_key(name) for name in header or []]
    if not columns or not all(columns):
        yield failure(file_uri, None, ErrorCode.MISSING_FIELD, f"{path.name} has no header row naming every column.")
        return
    if len(set(columns)) != len(columns):
        yield failure(file_uri, None, ErrorCode.MALFORMED_EVENT, f"{path.name} repeats a column name: {columns}.")
        return

    seen: set[str] = set()
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:  # a NUL byte, an over-long field: this row fails, the reader goes on
            yield failure(f"{file_uri}#L{reader.line_num}", None, ErrorCode.MALFORMED_EVENT, f"Row unreadable: {err}")
            continue
        if not any(cell.strip() for cell in row):
            continue
        where = f"{file_uri}#L{reader.line_num}"
        try:
            doc = _row_document(row, columns, path, source, file_uri, default_acl)
        except KgragError as err:
            yield failure_from(err, where, None)
            continue
        if doc.doc_id in seen:
            yield failure(where, doc.doc_id, ErrorCode.MALFORMED_EVENT, f"Key {doc.doc_id!r} repeats an earlier row.")
            continue
        seen.add(doc.doc_id)
        yield doc


def _row_document(
    row: list[str], columns: list[str], path: Path, source: str, file_uri: str, acl: AclClass
) -> SourceDocument:
    if len(row) != len(columns):
        raise KgragError(ErrorCode.MALFORMED_EVENT, f"The row has {len(row)} cells; the header has {len(columns)}.")
    values = {column: cell.strip() for column, cell in zip(columns, row, strict=True)}
    record_type = field_key(values.get(TYPE_FIELD) or path.stem)
    if not record_type:
        raise KgragError(ErrorCode.MISSING_FIELD, "The row has no record type (column record_type or file name).")
    key = values["id"] if "id" in values else values[columns[0]]
    if not key:
        raise KgragError(
            ErrorCode.MISSING_FIELD, f"The row's key column {'id' if 'id' in values else columns[0]!r} is empty."
        )
    doc_id = validate_doc_id(f"record-{record_type}-{key}")
    published_at = parse_timestamp(values.get("published_at") or None, field="published_at")
    fields = {column: value for column, value in values.items() if column not in _METADATA_COLUMNS}
    title = values.get("title") or values.get("name") or f"{record_type} {key}"
    return SourceDocument(
        doc_id=doc_id,
        source=source,
        uri=f"{file_uri}#{key}",
        title=" ".join(title.split()),
        body=render_record(record_type, fields).encode("utf-8"),
        acl=acl,
        modified_at=published_at,
        media_type=RECORD_MEDIA_TYPE,
        metadata={"published_at": published_at.isoformat()} if published_at else {},
    )
