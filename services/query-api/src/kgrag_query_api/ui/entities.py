"""Entity pages: find an entity by name, then its timeline, relations, conflicts and neighbourhood graph.

Pages are shells; the fragments are rendered from `/v1/entities/...` as the caller's own token (api_client),
so an entity the token may not see is the API's `404 ENTITY_NOT_FOUND` here too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any
from urllib.parse import quote as url_quote

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse

from kgrag_query_api.auth import Principal
from kgrag_query_api.patterns import MAX_KEY_CHARS
from kgrag_query_api.ui.entity_view import UI_KEY, graph_view, relation_groups, timelines
from kgrag_query_api.ui.routes import Api, error_fragment
from kgrag_query_api.ui.templating import fragment, page

EntityId = Annotated[str, Path(max_length=MAX_KEY_CHARS, pattern=UI_KEY)]
Depth = Annotated[int, Query(ge=1, le=3)]
Relation = Annotated[str, Query(max_length=64)]
SECTION = "/ui/entities"
DocField = Annotated[str, Query(min_length=1, max_length=256)]
QuoteField = Annotated[str, Query(min_length=1, max_length=4000)]


def quote_span(text: str, quote: str) -> tuple[int, int] | None:
    """The quote's byte span in the document's UTF-8 text (the source view's offsets), or None."""
    body, wanted = text.encode(), quote.encode()
    start = body.find(wanted) if wanted else -1
    return (start, start + len(wanted)) if start >= 0 else None


def source_link(doc_id: str, quote: str) -> str:
    """Where a claim's quote opens: a page that finds the quote in the document (as the caller) and then
    shows the source view at its bytes. Found on click, so the entity page reads no document."""
    return f"/ui/quote?doc_id={url_quote(doc_id, safe='')}&quote={url_quote(quote, safe='')}"


def entity_router(who_dep: Callable[..., Principal]) -> APIRouter:
    del who_dep  # fragments authenticate through the API they call
    router = APIRouter(include_in_schema=False)

    @router.get("/ui/entities")
    def entities_page(request: Request, name: Annotated[str, Query(max_length=256)] = "") -> HTMLResponse:
        return page(request, "entities.html", title="Entities", section=SECTION, name=name)

    @router.get("/ui/entities/{entity_id}")
    def entity_page(request: Request, entity_id: EntityId, depth: Depth = 1, relation: Relation = "") -> HTMLResponse:
        return page(
            request,
            "entity_page.html",
            title="Entity",
            section=SECTION,
            entity_id=entity_id,
            depth=depth,
            relation=relation,
        )

    @router.get("/ui/fragments/entities")
    async def find(
        request: Request, api: Api, name: Annotated[str, Query(min_length=1, max_length=256)]
    ) -> HTMLResponse:
        answer = await api.post("/v1/entities/resolve", {"name": name})
        if not answer.ok:
            return error_fragment(request, answer)
        return fragment(request, "fragments/entity_candidates.html", name=name, candidates=answer.body["candidates"])

    @router.get("/ui/fragments/entities/{entity_id}")
    async def entity(
        request: Request, api: Api, entity_id: EntityId, depth: Depth = 1, relation: Relation = ""
    ) -> HTMLResponse:
        params: dict[str, Any] = {"depth": depth, "limit": 100}
        if relation:
            params["relation"] = relation
        got, around = await asyncio.gather(
            api.get(f"/v1/entities/{entity_id}"), api.get(f"/v1/entities/{entity_id}/neighbors", params)
        )
        if not got.ok:
            return error_fragment(request, got)
        if not around.ok:
            return error_fragment(request, around)
        body = got.body
        lines = timelines(body["attributes"])
        return fragment(
            request,
            "fragments/entity.html",
            entity=body,
            timelines=lines,
            conflicts=[t for t in lines if t.has_conflict],
            relations=relation_groups(body["entity_id"], body.get("members") or [], body["relations"]),
            relation_choices=sorted({str(r["relation"]) for r in body["relations"]}),
            graph=graph_view(around.body),
            depth=depth,
            relation=relation,
            source_link=source_link,
        )

    @router.get("/ui/quote")
    def quote_page(request: Request, doc_id: DocField, quote: QuoteField) -> HTMLResponse:
        return page(request, "quote.html", title="Source", section=SECTION, doc_id=doc_id, quote=quote)

    @router.get("/ui/fragments/quote")
    async def find_quote(request: Request, api: Api, doc_id: DocField, quote: QuoteField) -> HTMLResponse:
        answer = await api.get(f"/v1/documents/{url_quote(doc_id, safe='/')}")
        if not answer.ok:
            return error_fragment(request, answer)
        link = f"/ui/documents/{url_quote(doc_id, safe='/')}"
        span = quote_span(str(answer.body.get("text") or ""), quote)
        target = f"{link}?start={span[0]}&end={span[1]}" if span else link
        out = fragment(request, "fragments/quote.html", target=target)
        out.headers["HX-Redirect"] = target  # htmx then opens the source view at the quote
        return out

    return router
