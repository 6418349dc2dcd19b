"""JSON Lines files: one document per line.

`{"id", "title", "text", "source"?, "uri"?, "published_at"?, "acl"?: {"groups": [...], "users": [...]}}`
A structured record comes as `"record": {"type": "person", "fields": {"name": ..., "team": [...]}}` instead of
`"text"`: its body is the record rendered one `field: value` line per field (media type
`text/x-kgrag-record`), which tier 1 maps to graph items and search indexes like any text.
Each bad line becomes a failure with `uri=<path>#L<line>`; the other lines go on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

from kgrag_adapters.connectors._common import failure, failure_from
from kgrag_core.acl import PRIVATE_ACL, acl_from_source
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.records_text import RECORD_MEDIA_TYPE, render_record
from kgrag_core.validation import parse_timestamp, validate_doc_id

MEDIA_TYPE = "text/markdown"


def iter_jsonl(path: Path, *, default_source: str = "jsonl") -> Iterator[ConnectorItem]:
    try:
        handle = path.open("rb")  # bytes: a line that is not UTF-8 must fail alone, not the whole file
    except FileNotFoundError:
        yield failure(str(path), None, ErrorCode.DOCUMENT_NOT_FOUND, f"{path} does not exist.")
        return
    except OSError as err:
        yield failure(str(path), None, ErrorCode.SOURCE_UNREADABLE, f"{path} cannot be read: {err.strerror or err}")
        return
    with handle:
        for lineno, raw in enumerate(handle, start=1):
            if raw.strip():
                yield _item(raw, path, lineno, default_source)


def _item(raw: bytes, path: Path, lineno: int, default_source: str) -> ConnectorItem:
    where = f"{path}#L{lineno}"
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return failure(where, None, ErrorCode.INVALID_UTF8, f"Line {lineno} is not UTF-8 (byte {err.start}).")
    if lineno == 1:
        line = line.removeprefix("\ufeff")  # editors on Windows save UTF-8 with a BOM; json.loads rejects it
    try:
        record = json.loads(line)
    except (ValueError, RecursionError) as err:  # RecursionError: absurdly deep nesting
        return failure(where, None, ErrorCode.MALFORMED_JSON, f"Line {lineno} is not valid JSON: {err}")
    if not isinstance(record, dict):
        return failure(where, None, ErrorCode.MALFORMED_JSON, f"Line {lineno} is not a JSON object.")
    raw_id = record.get("id")
    doc_id = raw_id if isinstance(raw_id, str) else None
    try:
        return _document(record, path, default_source)
    except KgragError as err:
        return failure_from(err, where, doc_id)


def _document(record: Mapping[str, object], path: Path, default_source: str) -> SourceDocument:
    doc_id = validate_doc_id(_required_text(record, "id"))
    title = _required_text(record, "title")
    media_type = MEDIA_TYPE
    text: object
    if "record" in record:
        if "text" in record:
            raise KgragError(ErrorCode.MALFORMED_EVENT, "A line has either 'text' or 'record', not both.")
        text = _record_text(record["record"])
        media_type = RECORD_MEDIA_TYPE
    else:
        text = record.get("text")
    if not isinstance(text, str):
        raise KgragError(ErrorCode.MISSING_FIELD, "Field 'text' is missing or not a string.")
    try:
        body = text.encode("utf-8")
    except UnicodeEncodeError as err:  # JSON "\ud800" escapes decode to lone surrogates
        raise KgragError(
            ErrorCode.INVALID_UTF8, f"Field 'text' holds a lone surrogate at character {err.start}."
        ) from err
    published_at = parse_timestamp(record.get("published_at"), field="published_at")
    # No `acl` key: public. `"acl": null` or any malformed value: private (acl_from_source decides the rest).
    acl = PRIVATE_ACL if "acl" in record and record["acl"] is None else acl_from_source(record.get("acl"))
    metadata = {"published_at": published_at.isoformat()} if published_at else {}
    return SourceDocument(
        doc_id=doc_id,
        source=_optional_text(record, "source") or default_source,
        uri=_optional_text(record, "uri") or f"jsonl://{path.name}/{doc_id}",
        title=" ".join(title.split()),
        body=body,
        acl=acl,
        modified_at=published_at,
        media_type=media_type,
        metadata=metadata,
    )


def _record_text(raw: object) -> str:
    if not isinstance(raw, Mapping):
        raise KgragError(ErrorCode.MALFORMED_EVENT, "Field 'record' must be an object with 'type' and 'fields'.")
    kind = raw.get("type")
    if not isinstance(kind, str) or not kind.strip():
        raise KgragError(ErrorCode.MISSING_FIELD, "Field 'record.type' is missing, empty or not a string.")
    fields = raw.get("fields")
    if not isinstance(fields, Mapping) or not fields:
        raise KgragError(ErrorCode.MISSING_FIELD, "Field 'record.fields' is missing, empty or not an object.")
    values: dict[str, str | list[str]] = {}
    for name, value in fields.items():
        if isinstance(value, list):
            values[name] = [_record_scalar(name, item) for item in value]
        elif value is not None:
            values[name] = _record_scalar(name, value)
    try:
        return render_record(kind, values)
    except ValueError as err:
        raise KgragError(ErrorCode.MALFORMED_EVENT, f"Field 'record.type': {err}.") from err


def _record_scalar(name: str, value: object) -> str:
    # Numbers are written as JSON has them; objects and booleans have no agreed one-line rendering.
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return json.dumps(value)
    raise KgragError(ErrorCode.MALFORMED_EVENT, f"Record field {name!r} must be a string, a number or a list of them.")


def _required_text(record: Mapping[str, object], key: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise KgragError(ErrorCode.MISSING_FIELD, f"Field {key!r} is missing, empty or not a string.")
    return value


def _optional_text(record: Mapping[str, object], key: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise KgragError(ErrorCode.MALFORMED_EVENT, f"Field {key!r} must be a non-empty string.")
    return value
