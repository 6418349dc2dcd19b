"""The error responses every operation documents in OpenAPI, with the one body shape they all share.

An operation lists each status it can answer, so a client (and the schema fuzzer in the test suite)
knows them all: 401 and 403 for every authenticated call, 422 for a request the server refuses, 503
when a store or model is unavailable (retry later), and the lookups' 404s.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class ErrorDetail(BaseModel):
    code: str
    message: str
    hint: str | None = None


class ErrorBody(BaseModel):
    """Every error: a stable `code` (never renamed), a message, and what to do next."""

    error: ErrorDetail


_MEANING = {
    401: "No bearer token, or one that did not verify (UNAUTHENTICATED).",
    403: "The token lacks the scope this operation needs (FORBIDDEN).",
    404: "No such document, entity, merge, run, trace or feedback that the caller may see (…_NOT_FOUND).",
    409: "The request conflicts with what is stored (ACL_CLASS_CONFLICT).",
    413: "The document is larger than KGRAG_MAX_DOCUMENT_BYTES (DOCUMENT_TOO_LARGE).",
    415: "The document's media type cannot be indexed (UNSUPPORTED_FILE_TYPE).",
    422: "The request is malformed or over a limit (MALFORMED_EVENT, MALFORMED_JSON, LIMIT_EXCEEDED, …).",
    503: "A store, the embedding model or the LLM is unavailable; retrying later is safe.",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route or router: these statuses, each with the shared error body."""
    return {s: {"model": ErrorBody, "description": _MEANING[s]} for s in statuses}


AUTHENTICATED = errors(401, 403, 422, 503)
"""What every authenticated operation may answer besides its success."""
