"""The request fields' character rules as OpenAPI patterns, built from the same predicates the core applies.

A pattern and its check must accept exactly the same strings (a fuzzer sends schema-valid values and
expects them accepted, and schema-invalid ones and expects them refused), so the character classes are
computed from `str.isspace` and the core's Unicode categories rather than written out by hand. Patterns
use Python `re` semantics (the request models set `regex_engine="python-re"`) and end with `(?![\\s\\S])`
instead of `$`, which would also match before a trailing newline.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Callable
from typing import Annotated

from fastapi import Path

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.validation import FORBIDDEN_ID_CATEGORIES, MAX_DOC_ID_CHARS

_END = r"(?![\s\S])"


def _class(predicate: Callable[[str], bool]) -> str:
    """A regex character-class body (ranges of \\uXXXX / \\UXXXXXXXX escapes) of every code point matching."""
    parts: list[str] = []
    start: int | None = None
    for cp in range(sys.maxunicode + 2):
        inside = cp <= sys.maxunicode and predicate(chr(cp))
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            end = cp - 1
            parts.append(_esc(start) if start == end else f"{_esc(start)}-{_esc(end)}")
            start = None
    return "".join(parts)


def _esc(cp: int) -> str:
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


# Lone surrogates (category Cs) are refused too, but by `has_lone_surrogate`: a surrogate range is not a
# valid character class for the Rust regex engines OpenAPI tools use, and no valid UTF-8 text holds one.
_FORBIDDEN_IN_IDS = _class(lambda c: unicodedata.category(c) in FORBIDDEN_ID_CATEGORIES - {"Cs"})
_SPACE = _class(str.isspace)
# Text (queries, names, titles) may hold anything PostgreSQL and UTF-8 can: no NUL (and no lone surrogate).
_FORBIDDEN_IN_TEXT = r"\u0000"

DOC_ID = f"^[^{_FORBIDDEN_IN_IDS}{_SPACE}](?:[^{_FORBIDDEN_IN_IDS}]*[^{_FORBIDDEN_IN_IDS}{_SPACE}])?{_END}"
"""A document ID as `kgrag_core.validation.validate_doc_id` accepts it (length is a separate maxLength)."""

TEXT = f"^[^{_FORBIDDEN_IN_TEXT}]*[^{_FORBIDDEN_IN_TEXT}{_SPACE}][^{_FORBIDDEN_IN_TEXT}]*{_END}"
"""Free text that is not blank: a query, a question, a name."""

BODY_TEXT = f"^[^{_FORBIDDEN_IN_TEXT}]*[^{_FORBIDDEN_IN_TEXT}{_SPACE}\\ufeff][^{_FORBIDDEN_IN_TEXT}]*{_END}"
"""A document body as text: something besides whitespace and byte-order marks (else EMPTY_DOCUMENT)."""

OPTIONAL_TEXT = f"^[^{_FORBIDDEN_IN_TEXT}]*{_END}"
"""Free text that may be empty or blank (a title)."""

LABEL = f"^[^{_FORBIDDEN_IN_IDS}]*{_END}"
"""A document's title or uri, as `kgrag_core.validation.validate_label` accepts it: no control characters."""

SOURCE = f"^[^{_FORBIDDEN_IN_IDS}]*[^{_FORBIDDEN_IN_IDS}{_SPACE}][^{_FORBIDDEN_IN_IDS}]*{_END}"
"""A document's source: not blank, no control characters (it is also the default uri's scheme)."""

KEY = f"^[A-Za-z0-9][A-Za-z0-9_.:-]*{_END}"
"""A server-made identifier: entity, merge and run IDs (ent_…, mrg_…, run-…)."""

MAX_KEY_CHARS = 128
MAX_DOC_ID = MAX_DOC_ID_CHARS


def has_lone_surrogate(value: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in value)


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def check(value: str, pattern: str, *, field: str, max_chars: int, code: ErrorCode = ErrorCode.MALFORMED_EVENT) -> str:
    """Validate a value by its published pattern, raising `code` (used where a field's stable code is not
    MALFORMED_EVENT, and for path and query parameters, which FastAPI checks with another regex engine)."""
    if len(value) > max_chars:
        raise KgragError(ErrorCode.LIMIT_EXCEEDED, f"{field} has {len(value)} characters; at most {max_chars}.")
    if has_lone_surrogate(value) or not _compiled(pattern).search(value):
        raise KgragError(
            code,
            f"{field} {value!r} has a character it may not hold (a control character, NUL, lone surrogate, or"
            " surrounding whitespace), or is blank.",
        )
    return value


# A document ID in a URL path ({doc_id:path}: it may contain "/"), checked against the same rules.
DocIdPath = Annotated[str, Path(max_length=MAX_DOC_ID, json_schema_extra={"pattern": DOC_ID})]
