"""Evaluation as a service over HTTP (admin only): start a bundled suite, poll its run, mark a baseline.

A run scores the suite on an isolated temporary index (never the serving one) in the background; its report
(metrics per configuration and question type, latency and cost per query) and its regressions against the
suite's baseline are read back from PostgreSQL. Suites are named from a fixed registry: no request names a
file.
"""

from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from kgrag_query_api.auth import Principal
from kgrag_query_api.patterns import KEY, MAX_KEY_CHARS, check
from kgrag_query_api.responses import AUTHENTICATED, errors
from kgrag_runtime.app import KgragApp
from kgrag_runtime.evaluation.service import EvalService
from kgrag_runtime.evaluation.suites import SUITES, EvalConfig

# The registry's names, spelled out so the OpenAPI schema lists them as an enum (checked against it below).
SuiteName = Literal["northwind", "northwind-smoke"]
if set(get_args(SuiteName)) != set(SUITES):
    raise RuntimeError("eval_routes.SuiteName must list exactly the suites of kgrag_runtime.evaluation.suites")
RunIdPath = Annotated[str, Path(max_length=MAX_KEY_CHARS, json_schema_extra={"pattern": KEY})]


class EvalRunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    suite: SuiteName = Field(description="A bundled suite (GET /v1/admin/eval lists them).")
    config: EvalConfig = Field(default_factory=EvalConfig)


def eval_router(kg: KgragApp, who_dep: Callable[..., Principal], run: Callable[[Callable[[], Any]], Any]) -> APIRouter:
    router = APIRouter(prefix="/v1/admin/eval", tags=["evaluation"], responses=AUTHENTICATED)

    def service() -> EvalService:
        return kg.require_evaluation()

    @router.get("")
    def list_runs(
        who: Annotated[Principal, Depends(who_dep)],
        limit: Annotated[int, Query(ge=1, le=200, description="How many, newest first.")] = 50,
    ) -> dict[str, Any]:
        """The suites that can be run, and the newest runs (without their reports)."""
        who.require("admin")
        evals = service()
        return {"suites": evals.suites(), "runs": run(lambda: evals.runs(limit))}

    @router.post("/run", status_code=202, responses=errors(404))
    def start(body: EvalRunRequest, who: Annotated[Principal, Depends(who_dep)]) -> JSONResponse:
        """Start a suite in the background on an isolated index; answers 202 at once with the run. Poll
        `GET /v1/admin/eval/{run_id}`. While a run is in progress, starting another returns that one.
        404 when the suite's files are not installed in this deployment."""
        who.require("admin")
        evals = service()
        started = run(lambda: evals.start(str(body.suite), body.config))
        location = f"/v1/admin/eval/{started.run_id}"
        return JSONResponse(started.as_dict(), status_code=202, headers={"Location": location})

    @router.get("/{run_id}", responses=errors(404))
    def get_run(run_id: RunIdPath, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """A run: `running`, `failed` with its `error`, or `succeeded` with its report (per configuration
        and question type, latency and cost per query) and `regressions` against the suite's baseline."""
        who.require("admin")
        check(run_id, KEY, field="run_id", max_chars=MAX_KEY_CHARS)
        evals = service()
        out: dict[str, Any] = run(lambda: evals.run(run_id))
        return out

    @router.post("/{run_id}/baseline", responses=errors(404))
    def mark_baseline(run_id: RunIdPath, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """Make a succeeded run its suite's baseline (the previous one stops being it)."""
        who.require("admin")
        check(run_id, KEY, field="run_id", max_chars=MAX_KEY_CHARS)
        evals = service()
        out: dict[str, Any] = run(lambda: evals.mark_baseline(run_id))
        return out

    return router
