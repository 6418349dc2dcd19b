"""The operators' reads behind the web app's admin pages: recent ingest errors, deletions with the audit of
every store purged, dead letters. Admin only (the refusal of every other token is in
test_operator_views_http); here the admin sees what happened. Real embedded PostgreSQL."""

from __future__ import annotations

from fastapi.testclient import TestClient

from kgrag_core.acl import AclClass
from kgrag_core.documents import SourceDocument
from kgrag_query_api.api import create_app
from kgrag_runtime.app import KgragApp
from tests.pipeline.test_entities_http import ADMIN, ENGINEER, VERIFIER


def _doc(doc_id: str, text: str) -> SourceDocument:
    acl = AclClass.of(["group:engineering"])
    return SourceDocument(doc_id, "wiki", f"wiki://{doc_id}", f"Title of {doc_id}", text.encode(), acl)


def test_admin_sees_ingest_errors_deletions_with_purges_and_dead_letters(kg: KgragApp) -> None:
    kg.ingest([_doc("ops-kept", "# Kept\n\nAtlas runs on PostgreSQL.\n"), _doc("ops-gone", "# Gone\n\nBeacon.\n")])
    [rejected] = kg.ingest([_doc("ops-blank", "   \n")])
    assert rejected.error_code is not None
    kg.delete("ops-gone")
    with TestClient(create_app(kg, VERIFIER)) as client:
        errors = client.get("/v1/admin/ingest/errors", headers=ADMIN)
        assert errors.status_code == 200
        assert [(e["doc_id"], e["error_code"]) for e in errors.json()["errors"]] == [("ops-blank", "EMPTY_DOCUMENT")]
        assert errors.json()["errors"][0]["at"]

        deletions = client.get("/v1/admin/deletions?limit=5", headers=ADMIN).json()["deletions"]
        assert [d["doc_id"] for d in deletions] == ["ops-gone"]
        [audit] = deletions[0]["audit"]
        assert audit["chunks"] >= 1
        purged = {p["store"]: p["status"] for p in audit["purges"]}
        assert "postgres" in purged and all(purged.values()), purged

        letters = client.get("/v1/admin/dead-letters", headers=ADMIN).json()
        assert letters["note"] is None and isinstance(letters["topics"], dict)

        refused = client.get("/v1/admin/deletions", headers=ENGINEER)  # the control: a reader gets nothing
        assert refused.status_code == 403 and "ops-gone" not in refused.text
