"""`GET /v1/documents/{doc_id}`: a document's text and metadata, for its readers only.

What a citation points into: `citations[].span` are byte offsets of this `text`'s UTF-8 encoding. A document
the caller cannot read is `404 DOCUMENT_NOT_FOUND`, exactly like one that does not exist.
"""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends

from kgrag_query_api.auth import Principal
from kgrag_query_api.patterns import DOC_ID, MAX_DOC_ID, DocIdPath, check
from kgrag_query_api.responses import AUTHENTICATED, errors
from kgrag_runtime.app import KgragApp
from kgrag_runtime.document_view import DocumentView, read_document


def document_router(
    kg: KgragApp, who_dep: Callable[..., Principal], run: Callable[[Callable[[], Any]], Any]
) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["query"], responses=AUTHENTICATED)

    @router.get("/documents/{doc_id:path}", responses=errors(404))
    def get_document(doc_id: DocIdPath, who: Annotated[Principal, Depends(who_dep)]) -> dict[str, Any]:
        """The stored document's text (what citation spans index, as UTF-8 bytes), title, source, URI,
        version and date; `search` or `ask` scope (what made the citation), and only for a caller who may
        read it."""
        if "ask" not in who.scopes:
            who.require("search")
        check(doc_id, DOC_ID, field="doc_id", max_chars=MAX_DOC_ID)
        view: DocumentView = run(lambda: read_document(kg, doc_id, who.caller))
        return view.as_dict()

    return router
