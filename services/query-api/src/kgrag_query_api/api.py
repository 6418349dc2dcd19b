"""FastAPI applications: the query API (search, ask, ingestion) and the connector gateway (ingestion only).

Identity comes only from the verified bearer token. Routes are plain (sync) functions, so FastAPI runs
each request on its own worker thread and requests are served concurrently: searches and answers never
wait for each other, nor for an ingest. The only serialisation is the embedded runtime's single writer
(`kgrag_runtime.single_writer`), which ingestion and curation take themselves; reads never take it.
"""

import base64
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.exceptions import HTTPException as StarletteHTTPException

from kgrag_core.acl import PRIVATE_ACL, acl_from_source
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.graph.routing import RoutedGraphReader
from kgrag_core.ingest import IngestStatus
from kgrag_query_api.admin_routes import extraction_router
from kgrag_query_api.auth import Principal, TokenVerifier
from kgrag_query_api.community_routes import community_router
from kgrag_query_api.document_routes import document_router
from kgrag_query_api.entity_routes import entity_router
from kgrag_query_api.eval_routes import eval_router
from kgrag_query_api.ingest_status import ingest_status_router
from kgrag_query_api.ops_routes import ops_router
from kgrag_query_api.patterns import DOC_ID, MAX_DOC_ID, DocIdPath, check
from kgrag_query_api.responses import AUTHENTICATED, errors
from kgrag_query_api.schemas import (
    AclChangeRequest,
    AskOptions,
    AskRequest,
    BytesDocumentRequest,
    IngestDocumentRequest,
    SearchRequest,
    core_filters,
)
from kgrag_query_api.sse import sse_response
from kgrag_query_api.trace_routes import trace_router
from kgrag_query_api.ui import mount_ui
from kgrag_runtime.app import KgragApp
from kgrag_runtime.deadlocks import once_more_on_deadlock
from kgrag_runtime.graph_reads import GraphReadsCollector
from kgrag_runtime.ingest_gateway import IngestGateway
from kgrag_runtime.kafka.deliveries import BROKER_RETRY_AFTER_S

T = TypeVar("T")
DEFAULT_THREADS = 40  # anyio's own default
ReadyCheck = Callable[[], dict[str, Any]]
# /v1/ask answers JSON, or with options.stream server-sent events (docs/http-api.md, "Streaming answers").
STREAMED: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The answer (JSON), or with `options.stream` a stream of server-sent events.",
        "content": {"application/json": {"schema": {"type": "object"}}, "text/event-stream": {}},
    }
}

_STATUS = {
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.DOCUMENT_NOT_FOUND: 404,
    ErrorCode.LIMIT_EXCEEDED: 422,
    ErrorCode.INVALID_QUERY: 422,
    ErrorCode.INVALID_PRINCIPAL: 422,
    ErrorCode.MALFORMED_JSON: 422,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.ACL_CLASS_CONFLICT: 409,
    ErrorCode.MALFORMED_EVENT: 422,
    ErrorCode.MISSING_FIELD: 422,
    ErrorCode.INVALID_UTF8: 422,
    ErrorCode.EMPTY_DOCUMENT: 422,
    ErrorCode.DOCUMENT_TOO_LARGE: 413,
    ErrorCode.LLM_UNAVAILABLE: 503,
    ErrorCode.EMBEDDING_FAILED: 503,
    ErrorCode.INDEX_WRITE_FAILED: 503,
    ErrorCode.DATA_DIR_LOCKED: 503,
    ErrorCode.INSUFFICIENT_EVIDENCE: 422,
    ErrorCode.UNSUPPORTED_FILE_TYPE: 415,
    # A feature this server runs without (the knowledge graph switched off): not the client's fault, and no
    # server fault either; 503 is documented on every operation, a 500 would read as a crash.
    ErrorCode.CONFIGURATION_INVALID: 503,
    ErrorCode.ONTOLOGY_INVALID: 422,
    ErrorCode.RUN_NOT_FOUND: 404,
    ErrorCode.ENTITY_NOT_FOUND: 404,
    ErrorCode.COMMUNITY_NOT_FOUND: 404,
    ErrorCode.LLM_RATE_LIMITED: 503,
    ErrorCode.BROKER_UNAVAILABLE: 503,
    ErrorCode.INTERNAL: 500,
    ErrorCode.TRACE_NOT_FOUND: 404,
    ErrorCode.FEEDBACK_NOT_FOUND: 404,
    ErrorCode.INVALID_FEEDBACK: 422,
    ErrorCode.INVALID_FILTER: 422,
}


def create_app(
    kg: KgragApp, verifier: TokenVerifier, *, ready: ReadyCheck | None = None, threads: int = DEFAULT_THREADS
) -> FastAPI:
    """The query API: search, ask, and ingestion through whichever runtime `kg` was wired with; `threads`
    requests at a time (KGRAG_HTTP_THREADS), the rest queue."""
    api = _base_app(
        "kgrag",
        "Search, cited answers and ingestion change events. Every call needs a bearer "
        "token; what you can see follows the token's user and groups.",
        ready or _status_check(kg),
        threads=threads,
        also_served=(kg.quality.registry,),  # /metrics serves the answer-quality metrics too
        graph_reads=kg.graph_reads,
    )

    def run(fn: Callable[[], T]) -> T:
        return fn()  # concurrency: no lock here (see the module docstring)

    who_dep = _principal_dependency(verifier)
    router = APIRouter(prefix="/v1", tags=["query"], responses=AUTHENTICATED)

    @router.post("/search")
    def search(body: SearchRequest, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """Hybrid search over the chunks the caller may read."""
        who.require("search")
        filters = core_filters(body.filters)
        return run(
            lambda: kg.search(
                body.query,
                who.caller,
                top_k=body.top_k,
                mode=body.mode,
                graph=body.graph,
                filters=filters,
                include_entities=body.include_entities,
                text_graph=body.text_graph,
            )
        ).as_dict()

    @router.post("/ask", response_model=None, responses=STREAMED)
    def ask(body: AskRequest, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any] | StreamingResponse:
        """An answer whose every sentence cites exact source spans, or an honest abstention; with
        `options.stream`, server-sent events, each verified sentence as soon as it is ready."""
        if "ask" not in who.scopes:
            who.require("search")
        filters, options = core_filters(body.filters), body.options or AskOptions()
        contract: dict[str, Any] = {
            "evidence_chunks": body.evidence_chunks,
            "graph": body.graph,
            "mode": body.mode,
            "filters": filters,
            "max_hops": options.max_hops,
            "include_graph_paths": options.include_graph_paths,
        }
        if options.stream:
            return sse_response(run(lambda: kg.ask_stream(body.question, who.caller, **contract)))
        return run(lambda: kg.ask(body.question, who.caller, **contract))

    api.include_router(router)
    api.include_router(ingest_router(kg.ingestion, verifier, run))
    api.include_router(ingest_status_router(kg.ingest_log, who_dep))
    api.include_router(extraction_router(kg, who_dep, run))
    api.include_router(entity_router(kg, who_dep, run))
    api.include_router(community_router(kg, who_dep, run))
    api.include_router(trace_router(kg, who_dep, run))
    api.include_router(eval_router(kg, who_dep, run))
    api.include_router(ops_router(kg, who_dep, run))
    api.include_router(document_router(kg, who_dep, run))
    mount_ui(api, who_dep)  # the web app at /ui, on the same token dependency as /v1
    return api


def create_gateway_app(ingestion: IngestGateway, verifier: TokenVerifier, *, ready: ReadyCheck) -> FastAPI:
    """The connector gateway: only the ingestion endpoints, producing onto Kafka."""
    api = _base_app("kgrag connector gateway", "Change events from source systems (ingest scope).", ready)
    api.include_router(ingest_router(ingestion, verifier, lambda fn: fn()))
    return api


def ingest_router(
    ingestion: IngestGateway, verifier: TokenVerifier, run: Callable[[Callable[[], Any]], Any]
) -> APIRouter:
    who_dep = _principal_dependency(verifier)
    router = APIRouter(prefix="/v1/ingest", tags=["ingest"], responses=AUTHENTICATED)

    @router.post("/documents", status_code=202, responses=errors(409, 413, 415))
    def ingest_document(body: IngestDocumentRequest, who: Annotated[Principal, Depends(who_dep)]) -> JSONResponse:
        """A document was created or changed at its source. Embedded: indexed before this returns;
        distributed: QUEUED once Kafka has acknowledged the event."""
        who.require("ingest")
        doc = SourceDocument(
            doc_id=body.doc_id,
            source=body.source,
            uri=body.uri or f"{body.source}://{body.doc_id}",
            title=body.title,
            body=_body_bytes(body),
            acl=acl_from_source(body.raw_acl()),
            modified_at=body.modified_at,
            media_type=body.media_type,
        )
        outcome = run(lambda: ingestion.ingest([doc]))[0]
        if outcome.status is IngestStatus.REJECTED and outcome.error_code is not None:
            raise KgragError(outcome.error_code, outcome.message)
        return JSONResponse({"status": outcome.status.value, "outcome": outcome.as_dict()}, status_code=202)

    @router.delete("/documents/{doc_id:path}", responses=errors(404))
    def delete_document(doc_id: DocIdPath, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """Delete a document from every store and cache; the deletion is recorded."""
        who.require("ingest")
        check(doc_id, DOC_ID, field="doc_id", max_chars=MAX_DOC_ID)
        # A deletion racing a re-ingest on shared rows may be a deadlock's victim (rolled back whole): once more.
        outcome = run(lambda: once_more_on_deadlock(lambda: ingestion.delete(doc_id)))
        if outcome.error_code is not None:
            raise KgragError(outcome.error_code, outcome.message)
        return {"status": outcome.status.value, "outcome": outcome.as_dict()}

    @router.post("/acl", responses=errors(404, 409))
    def change_acl(body: AclChangeRequest, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """A document's readers changed at its source; everything derived from it follows, failing closed."""
        who.require("ingest")
        try:
            acl = acl_from_source(body.raw_acl())
        except KgragError as err:
            if err.code is not ErrorCode.INVALID_PRINCIPAL:
                raise
            # The source changed who may read the document to something no principal can be: fail closed
            # (admin only) rather than keep the previous readers, and say so.
            run(lambda: ingestion.change_acl(body.doc_id, PRIVATE_ACL))
            closed = f"{err.message} The document is private (admin only) until a valid ACL arrives."
            raise KgragError(err.code, closed, hint=err.hint) from err
        outcome = run(lambda: ingestion.change_acl(body.doc_id, acl))
        if outcome.error_code is not None:
            raise KgragError(outcome.error_code, outcome.message)
        return {"status": outcome.status.value, "outcome": outcome.as_dict()}

    return router


# Declared as the OpenAPI security scheme (so clients and the schema fuzzer know every /v1 call needs a
# bearer token); auto_error off so a missing or non-bearer header gets kgrag's own 401 body.
_BEARER = HTTPBearer(auto_error=False, description="A JWT with `sub`, `groups` and `scope` (docs/http-api.md).")


def _principal_dependency(verifier: TokenVerifier) -> Callable[..., Principal]:
    def principal(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]) -> Principal:
        return verifier.verify(f"Bearer {credentials.credentials}" if credentials else None)

    return principal


def _status_check(kg: KgragApp) -> ReadyCheck:
    def check() -> dict[str, Any]:
        kg.stats_source.stats()  # the authoritative store answers; counts stay behind authentication
        return {"ok": True}

    return check


def _known_query_parameters_only(request: Request) -> None:
    """Refuse a query parameter the operation does not declare: a typo (`?limt=5`) must not pass silently."""
    dependant = getattr(request.scope.get("route"), "dependant", None)
    if dependant is None:
        return
    known = _query_names(dependant)
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        raise KgragError(
            ErrorCode.MALFORMED_EVENT,
            f"Unknown query parameter(s): {', '.join(repr(u) for u in unknown[:5])}.",
            hint=f"This operation takes: {', '.join(sorted(known)) or 'no query parameters'}.",
        )


def _query_names(dependant: Any) -> set[str]:
    """The query parameters a route declares, its dependencies' included."""
    names = {str(p.alias) for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def _base_app(
    title: str,
    description: str,
    ready: ReadyCheck,
    *,
    threads: int = DEFAULT_THREADS,
    also_served: Sequence[CollectorRegistry] = (),
    graph_reads: RoutedGraphReader | None = None,
) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # Sync routes run on anyio's default thread limiter: its size is how many requests run at once.
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        yield

    api = FastAPI(
        title=title,
        version="0.1.0",
        description=description,
        lifespan=lifespan,
        dependencies=[Depends(_known_query_parameters_only)],
    )
    # The HTTP metrics are this app's own; the app object's registries (shared by every API built on the
    # same app, e.g. the load benchmark's two mounts) are served after them.
    registry = CollectorRegistry()
    requests = Counter("kgrag_http_requests", "HTTP requests.", ["route", "status"], registry=registry)
    latency = Histogram("kgrag_http_seconds", "HTTP request latency.", ["route"], registry=registry)
    if graph_reads is not None:
        registry.register(GraphReadsCollector(graph_reads))

    @api.middleware("http")
    async def measure(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        name = getattr(route, "path", "unmatched")
        requests.labels(name, str(response.status_code)).inc()
        latency.labels(name).observe(time.perf_counter() - started)
        return response

    @api.exception_handler(KgragError)
    async def kgrag_error(_: Request, err: KgragError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if err.code is ErrorCode.UNAUTHENTICATED else None
        if err.code is ErrorCode.BROKER_UNAVAILABLE:
            headers = {"Retry-After": str(BROKER_RETRY_AFTER_S)}
        return JSONResponse({"error": err.as_dict()}, status_code=_STATUS.get(err.code, 400), headers=headers)

    @api.exception_handler(Exception)
    async def unexpected(_: Request, err: Exception) -> JSONResponse:
        # Never a bare 500 page: the body has the stable shape, and no internals beyond the type.
        body = {
            "error": {
                "code": ErrorCode.INTERNAL.value,
                "message": f"Unexpected {type(err).__name__}.",
                "hint": "The server log has the details; retrying is safe (ingestion is idempotent).",
            }
        }
        return JSONResponse(body, status_code=500)

    @api.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, err: RequestValidationError) -> JSONResponse:
        problems = err.errors()
        detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in problems[:5])
        return JSONResponse({"error": {"code": _validation_code(problems).value, "message": detail}}, status_code=422)

    @api.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, err: StarletteHTTPException) -> JSONResponse:
        # The framework's own errors (no such route, wrong method, an unparseable body) in the same shape;
        # its headers (`Allow` on a 405) are kept.
        if err.status_code == 400:  # "There was an error parsing the body": not JSON at all
            body = {"code": ErrorCode.MALFORMED_JSON.value, "message": "The request body is not valid JSON."}
            return JSONResponse({"error": body}, status_code=422)
        code = {404: ErrorCode.NOT_FOUND, 405: ErrorCode.METHOD_NOT_ALLOWED}.get(
            err.status_code, ErrorCode.INVALID_QUERY
        )
        return JSONResponse(
            {"error": {"code": code.value, "message": str(err.detail)}},
            status_code=err.status_code,
            headers=dict(err.headers or {}),
        )

    @api.get("/healthz", tags=["operations"])
    def healthz() -> dict[str, Any]:
        """Liveness: the process serves requests."""
        return {"status": "ok"}

    @api.get("/readyz", tags=["operations"], responses={503: {"description": "A store does not answer."}})
    def readyz() -> JSONResponse:
        """Readiness: the stores answer."""
        try:
            report = ready()
        except Exception as err:  # noqa: BLE001 - an unreachable store is a report, not a crash
            report = {"ok": False, "error": f"{type(err).__name__}: {err}"}
        return JSONResponse(report, status_code=200 if report.get("ok") else 503)

    @api.get("/metrics", tags=["operations"], response_class=PlainTextResponse)
    def metrics() -> Response:
        body = b"".join(generate_latest(r) for r in (registry, *also_served))
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return api


def _body_bytes(body: IngestDocumentRequest) -> bytes:
    if isinstance(body, BytesDocumentRequest):
        try:
            return base64.b64decode(body.body_b64, validate=True)
        except ValueError as err:
            raise KgragError(ErrorCode.MALFORMED_EVENT, "body_b64 is not valid base64.") from err
    try:
        return body.text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise KgragError(ErrorCode.INVALID_UTF8, f"text is not valid Unicode: {err.reason}") from err


# Pydantic's error types that mean "outside a numeric range or over a length": LIMIT_EXCEEDED, as the core's
# bounds report them.
_OVER_A_LIMIT = frozenset({"less_than_equal", "less_than", "greater_than_equal", "greater_than", "too_long"})


def _validation_code(problems: Sequence[Any]) -> ErrorCode:
    types = {str(p.get("type")) for p in problems}
    if "json_invalid" in types:
        return ErrorCode.MALFORMED_JSON
    if types and types <= _OVER_A_LIMIT:
        return ErrorCode.LIMIT_EXCEEDED
    return ErrorCode.MALFORMED_EVENT
