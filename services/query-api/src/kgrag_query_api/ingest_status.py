"""`GET /v1/ingest/documents/{doc_id}/status`: what became of one document, on both runtimes.

The ingest log is written by whoever handled the document (the embedded bus, or the chunk-indexer and
deletion workers on Kafka), so a caller who submitted a document can look up its outcome — indexed,
updated, unchanged, rejected with a code, deleted — by ID. Ingest scope: the caller who submits
documents; a reader token learns nothing about which documents exist.
"""

# No `from __future__ import annotations`: FastAPI must see the `Depends(who_dep)` closures as objects.
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from kgrag_core.errors import ErrorCode, KgragError
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
        limit: Annotated[int, Query(ge=1, le=100)] = 20,
    ) -> dict[str, Any]:
        """The document's latest outcomes, newest first; 404 DOCUMENT_NOT_FOUND if none was ever recorded."""
        who.require("ingest")
        check(doc_id, DOC_ID, field="doc_id", max_chars=MAX_DOC_ID)
        outcomes = ingest_log.outcomes_for(doc_id, limit=limit)
        if not outcomes:
            raise KgragError(
                ErrorCode.DOCUMENT_NOT_FOUND,
                f"No outcome recorded for {doc_id!r}.",
                hint="Distributed: a QUEUED document shows here once a worker has handled it.",
            )
        return {"doc_id": doc_id, "status": outcomes[0].status.value, "outcomes": [o.as_dict() for o in outcomes]}

    return router
