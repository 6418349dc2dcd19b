"""Helpers shared by the connectors."""

from __future__ import annotations

from kgrag_core.connectors import ConnectorFailure
from kgrag_core.errors import ErrorCode, KgragError


def failure(uri: str, doc_id: str | None, code: ErrorCode, message: str) -> ConnectorFailure:
    return ConnectorFailure(uri=uri, doc_id=doc_id, code=code, message=message)


def failure_from(err: KgragError, uri: str, doc_id: str | None) -> ConnectorFailure:
    return ConnectorFailure(uri=uri, doc_id=doc_id, code=err.code, message=err.message)


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
