"""Helpers shared by the connectors."""

from __future__ import annotations

import json
from pathlib import Path

from kgrag_core.connectors import ConnectorFailure
from kgrag_core.errors import ErrorCode, KgragError


def failure(uri: str, doc_id: str | None, code: ErrorCode, message: str) -> ConnectorFailure:
    return ConnectorFailure(uri=uri, doc_id=doc_id, code=code, message=message)


def failure_from(err: KgragError, uri: str, doc_id: str | None) -> ConnectorFailure:
    return ConnectorFailure(uri=uri, doc_id=doc_id, code=err.code, message=err.message)


def read_source(path: Path, *, max_bytes: int | None = None) -> bytes:
    """A source file's bytes; a missing, unreadable or over-large file raises its stable code."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as err:
        raise KgragError(ErrorCode.DOCUMENT_NOT_FOUND, f"{path} does not exist.") from err
    except OSError as err:
        raise KgragError(ErrorCode.SOURCE_UNREADABLE, f"{path} cannot be read: {err.strerror or err}") from err
    if max_bytes is not None and len(data) > max_bytes:
        raise KgragError(ErrorCode.DOCUMENT_TOO_LARGE, f"{path.name} is over {max_bytes} bytes.")
    return data


def decode_utf8(data: bytes, name: str) -> str:
    """UTF-8 text; a leading BOM (spreadsheet and Windows exports) is dropped."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise KgragError(ErrorCode.INVALID_UTF8, f"{name} is not UTF-8 (byte {err.start}).") from err


def load_json(data: bytes, name: str) -> object:
    try:
        return json.loads(decode_utf8(data, name))
    except json.JSONDecodeError as err:
        raise KgragError(ErrorCode.MALFORMED_JSON, f"{name} is not JSON: {err}") from err


def markdown_table(rows: list[list[str]]) -> str:
    """Rows of cell texts as a Markdown table, the first row its header; "" when every row is empty.
    Cells are joined to one line and `|` escaped, so a cell can never open a column of its own."""
    cleaned = [[" ".join(cell.split()).replace("|", "\\|") for cell in row] for row in rows]
    cleaned = [row for row in cleaned if any(row)]
    if not cleaned:
        return ""
    width = max(len(row) for row in cleaned)
    padded = [row + [""] * (width - len(row)) for row in cleaned]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + " --- |" * width]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in padded[1:]])
