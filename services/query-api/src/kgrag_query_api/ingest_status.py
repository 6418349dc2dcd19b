"""`GET /v1/ingest/documents/{doc_id}/status`: what became of one document, on both runtimes.

The ingest log is written by whoever handled the document (the embedded bus, or the chunk-indexer and
deletion workers on Kafka), so a caller who submitted a document can look up its outcome — indexed,
updated, unchanged, rejected with a code, deleted — by ID (the same answer as `kgrag status --doc ID`).
Ingest scope: the caller who submits documents; a reader token learns nothing about which documents exist.
"""

# No `from __future__ import annotations`: FastAPI must see the `Depends(who_dep)` closures as objects.
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from kgrag_core.ingest_status import DEFAULT_LIMIT, MAX_LIMIT
from kgrag_core.ingest_status import document_status as outcome_of
from kgrag_core.ports import IngestLog
from kgrag_query_api.auth import Principal
from kgrag_query_api.patterns import DOC_ID, MAX_DOC_ID, DocIdPath, check
from kgrag_query_api.responses import AUTHENTICATED, errors


def ingest_status_router(ingest_log: IngestLog, who_dep: Callable[..., Principal]) -> APIRouter:
    router = APIRouter(prefix="/v1/ingest", tags=["ingest"], responses=AUTHENTICATED)

    @router.get("/documents/{doc_id:path}/status", responses=errors(404))
    def document_status(
        doc_id: DocIdPath,
        who: Annotated[Principal, Depends(who_dep)],
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    ) -> dict[str, Any]:
        """The document's latest outcomes, newest first; 404 DOCUMENT_NOT_FOUND if none was ever recorded."""
        who.require("ingest")
        check(doc_id, DOC_ID, field="doc_id", max_chars=MAX_DOC_ID)
        return outcome_of(ingest_log, doc_id, limit=limit)

    return router
