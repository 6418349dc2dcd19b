"""Admin pages: review queue, merges and splits, namesakes split by document, re-extraction preview and runs,
deletions, ontology, ingest errors and dead letters, eval runs, the curation queue.

Every fragment calls `/v1/admin/...` as the caller's token, so a token without the `admin` scope gets the
API's own `403 FORBIDDEN` here, and nothing else. Decisions are form posts that become the API's JSON posts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Form, Path, Query, Request
from fastapi.responses import HTMLResponse

from kgrag_query_api.auth import Principal
from kgrag_query_api.patterns import MAX_KEY_CHARS
from kgrag_query_api.ui.api_client import ApiAnswer, ApiAsCaller
from kgrag_query_api.ui.entity_view import UI_KEY
from kgrag_query_api.ui.routes import Api, error_fragment
from kgrag_query_api.ui.templating import fragment, page

SECTION = "/ui/admin"
Key = Annotated[str, Path(max_length=MAX_KEY_CHARS, pattern=UI_KEY)]
Text = Annotated[str, Form(max_length=2000)]
# The admin pages: (path under /ui/admin, title). Each has a fragment at /ui/fragments/admin/<path>.
PAGES = (
    ("review", "Review queue"),
    ("merges", "Merges and splits"),
    ("namesakes", "Split namesakes"),
    ("extraction", "Re-extraction"),
    ("communities", "Community rebuild"),
    ("deletions", "Deletions"),
    ("ontology", "Ontology"),
    ("ingest", "Ingest errors and dead letters"),
    ("eval", "Evaluation runs"),
    ("curation", "Curation queue"),
)
_TITLES = dict(PAGES)
REVIEW_PAGE = 10  # pairs a page shows: each needs both profiles read


def _words(text: str) -> list[str]:
    """A form's list field: comma or whitespace separated."""
    return [w for w in text.replace(",", " ").split() if w]


def rebuild_plan(body: Mapping[str, Any]) -> dict[str, Any]:
    """A dry rebuild's counts and its summaries' cost (G2's preview hook) as one row set, named like the
    re-extraction preview's (`calls`, `estimated_cost`, `estimated_seconds`), so one table shows both."""
    summaries = body.get("summaries") or {}
    plan = {k: body.get(k) for k in ("communities", "entities", "edges", "stale")}
    if summaries:
        plan |= {k: summaries.get(k) for k in ("calls", "input_tokens", "output_tokens", "currency", "llm")}
        plan |= {"estimated_cost": summaries.get("cost"), "estimated_seconds": summaries.get("seconds")}
        plan["per_scope"] = summaries.get("per_scope")
    return plan


def documents_naming(entity: Mapping[str, Any]) -> list[str]:
    """The documents an entity's claims quote, for picking the ones that name a namesake."""
    return sorted({str(c["doc_id"]) for c in entity.get("attributes") or [] if c.get("doc_id")})


def merge_reason(entry: Mapping[str, Any]) -> str:
    """A hand merge keeps its reason in its basis rule ("hand merge: <reason>"); others, the rule."""
    rules = [str(p.get("rule") or "") for p in entry.get("basis") or []]
    first = rules[0] if rules else ""
    return first.removeprefix("hand merge:").strip() if first.startswith("hand merge:") else first


async def _profiles(api: ApiAsCaller, ids: set[str]) -> dict[str, Any]:
    ordered = sorted(ids)
    answers = await asyncio.gather(*(api.get(f"/v1/entities/{i}") for i in ordered))
    return {i: a.body for i, a in zip(ordered, answers, strict=True) if a.ok}


def admin_router(who_dep: Callable[..., Principal]) -> APIRouter:
    del who_dep  # fragments authenticate through the API they call
    router = APIRouter(include_in_schema=False)

    @router.get("/ui/admin")
    def admin_home(request: Request) -> HTMLResponse:
        return page(request, "admin/home.html", title="Admin", section=SECTION, pages=PAGES)

    @router.get("/ui/admin/extraction/runs/{run_id}")
    def run_page(request: Request, run_id: Key) -> HTMLResponse:
        return page(
            request,
            "admin/page.html",
            title="Extraction run",
            section=SECTION,
            pages=PAGES,
            fragment_url=f"/ui/fragments/admin/extraction/runs/{run_id}",
        )

    @router.get("/ui/admin/communities/runs/{run_id}")
    def rebuild_page(request: Request, run_id: Key) -> HTMLResponse:
        return page(
            request,
            "admin/page.html",
            title="Community rebuild",
            section=SECTION,
            pages=PAGES,
            fragment_url=f"/ui/fragments/admin/communities/runs/{run_id}",
        )

    @router.get("/ui/admin/eval/{run_id}")
    def eval_page(request: Request, run_id: Key) -> HTMLResponse:
        return page(
            request,
            "admin/page.html",
            title="Evaluation run",
            section=SECTION,
            pages=PAGES,
            fragment_url=f"/ui/fragments/admin/eval/{run_id}",
        )

    @router.get("/ui/admin/{name}")
    def admin_page(request: Request, name: Annotated[str, Path(max_length=32, pattern=r"^[a-z]+$")]) -> HTMLResponse:
        title = _TITLES.get(name, "Admin")
        url = f"/ui/fragments/admin/{name}" if name in _TITLES else "/ui/fragments/admin"
        return page(request, "admin/page.html", title=title, section=SECTION, pages=PAGES, fragment_url=url)

    def show(request: Request, template: str, answer: ApiAnswer, **context: Any) -> HTMLResponse:
        if not answer.ok:
            return error_fragment(request, answer)
        return fragment(request, template, body=answer.body, **context)

    @router.get("/ui/fragments/admin")
    async def home(request: Request, api: Api) -> HTMLResponse:
        # An admin-only read decides what the index shows: a reader gets the API's refusal.
        answer = await api.get("/v1/admin/entities/review-queue", {"limit": 1})
        return show(request, "admin/fragments/home.html", answer, pages=PAGES)

    # --- review queue, merges, splits --------------------------------------------------------------------

    async def review_queue(request: Request, api: ApiAsCaller, notice: str = "") -> HTMLResponse:
        answer = await api.get("/v1/admin/entities/review-queue", {"limit": REVIEW_PAGE})
        if not answer.ok:
            return error_fragment(request, answer)
        pairs = answer.body["pairs"]
        profiles = await _profiles(api, {p[k] for p in pairs for k in ("a", "b")})
        return fragment(request, "admin/fragments/review.html", pairs=pairs, profiles=profiles, notice=notice)

    @router.get("/ui/fragments/admin/review")
    async def review(request: Request, api: Api) -> HTMLResponse:
        return await review_queue(request, api)

    @router.post("/ui/fragments/admin/review")
    async def decide(
        request: Request,
        api: Api,
        a: Annotated[str, Form(max_length=MAX_KEY_CHARS)],
        b: Annotated[str, Form(max_length=MAX_KEY_CHARS)],
        same: Annotated[bool, Form()],
    ) -> HTMLResponse:
        answer = await api.post("/v1/admin/entities/review", {"a": a, "b": b, "same": same})
        if not answer.ok:
            return error_fragment(request, answer)
        merged = answer.body.get("merge")
        notice = f"Merged as {merged['merge_id']}." if merged else "Kept apart."
        return await review_queue(request, api, notice)

    async def merge_log(request: Request, api: ApiAsCaller, notice: str = "") -> HTMLResponse:
        answer = await api.get("/v1/admin/entities/merges", {"limit": 100})
        if not answer.ok:
            return error_fragment(request, answer)
        merges = answer.body["merges"]
        rows = [{**m, "reason": merge_reason(m)} for m in merges]
        return fragment(request, "admin/fragments/merges.html", merges=rows, notice=notice)

    @router.get("/ui/fragments/admin/merges")
    async def merges(request: Request, api: Api) -> HTMLResponse:
        return await merge_log(request, api)

    @router.post("/ui/fragments/admin/merge")
    async def merge(request: Request, api: Api, entity_ids: Text, reason: Text) -> HTMLResponse:
        answer = await api.post("/v1/admin/entities/merge", {"entity_ids": _words(entity_ids), "reason": reason})
        if not answer.ok:
            return error_fragment(request, answer)
        return await merge_log(request, api, f"Merged as {answer.body['merge_id']}.")

    @router.post("/ui/fragments/admin/split")
    async def split(
        request: Request, api: Api, merge_id: Annotated[str, Form(max_length=MAX_KEY_CHARS, pattern=UI_KEY)]
    ) -> HTMLResponse:
        answer = await api.post("/v1/admin/entities/split", {"merge_id": merge_id})
        if not answer.ok:
            return error_fragment(request, answer)
        return await merge_log(request, api, f"Split {merge_id}: its members are separate again.")

    # --- namesakes: one entity's mentions in some documents become an entity of their own ----------------

    async def namesakes_page(
        request: Request, api: ApiAsCaller, entity_id: str = "", notice: str = "", split: Any = None
    ) -> HTMLResponse:
        # An admin-only read first, so a reader gets the API's refusal and not the form.
        gate = await api.get("/v1/admin/entities/merges", {"limit": 1})
        if not gate.ok:
            return error_fragment(request, gate)
        entity: dict[str, Any] | None = None
        if entity_id:
            answer = await api.get(f"/v1/entities/{entity_id}")
            if not answer.ok:
                return error_fragment(request, answer)
            entity = answer.body
        documents = documents_naming(entity) if entity else []
        return fragment(
            request,
            "admin/fragments/namesakes.html",
            entity_id=entity_id,
            entity=entity,
            documents=documents,
            notice=notice,
            split=split,
        )

    @router.get("/ui/fragments/admin/namesakes")
    async def namesakes(
        request: Request, api: Api, entity: Annotated[str, Query(max_length=MAX_KEY_CHARS, pattern=UI_KEY)] = ""
    ) -> HTMLResponse:
        return await namesakes_page(request, api, entity)

    @router.post("/ui/fragments/admin/namesakes")
    async def split_namesakes(
        request: Request,
        api: Api,
        entity_id: Annotated[str, Form(max_length=MAX_KEY_CHARS, pattern=UI_KEY)],
        reason: Text,
        doc_ids: Annotated[list[str] | None, Form(max_length=100)] = None,  # the ticked boxes
        more_doc_ids: Text = "",
    ) -> HTMLResponse:
        chosen = list(dict.fromkeys([*(doc_ids or []), *_words(more_doc_ids)]))
        body = {"entity_id": entity_id, "doc_ids": chosen, "reason": reason}
        answer = await api.post("/v1/admin/entities/split-mentions", body)
        if not answer.ok:
            return error_fragment(request, answer)
        split = answer.body
        notice = f"Split {split['split_id']}: {len(split['doc_ids'])} document(s) now name {split['entity_id']}."
        return await namesakes_page(request, api, entity_id, notice, split)

    # --- re-extraction -------------------------------------------------------------------------------------

    @router.get("/ui/fragments/admin/extraction")
    def extraction(request: Request) -> HTMLResponse:
        return fragment(request, "admin/fragments/extraction.html")

    @router.post("/ui/fragments/admin/extraction")
    async def rerun(
        request: Request,
        api: Api,
        extractor_version: Annotated[str, Form(min_length=1, max_length=64)],
        sources: Text = "",
        doc_ids: Text = "",
        contains_any: Text = "",
        run: Annotated[bool, Form()] = False,
    ) -> HTMLResponse:
        scope = {
            k: _words(v) for k, v in (("sources", sources), ("doc_ids", doc_ids), ("contains_any", contains_any)) if v
        }
        body = {"scope": scope, "extractor_version": extractor_version, "dry_run": not run}
        form = {
            "extractor_version": extractor_version,
            "sources": sources,
            "doc_ids": doc_ids,
            "contains_any": contains_any,
        }
        answer = await api.post("/v1/admin/extraction/rerun", body)
        return show(request, "admin/fragments/extraction_run.html", answer, form=form)

    @router.get("/ui/fragments/admin/extraction/runs/{run_id}")
    async def extraction_run(request: Request, api: Api, run_id: Key) -> HTMLResponse:
        answer = await api.get(f"/v1/admin/extraction/runs/{run_id}")
        return show(request, "admin/fragments/extraction_run.html", answer, form=None)

    # --- community summaries: preview, then rebuild ------------------------------------------------------

    @router.get("/ui/fragments/admin/communities")
    async def communities(request: Request, api: Api) -> HTMLResponse:
        # The dry run is admin-only and free: a reader gets the API's refusal instead of the form.
        answer = await api.post("/v1/admin/communities/rebuild", {"dry_run": True, "stale_only": True})
        return show(request, "admin/fragments/communities.html", answer)

    @router.post("/ui/fragments/admin/communities")
    async def rebuild(
        request: Request,
        api: Api,
        stale_only: Annotated[bool, Form()] = False,
        run: Annotated[bool, Form()] = False,
    ) -> HTMLResponse:
        answer = await api.post("/v1/admin/communities/rebuild", {"dry_run": not run, "stale_only": stale_only})
        if not answer.ok:
            return error_fragment(request, answer)
        planned = rebuild_plan(answer.body) if not run else {}
        return fragment(
            request,
            "admin/fragments/communities_run.html",
            body=answer.body,
            dry_run=not run,
            stale_only=stale_only,
            planned=planned,
        )

    @router.get("/ui/fragments/admin/communities/runs/{run_id}")
    async def rebuild_run(request: Request, api: Api, run_id: Key) -> HTMLResponse:
        answer = await api.get(f"/v1/admin/communities/rebuild/{run_id}")
        return show(request, "admin/fragments/communities_run.html", answer, dry_run=False, planned={})

    # --- reads -------------------------------------------------------------------------------------------------

    @router.get("/ui/fragments/admin/deletions")
    async def deletions(request: Request, api: Api) -> HTMLResponse:
        return show(request, "admin/fragments/deletions.html", await api.get("/v1/admin/deletions", {"limit": 50}))

    @router.get("/ui/fragments/admin/ontology")
    async def ontology(request: Request, api: Api) -> HTMLResponse:
        return show(request, "admin/fragments/ontology.html", await api.get("/v1/admin/ontology"))

    @router.get("/ui/fragments/admin/ingest")
    async def ingest(request: Request, api: Api) -> HTMLResponse:
        errors, letters = await asyncio.gather(
            api.get("/v1/admin/ingest/errors", {"limit": 50}), api.get("/v1/admin/dead-letters", {"limit": 50})
        )
        if not errors.ok:
            return error_fragment(request, errors)
        return show(request, "admin/fragments/ingest.html", letters, errors=errors.body["errors"])

    @router.get("/ui/fragments/admin/eval")
    async def evals(request: Request, api: Api) -> HTMLResponse:
        return show(request, "admin/fragments/eval.html", await api.get("/v1/admin/eval", {"limit": 20}))

    @router.get("/ui/fragments/admin/eval/{run_id}")
    async def eval_run(request: Request, api: Api, run_id: Key) -> HTMLResponse:
        return show(request, "admin/fragments/eval_run.html", await api.get(f"/v1/admin/eval/{run_id}"))

    async def curation_queue(request: Request, api: ApiAsCaller, notice: str = "") -> HTMLResponse:
        answer = await api.get("/v1/admin/curation", {"limit": 50})
        return show(request, "admin/fragments/curation.html", answer, notice=notice)

    @router.get("/ui/fragments/admin/curation")
    async def curation(request: Request, api: Api) -> HTMLResponse:
        return await curation_queue(request, api)

    @router.post("/ui/fragments/admin/curation/resolve")
    async def resolve(
        request: Request,
        api: Api,
        feedback_id: Annotated[str, Form(max_length=MAX_KEY_CHARS, pattern=UI_KEY)],
        resolution: Text,
    ) -> HTMLResponse:
        answer = await api.post(f"/v1/admin/curation/feedback/{feedback_id}/resolve", {"resolution": resolution})
        if not answer.ok:
            return error_fragment(request, answer)
        return await curation_queue(request, api, f"Resolved {feedback_id}.")

    return router
