"""The pages and fragments of the ask, search, source and trace views, and the sign-in.

Pages (`/ui/...`) are shells without data; fragments (`/ui/fragments/...`) are rendered from what `/v1`
answers the caller's own token (api_client). The streamed answer itself is read by the browser straight
from `POST /v1/ask` (static/ask.js): the page only lays it out.
"""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from kgrag_query_api.auth import Principal
from kgrag_query_api.patterns import DocIdPath
from kgrag_query_api.ui.api_client import ApiAnswer, ApiAsCaller, api_as_caller
from kgrag_query_api.ui.filters import api_filters
from kgrag_query_api.ui.highlight import highlight
from kgrag_query_api.ui.templating import fragment, page

Api = Annotated[ApiAsCaller, Depends(api_as_caller)]
Offset = Annotated[int | None, Query(ge=0, description="Byte offset (UTF-8) of the cited span.")]
Field = Annotated[str, Query(max_length=512)]


def error_fragment(request: Request, answer: ApiAnswer) -> HTMLResponse:
    """The API's error, shown where the data would have been, with the API's status (401 makes the page
    ask for a token again: static/app.js)."""
    return fragment(request, "fragments/error.html", status_code=answer.status, error=answer.error)


def page_router() -> APIRouter:
    router = APIRouter(prefix="/ui", include_in_schema=False)

    @router.get("")
    def home(request: Request) -> HTMLResponse:
        return page(request, "ask.html", title="Ask", section="/ui")

    @router.get("/")
    def home_slash() -> RedirectResponse:
        return RedirectResponse("/ui", status_code=308)

    @router.get("/signin")
    def signin(request: Request) -> HTMLResponse:
        return page(request, "signin.html", title="Sign in")

    @router.get("/documents/{doc_id:path}")
    def document_page(request: Request, doc_id: DocIdPath, start: Offset = None, end: Offset = None) -> HTMLResponse:
        return page(request, "document.html", title="Source", doc_id=doc_id, start=start, end=end)

    @router.get("/traces/{trace_id}")
    def trace_page(request: Request, trace_id: str) -> HTMLResponse:
        return page(request, "trace.html", title="Why this answer", trace_id=trace_id)

    return router


def fragment_router(who_dep: Callable[..., Principal]) -> APIRouter:
    router = APIRouter(prefix="/ui/fragments", include_in_schema=False)

    @router.get("/me")
    def me(request: Request, who: Annotated[Principal, Depends(who_dep)]) -> HTMLResponse:
        """Who the token says the caller is (the same verification as /v1)."""
        return fragment(request, "fragments/me.html", caller=who.caller, scopes=sorted(who.scopes))

    @router.get("/search")
    async def search(
        request: Request,
        api: Api,
        q: Annotated[str, Query(min_length=1, max_length=4000)],
        sources: Field = "",
        date_from: Field = "",
        date_to: Field = "",
        as_of: Field = "",
    ) -> HTMLResponse:
        body: dict[str, Any] = {"query": q, "top_k": 10}
        filters = api_filters(sources, date_from, date_to, as_of)
        if filters:
            body["filters"] = filters
        answer = await api.post("/v1/search", body)
        if not answer.ok:
            return error_fragment(request, answer)
        return fragment(request, "fragments/search.html", result=answer.body)

    @router.get("/documents/{doc_id:path}")
    async def document(
        request: Request, api: Api, doc_id: DocIdPath, start: Offset = None, end: Offset = None
    ) -> HTMLResponse:
        answer = await api.get(f"/v1/documents/{doc_id}")
        if not answer.ok:
            return error_fragment(request, answer)
        doc = answer.body
        return fragment(request, "fragments/document.html", doc=doc, parts=highlight(doc["text"], start, end))

    @router.get("/traces/{trace_id}")
    async def trace(request: Request, api: Api, trace_id: str) -> HTMLResponse:
        answer = await api.get(f"/v1/traces/{trace_id}")
        if not answer.ok:
            return error_fragment(request, answer)
        return fragment(request, "fragments/trace.html", trace=answer.body)

    @router.post("/feedback")
    async def feedback(
        request: Request,
        api: Api,
        trace_id: Annotated[str, Form(max_length=200)],
        rating: Annotated[int, Form()],
    ) -> HTMLResponse:
        answer = await api.post("/v1/feedback", {"trace_id": trace_id, "rating": rating})
        if not answer.ok:
            return error_fragment(request, answer)
        return fragment(request, "fragments/feedback.html", rating=rating)

    return router
