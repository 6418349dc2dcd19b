"""Entity pages: find an entity by name, then its timeline, relations, conflicts and neighbourhood graph.

Pages are shells; the fragments are rendered from `/v1/entities/...` as the caller's own token (api_client),
so an entity the token may not see is the API's `404 ENTITY_NOT_FOUND` here too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Annotated, Any
from urllib.parse import quote as url_quote

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse

from kgrag_query_api.auth import Principal
from kgrag_query_api.patterns import MAX_KEY_CHARS
from kgrag_query_api.ui.api_client import ApiAsCaller
from kgrag_query_api.ui.entity_view import UI_KEY, graph_view, relation_groups, timelines
from kgrag_query_api.ui.routes import Api, error_fragment
from kgrag_query_api.ui.templating import fragment, page

EntityId = Annotated[str, Path(max_length=MAX_KEY_CHARS, pattern=UI_KEY)]
Depth = Annotated[int, Query(ge=1, le=3)]
Relation = Annotated[str, Query(max_length=64)]
SECTION = "/ui/entities"


async def _spans(api: ApiAsCaller, claims: Iterable[dict[str, Any]]) -> dict[tuple[str, str], tuple[int, int]]:
    """Byte spans of the claims' quotes in their documents, so each opens the source view at the quote.
    Read as the caller (a document it cannot read gives no span, and its claim was not shown anyway)."""
    wanted: dict[str, set[str]] = {}
    for c in claims:
        if c.get("doc_id") and c.get("quote"):
            wanted.setdefault(str(c["doc_id"]), set()).add(str(c["quote"]))
    answers = await asyncio.gather(*(api.get(f"/v1/documents/{url_quote(d, safe='/')}") for d in wanted))
    spans: dict[tuple[str, str], tuple[int, int]] = {}
    for doc_id, answer in zip(wanted, answers, strict=True):
        if not answer.ok:
            continue
        body = str(answer.body.get("text") or "").encode()
        for q in wanted[doc_id]:
            start = body.find(q.encode())
            if start >= 0:
                spans[(doc_id, q)] = (start, start + len(q.encode()))
    return spans


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
        spans = await _spans(api, body["attributes"])

        def source_link(doc_id: str, _chunk_id: str, quote: str) -> str:
            link = f"/ui/documents/{url_quote(doc_id, safe='/')}"
            span = spans.get((doc_id, quote))
            return f"{link}?start={span[0]}&end={span[1]}" if span else link

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

    return router
