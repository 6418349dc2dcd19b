"""Extraction administration over HTTP: the ontology, re-extraction previews and runs, claims timelines.

Admin endpoints need the `admin` scope; reading claims needs `search`, and shows only claims with evidence
the caller may read.
"""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query

from kgrag_query_api.auth import Principal
from kgrag_query_api.schemas import RerunRequest
from kgrag_runtime.app import KgragApp
from kgrag_runtime.extraction_admin import ExtractionAdmin, scope_from


def extraction_router(
    kg: KgragApp, who_dep: Callable[..., Principal], run: Callable[[Callable[[], Any]], Any]
) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["extraction"])

    def call(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = run(fn)
        return out

    def admin() -> ExtractionAdmin:
        return kg.require_extraction()

    @router.get("/admin/ontology")
    def get_ontology(who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """The ontology in force, and every version stored."""
        who.require("admin")
        return call(lambda: admin().ontology())

    @router.put("/admin/ontology")
    def put_ontology(
        body: Annotated[dict[str, Any], Body()], who: Annotated[Principal, Depends(who_dep)]
    ) -> dict[str, Any]:
        """Validate an ontology and make it a new version in force (a version label is never reused)."""
        who.require("admin")
        return call(lambda: admin().put_ontology(body))

    @router.post("/admin/extraction/rerun")
    def rerun(body: RerunRequest, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """Re-extract a scope. With dry_run (the default) nothing is called or written: the preview gives
        chunks in scope, cache hits, calls, tokens, estimated cost and time. Without it, the run does what
        the preview said and returns its receipt."""
        who.require("admin")
        scope = scope_from(body.scope)
        return call(lambda: admin().rerun(scope, body.extractor_version, dry_run=body.dry_run))

    @router.get("/admin/extraction/runs/{run_id}")
    def get_run(run_id: str, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        who.require("admin")
        return call(lambda: admin().run(run_id))

    @router.post("/admin/extraction/runs/{run_id}/resume")
    def resume(run_id: str, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """Continue an interrupted run; finished chunks are not extracted (or paid for) again."""
        who.require("admin")
        return call(lambda: admin().resume(run_id))

    @router.get("/claims")
    def claims(
        who: Annotated[Principal, Depends(who_dep)],
        entity: Annotated[str, Query(min_length=1, max_length=256)],
        attribute: Annotated[str | None, Query(max_length=128)] = None,
        as_of: Annotated[str | None, Query(description="YYYY-MM-DD: what the documents said that day.")] = None,
    ) -> dict[str, Any]:
        """An entity's claims, sorted by the date written, superseded and conflicting values marked."""
        who.require("search")
        rows = run(lambda: admin().claims(who.caller, entity=entity, attribute=attribute, as_of=as_of))
        return {"entity": entity, "claims": rows}

    return router
