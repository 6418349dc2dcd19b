"""The community API over HTTP (docs/communities.md): the caller's view for readers, rebuilds for admins.

Reads need the `search` scope and show only members the caller's evidence names, sizes counted over
those; a community with no member the caller may see is 404, exactly like one that does not exist.
A rebuild needs the `admin` scope: a dry run answers at once with what it would recluster; a real one
runs in the background (202) and is polled like a resolution pass."""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import JSONResponse

from kgrag_query_api.auth import Principal
from kgrag_query_api.patterns import KEY, MAX_KEY_CHARS, check
from kgrag_query_api.responses import AUTHENTICATED, errors
from kgrag_query_api.schemas import CommunityRebuildRequest
from kgrag_runtime.app import KgragApp
from kgrag_runtime.background import BackgroundRuns
from kgrag_runtime.community_admin import MAX_LIMIT, CommunityAdmin

CommunityIdPath = Annotated[str, Path(max_length=MAX_KEY_CHARS, json_schema_extra={"pattern": KEY})]


def community_router(
    kg: KgragApp, who_dep: Callable[..., Principal], run: Callable[[Callable[[], Any]], Any]
) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["communities"], responses=AUTHENTICATED)
    background = BackgroundRuns()

    def call(fn: Callable[[CommunityAdmin], Any]) -> Any:
        return run(lambda: fn(kg.require_communities()))

    @router.get("/communities")
    def list_communities(
        who: Annotated[Principal, Depends(who_dep)],
        level: Annotated[int | None, Query(ge=0, le=100, description="Only this level (0 is the top).")] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Communities at most.")] = 50,
    ) -> dict[str, Any]:
        """Communities of related entities you may see, by level, largest (by visible members) first."""
        who.require("search")
        out: dict[str, Any] = call(lambda c: c.listing(who.caller, level=level, limit=limit))
        return out

    @router.get("/communities/{community_id}", responses=errors(404))
    def get_community(community_id: CommunityIdPath, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """One community: visible members, level, parent, children, whether it is stale, its graph version."""
        who.require("search")
        check(community_id, KEY, field="community_id", max_chars=MAX_KEY_CHARS)
        out: dict[str, Any] = call(lambda c: c.show(community_id, who.caller))
        return out

    @router.post("/admin/communities/rebuild", responses={202: {"description": "The rebuild started."}})
    def rebuild(body: CommunityRebuildRequest, who: Annotated[Principal, Depends(who_dep)]) -> JSONResponse:
        """Recluster every community (`stale_only`: only the stale ones). `dry_run` answers at once with the
        counts it would recluster; otherwise 202 with the run, polled at its `Location`."""
        who.require("admin")
        if body.dry_run:
            return JSONResponse(call(lambda c: c.rebuild(dry_run=True, stale_only=body.stale_only)))
        kg.require_communities()  # "switched off" is an answer now, not a failed run later
        started = background.start(
            "communities", lambda: call(lambda c: c.rebuild(dry_run=False, stale_only=body.stale_only))
        )
        location = f"/v1/admin/communities/rebuild/{started.run_id}"
        return JSONResponse(started.as_dict(), status_code=202, headers={"Location": location})

    @router.get("/admin/communities/rebuild/{run_id}", responses=errors(404))
    def rebuild_run(
        run_id: Annotated[str, Path(max_length=MAX_KEY_CHARS, json_schema_extra={"pattern": KEY})],
        who: Annotated[Principal, Depends(who_dep)],
    ) -> dict[str, Any]:
        """A rebuild run: `running`, `succeeded` with its report in `result`, or `failed` with `error`."""
        who.require("admin")
        check(run_id, KEY, field="run_id", max_chars=MAX_KEY_CHARS)
        return background.get(run_id).as_dict()

    return router
