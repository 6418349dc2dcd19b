"""FastAPI application: thin HTTP over the app's use cases.

Identity comes only from the verified bearer token. The embedded app holds single-writer indexes, so
calls into it are serialised with a lock; the distributed deployment scales by running more processes.
"""


import base64
import threading
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import Depends, FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from kgrag_core.acl import acl_from_source
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ingest import IngestStatus
from kgrag_query_api.auth import Principal, TokenVerifier
from kgrag_query_api.schemas import AskRequest, IngestDocumentRequest, SearchRequest
from kgrag_runtime.app import KgragApp

T = TypeVar("T")

_STATUS = {
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.DOCUMENT_NOT_FOUND: 404,
    ErrorCode.LIMIT_EXCEEDED: 422,
    ErrorCode.INVALID_QUERY: 422,
    ErrorCode.MALFORMED_EVENT: 422,
    ErrorCode.MISSING_FIELD: 422,
    ErrorCode.INVALID_UTF8: 422,
    ErrorCode.EMPTY_DOCUMENT: 422,
    ErrorCode.DOCUMENT_TOO_LARGE: 413,
    ErrorCode.LLM_UNAVAILABLE: 503,
}


def create_app(kg: KgragApp, verifier: TokenVerifier) -> FastAPI:
    api = FastAPI(
        title="kgrag",
        version="0.1.0",
        description="Knowledge-graph + RAG hybrid search: search, cited answers, ingestion change events. "
        "Every call needs a bearer token; what you can see follows the token's user and groups.",
    )
    lock = threading.Lock()

    def run(fn: Callable[[], T]) -> T:
        with lock:
            return fn()

    def principal(authorization: Annotated[str | None, Header()] = None) -> Principal:
        return verifier.verify(authorization)

    Caller = Annotated[Principal, Depends(principal)]

    @api.exception_handler(KgragError)
    async def kgrag_error(_: Request, err: KgragError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if err.code is ErrorCode.UNAUTHENTICATED else None
        return JSONResponse({"error": err.as_dict()}, status_code=_STATUS.get(err.code, 400), headers=headers)

    @api.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, err: RequestValidationError) -> JSONResponse:
        detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors()[:5])
        body = {"error": {"code": ErrorCode.MALFORMED_EVENT.value, "message": detail}}
        return JSONResponse(body, status_code=422)

    @api.get("/healthz", tags=["operations"])
    def healthz() -> dict[str, Any]:
        """Liveness and readiness: the stores answer."""
        return {"status": "ok", **run(kg.status)}

    @api.post("/v1/search", tags=["query"])
    def search(body: SearchRequest, who: Caller) -> dict[str, Any]:
        """Hybrid search over the chunks the caller may read."""
        who.require("search")
        return run(lambda: kg.search(body.query, who.caller, top_k=body.top_k, mode=body.mode)).as_dict()

    @api.post("/v1/ask", tags=["query"])
    def ask(body: AskRequest, who: Caller) -> dict[str, Any]:
        """An answer whose every sentence cites exact source spans, or an honest abstention."""
        if "ask" not in who.scopes:
            who.require("search")
        return run(lambda: kg.ask(body.question, who.caller, evidence_chunks=body.evidence_chunks))

    @api.post("/v1/ingest/documents", tags=["ingest"], status_code=202)
    def ingest_document(body: IngestDocumentRequest, who: Caller) -> JSONResponse:
        """A document was created or changed at its source; it is indexed before this returns."""
        who.require("ingest")
        doc = SourceDocument(
            doc_id=body.doc_id, source=body.source, uri=body.uri or f"{body.source}://{body.doc_id}",
            title=body.title, body=_body_bytes(body), acl=acl_from_source(body.acl),
            modified_at=body.modified_at, media_type=body.media_type,
        )
        outcome = run(lambda: kg.ingest([doc]))[0]
        if outcome.status is IngestStatus.REJECTED and outcome.error_code is not None:
            raise KgragError(outcome.error_code, outcome.message)
        return JSONResponse({"status": outcome.status.value, "outcome": outcome.as_dict()}, status_code=202)

    @api.delete("/v1/ingest/documents/{doc_id:path}", tags=["ingest"])
    def delete_document(doc_id: str, who: Caller) -> dict[str, Any]:
        """Delete a document from every store and cache; the deletion is recorded."""
        who.require("ingest")
        outcome = run(lambda: kg.delete(doc_id))
        if outcome.error_code is not None:
            raise KgragError(outcome.error_code, outcome.message)
        return {"status": outcome.status.value, "outcome": outcome.as_dict()}

    return api


def _body_bytes(body: IngestDocumentRequest) -> bytes:
    if (body.text is None) == (body.body_b64 is None):
        raise KgragError(ErrorCode.MISSING_FIELD, "Give exactly one of 'text' or 'body_b64'.")
    if body.text is not None:
        try:
            return body.text.encode("utf-8")
        except UnicodeEncodeError as err:
            raise KgragError(ErrorCode.INVALID_UTF8, f"text is not valid Unicode: {err.reason}") from err
    try:
        return base64.b64decode(body.body_b64 or "", validate=True)
    except ValueError as err:
        raise KgragError(ErrorCode.MALFORMED_EVENT, "body_b64 is not valid base64.") from err
