"""Extraction administration over HTTP: the ontology, re-extraction previews and runs, claims timelines.

Admin endpoints need the `admin` scope; reading claims needs `search`, and shows only claims with evidence
the caller may read.
"""

import re
from collections.abc import Callable
from datetime import date
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_query_api.auth import Principal
from kgrag_query_api.patterns import KEY, MAX_KEY_CHARS, TEXT, check
from kgrag_query_api.responses import AUTHENTICATED, errors
from kgrag_query_api.schemas import RerunRequest
from kgrag_runtime.app import KgragApp
from kgrag_runtime.extraction_admin import ExtractionAdmin, scope_from


def extraction_router(
    kg: KgragApp, who_dep: Callable[..., Principal], run: Callable[[Callable[[], Any]], Any]
) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["extraction"], responses=AUTHENTICATED)
    run_path = Path(max_length=MAX_KEY_CHARS, json_schema_extra={"pattern": KEY})

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
        scope = scope_from(body.scope.model_dump())
        return call(lambda: admin().rerun(scope, body.extractor_version, dry_run=body.dry_run))

    @router.get("/admin/extraction/runs/{run_id}", responses=errors(404))
    def get_run(run_id: Annotated[str, run_path], who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        who.require("admin")
        check(run_id, KEY, field="run_id", max_chars=MAX_KEY_CHARS)
        return call(lambda: admin().run(run_id))

    @router.post("/admin/extraction/runs/{run_id}/resume", responses=errors(404))
    def resume(run_id: Annotated[str, run_path], who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """Continue an interrupted run; finished chunks are not extracted (or paid for) again."""
        who.require("admin")
        check(run_id, KEY, field="run_id", max_chars=MAX_KEY_CHARS)
        return call(lambda: admin().resume(run_id))

    @router.get("/claims")
    def claims(
        who: Annotated[Principal, Depends(who_dep)],
        entity: Annotated[str, Query(min_length=1, max_length=256, json_schema_extra={"pattern": TEXT})],
        attribute: Annotated[
            str | None, Query(min_length=1, max_length=128, json_schema_extra={"pattern": TEXT})
        ] = None,
        as_of: Annotated[
            str | None,
            Query(json_schema_extra={"format": "date"}, description="YYYY-MM-DD: what the documents said that day."),
        ] = None,
    ) -> dict[str, Any]:
        """An entity's claims, sorted by the date written, superseded and conflicting values marked."""
        who.require("search")
        check(entity, TEXT, field="entity", max_chars=256)
        if attribute is not None:
            check(attribute, TEXT, field="attribute", max_chars=128)
        day = _full_date(as_of) if as_of is not None else None
        rows = run(lambda: admin().claims(who.caller, entity=entity, attribute=attribute, as_of=day))
        return {"entity": entity, "claims": rows}

    return router


_FULL_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _full_date(text: str) -> str:
    """An RFC 3339 full-date (what `format: date` promises), not every form `date.fromisoformat` takes."""
    invalid = KgragError(ErrorCode.INVALID_QUERY, f"{text!r} is not a date.", hint="Use YYYY-MM-DD.")
    if not _FULL_DATE.fullmatch(text):
        raise invalid
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError as err:  # the right shape, but no such day (2026-02-30)
        raise invalid from err
