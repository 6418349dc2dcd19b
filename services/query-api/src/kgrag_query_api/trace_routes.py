"""Traces, feedback and the curation queue over HTTP.

A trace is readable by the principal whose search or ask made it, and by admins; to anyone else it is
`404 TRACE_NOT_FOUND`, exactly like a trace that does not exist. Feedback needs the same read access to its
trace. The curation queue and resolving feedback need the `admin` scope.
"""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import JSONResponse

from kgrag_core.tracing.curation import DEFAULT_EDGE_CONFIDENCE
from kgrag_query_api.auth import Principal
from kgrag_query_api.patterns import KEY, MAX_KEY_CHARS, check
from kgrag_query_api.responses import AUTHENTICATED, errors
from kgrag_query_api.schemas import FeedbackRequest, FeedbackResolveRequest
from kgrag_runtime.app import KgragApp
from kgrag_runtime.curation import DEFAULT_LIMIT, MAX_LIMIT, curation_queue

KeyPath = Annotated[str, Path(max_length=MAX_KEY_CHARS, json_schema_extra={"pattern": KEY})]


def _reader(who: Principal) -> None:
    """Reading one's own traces needs what made them: `search` or `ask`."""
    if "ask" not in who.scopes:
        who.require("search")


def trace_router(kg: KgragApp, who_dep: Callable[..., Principal], run: Callable[[Callable[[], Any]], Any]) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["traces"], responses=AUTHENTICATED)

    @router.get("/traces/{trace_id}", responses=errors(404))
    def get_trace(trace_id: KeyPath, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """What produced a search or an answer: the caller's scope, the route and its signals, linked
        entities, candidates per route with ranks, graph paths and facts, citations, removed sentences,
        timings per stage and every version involved. Ids and hashes only, never document text."""
        _reader(who)
        check(trace_id, KEY, field="trace_id", max_chars=MAX_KEY_CHARS)
        out: dict[str, Any] = run(lambda: kg.require_traces().get(trace_id, who.caller).as_dict())
        return out

    @router.post("/feedback", status_code=201, responses=errors(404))
    def feedback(body: FeedbackRequest, who: Annotated[Principal, Depends(who_dep)]) -> JSONResponse:
        """Rate an answer or a search by its trace id; it joins the curation queue."""
        _reader(who)
        item = run(
            lambda: kg.require_traces().feedback(
                body.trace_id,
                who.caller,
                rating=body.rating,
                issue=body.issue.value if body.issue else None,
                comment=body.comment,
            )
        )
        return JSONResponse(item.as_dict(), status_code=201)

    @router.get("/admin/curation")
    def curation(
        who: Annotated[Principal, Depends(who_dep)],
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Items per list at most.")] = DEFAULT_LIMIT,
        max_edge_confidence: Annotated[
            float, Query(ge=0.0, le=1.0, description="Edges whose best evidence is below this are listed.")
        ] = DEFAULT_EDGE_CONFIDENCE,
    ) -> dict[str, Any]:
        """Open feedback, merge candidates, conflicting claims and low-confidence edges, each bounded."""
        who.require("admin")
        out: dict[str, Any] = run(lambda: curation_queue(kg, limit=limit, max_edge_confidence=max_edge_confidence))
        return out

    @router.post("/admin/curation/feedback/{feedback_id}/resolve", responses=errors(404))
    def resolve(
        feedback_id: KeyPath, body: FeedbackResolveRequest, who: Annotated[Principal, Depends(who_dep)]
    ) -> dict[str, Any]:
        """Mark feedback dealt with, saying how; it leaves the queue (and its trace may then expire)."""
        who.require("admin")
        check(feedback_id, KEY, field="feedback_id", max_chars=MAX_KEY_CHARS)
        done = run(lambda: kg.require_traces().resolve(feedback_id, who.caller, body.resolution))
        out: dict[str, Any] = done.as_dict()
        return out

    return router
