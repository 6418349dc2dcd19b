"""Helpers shared by the connectors."""

from __future__ import annotations

from kgrag_core.connectors import ConnectorFailure
from kgrag_core.errors import ErrorCode, KgragError


def failure(uri: str, doc_id: str | None, code: ErrorCode, message: str) -> ConnectorFailure:
    return ConnectorFailure(uri=uri, doc_id=doc_id, code=code, message=message)


def failure_from(err: KgragError, uri: str, doc_id: str | None) -> ConnectorFailure:
    return ConnectorFailure(uri=uri, doc_id=doc_id, code=err.code, message=err.message)
