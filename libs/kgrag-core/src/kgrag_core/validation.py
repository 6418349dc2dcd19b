"""Validation shared by every entry point (connectors, ingest API, CLI), so all report the same codes."""

from __future__ import annotations

import unicodedata
from datetime import UTC, date, datetime

from kgrag_core.errors import ErrorCode, KgragError

MAX_DOC_ID_CHARS = 256
_BOM = "\ufeff"
# Control characters, lone surrogates and line/paragraph separators would corrupt logs, URLs and keys.
FORBIDDEN_ID_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
MAX_PRINCIPAL_NAME_CHARS = 256
# Principal names also refuse format characters (Cf: bidi overrides, zero-width joiners, soft hyphens):
# they make two different names look identical to the person granting access.
_FORBIDDEN_NAME_CATEGORIES = FORBIDDEN_ID_CATEGORIES | {"Cf"}


def decode_body(body: bytes, *, max_bytes: int) -> str:
    """Decode a document body as strict UTF-8; the text is exactly the bytes (a BOM is kept).

    Checks, in order: size (cheapest, and a huge body should not be decoded at all), UTF-8 validity,
    NUL characters, emptiness (nothing but whitespace and BOMs).
    """
    if len(body) > max_bytes:
        raise KgragError(
            ErrorCode.DOCUMENT_TOO_LARGE,
            f"The document is {len(body)} bytes; the limit is {max_bytes} bytes.",
            hint="Split the document, or raise KGRAG_MAX_DOCUMENT_BYTES.",
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise KgragError(
            ErrorCode.INVALID_UTF8,
            f"The document is not valid UTF-8: {err.reason} at byte offset {err.start}.",
            hint="Re-encode the file as UTF-8.",
        ) from err
    if "\x00" in text:
        # Valid UTF-8, but no store keeps it as text (PostgreSQL refuses NUL) and no document means it.
        raise KgragError(
            ErrorCode.MALFORMED_EVENT,
            f"The document contains a NUL character (U+0000) at byte offset {body.index(0)}.",
            hint="Remove the NUL bytes; binary files are not documents.",
        )
    if not text.replace(_BOM, "").strip():
        raise KgragError(
            ErrorCode.EMPTY_DOCUMENT,
            "The document is empty." if not body else "The document contains only whitespace.",
            hint="Add text to the document, or delete it instead.",
        )
    return text


def validate_doc_id(doc_id: str) -> str:
    """Return `doc_id` unchanged if it is a usable document ID, else raise KgragError.

    Empty or whitespace-only → MISSING_FIELD; longer than 256 characters, surrounding whitespace or
    control characters → MALFORMED_EVENT.
    """
    if not doc_id.strip():
        raise KgragError(ErrorCode.MISSING_FIELD, "The document ID is missing or blank.")
    if len(doc_id) > MAX_DOC_ID_CHARS:
        raise KgragError(
            ErrorCode.MALFORMED_EVENT,
            f"The document ID is {len(doc_id)} characters; at most {MAX_DOC_ID_CHARS} are allowed.",
        )
    if doc_id != doc_id.strip():
        raise KgragError(ErrorCode.MALFORMED_EVENT, f"The document ID {doc_id!r} has surrounding whitespace.")
    for position, char in enumerate(doc_id):
        if unicodedata.category(char) in FORBIDDEN_ID_CATEGORIES:
            raise KgragError(
                ErrorCode.MALFORMED_EVENT,
                f"The document ID {doc_id!r} has a control character (U+{ord(char):04X}) at position {position}.",
            )
    return doc_id


def validate_label(value: str, *, field: str) -> str:
    """Return a document's `title` or `uri` unchanged, or raise MALFORMED_EVENT (as for a document ID) when it
    holds a NUL or another control character, a lone surrogate or a line/paragraph separator: they corrupt
    logs, listings and links, and PostgreSQL refuses NUL, which would fail the whole batch's commit."""
    for position, char in enumerate(value):
        if unicodedata.category(char) in FORBIDDEN_ID_CATEGORIES:
            raise KgragError(
                ErrorCode.MALFORMED_EVENT,
                f"The document's {field} has a control character (U+{ord(char):04X}) at position {position}.",
                hint=f"Remove control characters from the {field}.",
            )
    return value


def validate_principal_name(name: str, *, field: str = "principal") -> str:
    """Return a user or group name unchanged if it may name a principal, else raise INVALID_PRINCIPAL.

    A name is 1-256 characters with no surrounding whitespace and no control, format, surrogate or
    line/paragraph-separator characters. The rule is what keeps an ACL class one set of readers: a
    name can never smuggle a separator or a second principal into it (docs/security.md, section 5).
    """
    if not name.strip():
        raise KgragError(ErrorCode.INVALID_PRINCIPAL, f"The {field} name is empty or blank.")
    if len(name) > MAX_PRINCIPAL_NAME_CHARS:
        raise KgragError(
            ErrorCode.INVALID_PRINCIPAL,
            f"The {field} name is {len(name)} characters; at most {MAX_PRINCIPAL_NAME_CHARS} are allowed.",
        )
    if name != name.strip():
        raise KgragError(ErrorCode.INVALID_PRINCIPAL, f"The {field} name {name!r} has surrounding whitespace.")
    for position, char in enumerate(name):
        if unicodedata.category(char) in _FORBIDDEN_NAME_CATEGORIES:
            raise KgragError(
                ErrorCode.INVALID_PRINCIPAL,
                f"The {field} name {name!r} has a control or format character (U+{ord(char):04X})"
                f" at position {position}.",
                hint="User and group names may not contain control characters, separators or invisible characters.",
            )
    return name


def parse_timestamp(value: object, *, field: str) -> datetime | None:
    """A timestamp from a source field: an ISO 8601 date or date-time string, or a date/datetime object.

    None stays None. A naive value is taken as UTC; aware values are converted to UTC. A date means
    midnight UTC. Anything else raises KgragError(MALFORMED_EVENT) naming the field.
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError as err:
            raise KgragError(
                ErrorCode.MALFORMED_EVENT,
                f"{field} {value!r} is not an ISO 8601 date or date-time.",
                hint="Use a form like 2024-05-01 or 2024-05-01T09:30:00Z.",
            ) from err
    else:
        raise KgragError(ErrorCode.MALFORMED_EVENT, f"{field} must be a date string, got {type(value).__name__}.")
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)
