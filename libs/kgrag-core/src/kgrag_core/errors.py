"""Stable error codes.

Codes are part of the public contract (CLI `--json`, HTTP bodies, the ingest log): never rename one, only add.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    INVALID_UTF8 = "INVALID_UTF8"
    EMPTY_DOCUMENT = "EMPTY_DOCUMENT"
    DOCUMENT_TOO_LARGE = "DOCUMENT_TOO_LARGE"
    MALFORMED_JSON = "MALFORMED_JSON"
    MALFORMED_EVENT = "MALFORMED_EVENT"
    MISSING_FIELD = "MISSING_FIELD"
    UNSUPPORTED_FILE_TYPE = "UNSUPPORTED_FILE_TYPE"
    SOURCE_UNREADABLE = "SOURCE_UNREADABLE"
    MALFORMED_EMAIL = "MALFORMED_EMAIL"
    DOCUMENT_NOT_FOUND = "DOCUMENT_NOT_FOUND"
    EMBEDDING_FAILED = "EMBEDDING_FAILED"
    INDEX_WRITE_FAILED = "INDEX_WRITE_FAILED"
    LLM_UNAVAILABLE = "LLM_UNAVAILABLE"
    INSUFFICIENT_EVIDENCE = "INSUFFICIENT_EVIDENCE"
    QUOTE_NOT_FOUND = "QUOTE_NOT_FOUND"
    INVALID_QUERY = "INVALID_QUERY"
    LIMIT_EXCEEDED = "LIMIT_EXCEEDED"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    FORBIDDEN = "FORBIDDEN"
    DATA_DIR_LOCKED = "DATA_DIR_LOCKED"
    DATA_DIR_NOT_FOUND = "DATA_DIR_NOT_FOUND"
    CONFIGURATION_INVALID = "CONFIGURATION_INVALID"
    ONTOLOGY_INVALID = "ONTOLOGY_INVALID"
    EXTRACTION_REPLY_INVALID = "EXTRACTION_REPLY_INVALID"
    RUN_NOT_FOUND = "RUN_NOT_FOUND"
    LLM_RATE_LIMITED = "LLM_RATE_LIMITED"
    ENTITY_NOT_FOUND = "ENTITY_NOT_FOUND"
    COMMUNITY_NOT_FOUND = "COMMUNITY_NOT_FOUND"
    BROKER_UNAVAILABLE = "BROKER_UNAVAILABLE"
    INVALID_PRINCIPAL = "INVALID_PRINCIPAL"
    ACL_CLASS_CONFLICT = "ACL_CLASS_CONFLICT"
    NOT_FOUND = "NOT_FOUND"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    CONTENT_SHREDDED = "CONTENT_SHREDDED"
    INTERNAL = "INTERNAL"
    TRACE_NOT_FOUND = "TRACE_NOT_FOUND"
    INVALID_FEEDBACK = "INVALID_FEEDBACK"
    FEEDBACK_NOT_FOUND = "FEEDBACK_NOT_FOUND"
    # Connectors of binary and structured formats (issue 14).
    MALFORMED_FILE = "MALFORMED_FILE"  # a PDF, Word, HTML, transcript, ticket or chat export that cannot be read
    NO_TEXT_LAYER = "NO_TEXT_LAYER"  # a PDF with no text to extract (a scan): OCR it first
    INVALID_FILTER = "INVALID_FILTER"  # an inverted date range, an unknown source (POST /v1/ask, /v1/search)


class KgragError(Exception):
    """An error with a stable code and a hint that tells the user what to do next."""

    def __init__(self, code: ErrorCode, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint

    def as_dict(self) -> dict[str, str]:
        out = {"code": self.code.value, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        return out
