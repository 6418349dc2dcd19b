"""Operators' reads over HTTP: recent ingest errors, deletions with their per-store purge audit, and the
embedded runtime's dead letters. Admin only; they back the web app's admin pages.

They only read what `kgrag status` and the deletion log already hold; nothing here changes anything.
"""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from kgrag_core.ingest import IngestOutcome, IngestStatus
from kgrag_core.ports import DocumentStore
from kgrag_query_api.auth import Principal
from kgrag_query_api.responses import AUTHENTICATED
from kgrag_runtime.app import KgragApp
from kgrag_runtime.ingest_gateway import EmbeddedIngest

MAX_LIMIT = 200
# Deletions are found among the latest outcomes; this many are scanned for `limit` deletions.
_SCAN = 2000


def _outcome(o: IngestOutcome) -> dict[str, object]:
    return {**o.as_dict(), "at": o.at.isoformat() if o.at else None}


def ops_router(kg: KgragApp, who_dep: Callable[..., Principal], run: Callable[[Callable[[], Any]], Any]) -> APIRouter:
    router = APIRouter(prefix="/v1/admin", tags=["operations"], responses=AUTHENTICATED)
    Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description="How many, newest first.")]

    @router.get("/ingest/errors")
    def ingest_errors(who: Annotated[Principal, Depends(who_dep)], limit: Limit = 50) -> dict[str, Any]:
        """The latest rejected ingests (documents refused with an error code), newest first."""
        who.require("admin")
        return {"errors": [_outcome(o) for o in run(lambda: kg.ingest_log.recent_errors(limit))]}

    @router.get("/deletions")
    def deletions(who: Annotated[Principal, Depends(who_dep)], limit: Limit = 50) -> dict[str, Any]:
        """The latest deletions, each with its audit record: the chunks and objects removed and what each
        store did (purged, shredded, deleted or failed) and when."""
        who.require("admin")

        def read() -> list[dict[str, object]]:
            store = kg.ingest_log
            deleted = [o for o in store.recent_outcomes(_SCAN) if o.status is IngestStatus.DELETED][:limit]
            out: list[dict[str, object]] = []
            for o in deleted:
                records = store.deletion_records(o.doc_id) if isinstance(store, DocumentStore) else []
                out.append(
                    {
                        **_outcome(o),
                        "audit": [
                            {
                                "at": r.at.isoformat() if r.at else None,
                                "chunks": len(r.chunk_ids),
                                "object_keys": len(r.object_keys),
                                "stores": list(r.stores),
                                "purges": [p.as_dict() for p in r.purges],
                            }
                            for r in records
                        ],
                    }
                )
            return out

        return {"deletions": run(read)}

    @router.get("/dead-letters")
    def dead_letters(who: Annotated[Principal, Depends(who_dep)], limit: Limit = 50) -> dict[str, Any]:
        """Inputs a handler could never process. Embedded: the in-process bus's dead-letter topics (this
        process's lifetime). Distributed: `null` here; they are on Kafka
        (`python -m kgrag_runtime.admin dlq CONSUMER`)."""
        who.require("admin")
        if not isinstance(kg.ingestion, EmbeddedIngest):
            return {
                "topics": None,
                "note": "distributed runtime: read them with `python -m kgrag_runtime.admin dlq CONSUMER`",
            }
        topics = {
            name: [
                {"key": d.key, "error_code": d.error_code, "reason": d.reason}
                for d in letters[-limit:][::-1]  # newest first; the payload stays out (it may hold text)
            ]
            for name, letters in sorted(kg.ingestion.bus.dead_letters.items())
        }
        return {"topics": topics, "note": None}

    return router
