"""The entity API over HTTP: entity reads for readers, resolution administration for admins.

Reads need the `search` scope and show only what the caller's evidence allows: an entity known only from
documents the token's user and groups cannot read is 404, exactly like one that does not exist. Merges,
splits, review decisions and resolution passes need the `admin` scope; each is logged and reversible.
"""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import JSONResponse

from kgrag_core.acl import Caller
from kgrag_query_api.auth import Principal
from kgrag_query_api.patterns import KEY, MAX_KEY_CHARS, TEXT, check
from kgrag_query_api.responses import AUTHENTICATED, errors
from kgrag_query_api.schemas import (
    EntityMergeRequest,
    EntityResolveRequest,
    EntityReviewRequest,
    EntitySplitMentionsRequest,
    EntitySplitRequest,
)
from kgrag_runtime.app import KgragApp
from kgrag_runtime.background import BackgroundRuns
from kgrag_runtime.graph_admin import MAX_DEPTH, MAX_LIMIT, GraphAdmin

_EVERYTHING = Caller(admin=True)
EntityIdPath = Annotated[str, Path(max_length=MAX_KEY_CHARS, json_schema_extra={"pattern": KEY})]


def entity_router(
    kg: KgragApp, who_dep: Callable[..., Principal], run: Callable[[Callable[[], Any]], Any]
) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["entities"], responses=AUTHENTICATED)
    background = BackgroundRuns()

    def call(fn: Callable[[GraphAdmin], Any]) -> Any:
        return run(lambda: fn(kg.require_graph()))

    @router.get("/entities/{entity_id}", responses=errors(404))
    def get_entity(entity_id: EntityIdPath, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """An entity with its aliases, strong identifiers, attributes (claims with validity and evidence),
        relations with evidence counts, and conflicting claims. Merged entities answer under any member id."""
        who.require("search")
        check(entity_id, KEY, field="entity_id", max_chars=MAX_KEY_CHARS)
        out: dict[str, Any] = call(lambda g: g.entity(entity_id, who.caller))
        return out

    @router.get("/entities/{entity_id}/neighbors", responses=errors(404))
    def get_neighbors(
        entity_id: EntityIdPath,
        who: Annotated[Principal, Depends(who_dep)],
        relation: Annotated[
            str | None,
            Query(min_length=1, max_length=64, json_schema_extra={"pattern": TEXT}, description="Only this relation."),
        ] = None,
        depth: Annotated[int, Query(ge=1, le=MAX_DEPTH, description="Hops.")] = 1,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Edges at most.")] = 50,
    ) -> dict[str, Any]:
        """Edges around an entity, breadth first up to `depth` hops, strongest first. Traversal never passes
        through a hub (it may start at one); `truncated` says what was left out and why."""
        who.require("search")
        check(entity_id, KEY, field="entity_id", max_chars=MAX_KEY_CHARS)
        if relation is not None:
            check(relation, TEXT, field="relation", max_chars=64)
        out: dict[str, Any] = call(
            lambda g: g.neighbours(entity_id, who.caller, relation=relation or None, depth=depth, limit=limit)
        )
        return out

    @router.post("/entities/resolve")
    def resolve(body: EntityResolveRequest, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """Which entities a name may mean, best connected first; `ambiguous` when more than one."""
        who.require("search")
        out: dict[str, Any] = call(lambda g: g.resolve(body.name, who.caller, entity_type=body.type))
        return out

    @router.post("/admin/entities/merge", responses=errors(404))
    def merge(body: EntityMergeRequest, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """Merge entities by hand. The merge log keeps the members and the reason; split undoes it exactly."""
        who.require("admin")

        def apply(g: GraphAdmin) -> dict[str, Any]:
            return g.merge(body.entity_ids, canonical_id=body.canonical_id, reason=body.reason, decider=who.caller.user)

        out: dict[str, Any] = call(apply)
        return out

    @router.post("/admin/entities/split", responses=errors(404))
    def split(body: EntitySplitRequest, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """Revert a merge: its members get back their own aliases, facts and neighbours."""
        who.require("admin")
        out: dict[str, Any] = call(lambda g: g.split(body.merge_id, by=who.caller.user))
        return out

    @router.post("/admin/entities/split-mentions", responses=errors(404))
    def split_mentions(body: EntitySplitMentionsRequest, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """Separate namesakes: the entity's mentions (and facts) in `doc_ids` become an entity of their own.
        Logged with the reason; kept through re-ingests, ACL changes and re-extractions; undone by a merge."""
        who.require("admin")
        out: dict[str, Any] = call(lambda g: g.split_mentions(body.entity_id, body.doc_ids, reason=body.reason))
        return out

    @router.get("/admin/entities/merges")
    def merges(
        who: Annotated[Principal, Depends(who_dep)],
        limit: Annotated[int, Query(ge=1, le=1000, description="How many, newest first.")] = 100,
    ) -> dict[str, Any]:
        """The merge log, newest first, reverted merges included, each with the basis of its decision."""
        who.require("admin")
        return {"merges": call(lambda g: g.merges(limit))}

    @router.get("/admin/entities/review-queue")
    def review_queue(
        who: Annotated[Principal, Depends(who_dep)],
        limit: Annotated[int, Query(ge=1, le=1000, description="How many, highest score first.")] = 100,
    ) -> dict[str, Any]:
        """Pairs resolution scored between its thresholds ("possibly the same"), waiting for a person."""
        who.require("admin")
        return {"pairs": call(lambda g: g.review_queue(limit))}

    @router.post("/admin/entities/review", responses=errors(404))
    def review(body: EntityReviewRequest, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """Decide a queued pair: `same` merges it (logged, reversible), otherwise it is kept apart."""
        who.require("admin")
        out: dict[str, Any] = call(lambda g: g.decide(body.a, body.b, same=body.same, decider=who.caller.user))
        return out

    @router.post("/admin/entities/resolution", status_code=202)
    def resolution(who: Annotated[Principal, Depends(who_dep)]) -> JSONResponse:
        """Start a resolution pass in the background (one also runs after every extraction) and relabel hubs.
        Answers 202 at once with the run; poll `GET /v1/admin/entities/resolution/{run_id}` for its report.
        While a pass runs, starting another returns the running one."""
        who.require("admin")
        kg.require_graph()  # "graph switched off" is an answer now, not a failed run later
        started = background.start("resolution", lambda: call(lambda g: g.run_resolution()))
        location = f"/v1/admin/entities/resolution/{started.run_id}"
        return JSONResponse(started.as_dict(), status_code=202, headers={"Location": location})

    @router.get("/admin/entities/resolution/{run_id}", responses=errors(404))
    def resolution_run(
        run_id: Annotated[str, Path(max_length=MAX_KEY_CHARS, json_schema_extra={"pattern": KEY})],
        who: Annotated[Principal, Depends(who_dep)],
    ) -> dict[str, Any]:
        """A resolution run: `running`, `succeeded` with its report in `result`, or `failed` with `error`."""
        who.require("admin")
        check(run_id, KEY, field="run_id", max_chars=MAX_KEY_CHARS)
        return background.get(run_id).as_dict()

    return router
