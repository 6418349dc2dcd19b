"""Traces and feedback as the core sees them; `TraceStore` (kgrag_core.ports) keeps them.

A trace belongs to the principal that ran the query: it is readable by that principal and by admins, and
to anyone else it does not exist (the same TRACE_NOT_FOUND as an unknown id). Its body holds ids, hashes,
counts, scores and timings, never document text (kgrag_core.tracing.build), so deleting a document leaves
nothing of its content in any trace.
"""

from __future__ import annotations

import secrets
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from kgrag_core.acl import Caller
from kgrag_core.errors import ErrorCode, KgragError

TRACE_PREFIX = "tr_"
FEEDBACK_PREFIX = "fb_"
MIN_RATING = 1
MAX_RATING = 5
MAX_COMMENT_CHARS = 2000
ANONYMOUS = "anonymous"


class TraceKind(StrEnum):
    SEARCH = "search"
    ASK = "ask"


class FeedbackIssue(StrEnum):
    WRONG_ENTITY = "WRONG_ENTITY"
    MISSING_SOURCE = "MISSING_SOURCE"
    UNSUPPORTED_CLAIM = "UNSUPPORTED_CLAIM"
    OUTDATED = "OUTDATED"
    OTHER = "OTHER"


class FeedbackStatus(StrEnum):
    OPEN = "open"
    RESOLVED = "resolved"


def owner_of(caller: Caller) -> str:
    """The principal a trace belongs to: its user (token `sub`, CLI --principal), or `anonymous`."""
    return f"user:{caller.user}" if caller.user else ANONYMOUS


def new_trace_id() -> str:
    """Random, not derived from the query: two runs of one query are two traces, and ids are unguessable."""
    return TRACE_PREFIX + secrets.token_hex(16)


def new_feedback_id() -> str:
    return FEEDBACK_PREFIX + secrets.token_hex(12)


@dataclass(frozen=True, slots=True)
class Trace:
    trace_id: str
    kind: TraceKind
    owner: str
    created_at: datetime
    body: Mapping[str, object]

    def readable_by(self, caller: Caller) -> bool:
        return caller.admin or owner_of(caller) == self.owner

    def as_dict(self) -> dict[str, object]:
        return {
            "trace_id": self.trace_id,
            "kind": self.kind.value,
            "owner": self.owner,
            "created_at": self.created_at.isoformat(),
            **self.body,
        }


def trace_not_found(trace_id: str) -> KgragError:
    """One answer for "no such trace" and "not yours": the two must not be told apart."""
    return KgragError(
        ErrorCode.TRACE_NOT_FOUND,
        f"No trace {trace_id!r} you may read.",
        hint="A trace id comes back in every search and ask response (`trace_id`); traces expire after "
        "KGRAG_TRACE_RETENTION_DAYS.",
    )


@dataclass(frozen=True, slots=True)
class Feedback:
    feedback_id: str
    trace_id: str
    author: str
    rating: int
    issue: FeedbackIssue | None
    comment: str
    created_at: datetime
    status: FeedbackStatus = FeedbackStatus.OPEN
    resolved_by: str | None = None
    resolved_at: datetime | None = None
    resolution: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "feedback_id": self.feedback_id,
            "trace_id": self.trace_id,
            "author": self.author,
            "rating": self.rating,
            "issue": self.issue.value if self.issue else None,
            "comment": self.comment,
            "created_at": self.created_at.isoformat(),
            "status": self.status.value,
            "resolved_by": self.resolved_by,
            "resolved_at": self.resolved_at.isoformat() if self.resolved_at else None,
            "resolution": self.resolution,
        }


def _invalid(message: str, hint: str | None = None) -> KgragError:
    return KgragError(ErrorCode.INVALID_FEEDBACK, message, hint=hint)


def parse_rating(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_RATING <= value <= MAX_RATING:
        raise _invalid(f"rating must be a whole number {MIN_RATING}-{MAX_RATING}, got {value!r}.", "1 worst, 5 best.")
    return value


def parse_issue(value: object) -> FeedbackIssue | None:
    if value is None:
        return None
    if isinstance(value, str) and value in FeedbackIssue.__members__:
        return FeedbackIssue(value)
    raise _invalid(
        f"issue {value!r} is not one of {', '.join(i.value for i in FeedbackIssue)}.",
        "Leave it out when nothing in particular was wrong.",
    )


def parse_comment(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _invalid(f"comment must be text, got {type(value).__name__}.")
    if len(value) > MAX_COMMENT_CHARS:
        raise _invalid(f"comment has {len(value)} characters; at most {MAX_COMMENT_CHARS}.")
    for char in value:
        # Lone surrogates and NUL cannot be stored; other control characters (tabs, newlines) are fine.
        if char == "\x00" or unicodedata.category(char) == "Cs":
            raise _invalid(f"comment holds a character no store can keep (U+{ord(char):04X}).")
    return value


def new_feedback(
    trace: Trace, caller: Caller, *, rating: object, issue: object, comment: object, now: datetime
) -> Feedback:
    """Feedback on a trace the caller may read (else TRACE_NOT_FOUND); bad fields are INVALID_FEEDBACK."""
    if not trace.readable_by(caller):
        raise trace_not_found(trace.trace_id)
    return Feedback(
        feedback_id=new_feedback_id(),
        trace_id=trace.trace_id,
        author=owner_of(caller),
        rating=parse_rating(rating),
        issue=parse_issue(issue),
        comment=parse_comment(comment),
        created_at=now,
    )
