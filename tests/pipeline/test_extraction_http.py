"""Extraction administration over HTTP: scopes, ontology versions, re-extraction previews and runs, claims.

Real embedded PostgreSQL; the chat model is the labelled fake from kgrag_testing (no model is ever called).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kgrag_adapters.connectors import iter_path
from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_core.acl import PUBLIC_ACL, AclClass
from kgrag_core.documents import SourceDocument
from kgrag_core.extraction.records_text import RECORD_MEDIA_TYPE, render_record
from kgrag_core.extraction.tier0 import LSH_THRESHOLD, estimated_jaccard, minhash_signature
from kgrag_query_api.api import create_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.app import KgragApp
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from kgrag_testing.scripted_llm import ScriptedChatModel, first_word_entity

VERIFIER = TokenVerifier(key="test-key-" + "x" * 32, issuer="kgrag-test", audience="kgrag", algorithm="HS256")
CORPUS = Path("corpora/northwind")
INCIDENTS = ("incident-inc-2023-011-atlas-cache-evictions", "incident-inc-2024-002-relay-cert-expiry")
# Example prices (not any provider's list price): the preview's cost must follow them.
PRICE_IN, PRICE_OUT = 0.15, 0.60


def bearer(sub: str, groups: list[str], scopes: list[str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {VERIFIER.issue(sub, groups=groups, scopes=scopes)}"}


ADMIN = bearer("root", [], ["admin"])


@pytest.fixture
def settings(tmp_path: Path, pg_dsn: str) -> KgragSettings:
    return KgragSettings(
        data_dir=tmp_path / "index",
        pg_dsn=pg_dsn,
        max_document_bytes=20_000,
        llm_price_input_per_mtok=PRICE_IN,
        llm_price_output_per_mtok=PRICE_OUT,
        llm_price_currency="EUR",
    )


@pytest.fixture
def client(kg: KgragApp) -> Iterator[TestClient]:
    with TestClient(create_app(kg, VERIFIER)) as c:
        yield c


def _incidents() -> list[SourceDocument]:
    return [d for d in iter_path(CORPUS / "documents.jsonl") if isinstance(d, SourceDocument) and d.doc_id in INCIDENTS]


def _site(doc_id: str, fields: dict[str, str], day: str, acl: AclClass = PUBLIC_ACL) -> SourceDocument:
    return SourceDocument(
        doc_id=doc_id,
        source="records",
        uri=f"records://{doc_id}",
        title=doc_id,
        body=render_record("site", fields).encode(),
        acl=acl,
        modified_at=datetime.fromisoformat(day).replace(tzinfo=UTC),
        media_type=RECORD_MEDIA_TYPE,
    )


def _ontology_body(client: TestClient) -> dict[str, Any]:
    body: dict[str, Any] = client.get("/v1/admin/ontology", headers=ADMIN).json()
    body.pop("versions")
    return body


def test_admin_endpoints_need_a_token_and_the_admin_scope(client: TestClient) -> None:
    reader = bearer("sam", ["engineering"], ["search", "ask", "ingest"])
    calls = [
        ("GET", "/v1/admin/ontology", None),
        ("PUT", "/v1/admin/ontology", {"version": "9", "entity_types": {"Person": {}}}),
        ("POST", "/v1/admin/extraction/rerun", {"extractor_version": "2"}),
        ("GET", "/v1/admin/extraction/runs/run-000000000000", None),
        ("POST", "/v1/admin/extraction/runs/run-000000000000/resume", None),
    ]
    for method, path, body in calls:
        anonymous = client.request(method, path, json=body)
        assert anonymous.status_code == 401, path
        assert anonymous.json()["error"]["code"] == "UNAUTHENTICATED"
        forbidden = client.request(method, path, json=body, headers=reader)
        assert forbidden.status_code == 403, path
        assert forbidden.json()["error"]["code"] == "FORBIDDEN"
    assert client.get("/v1/claims", params={"entity": "LEJ-2"}).status_code == 401
    assert client.get("/v1/claims", params={"entity": "LEJ-2"}, headers=bearer("x", [], ["ask"])).status_code == 403
    # Nothing a refused call sent was applied.
    assert client.get("/v1/admin/ontology", headers=ADMIN).json()["version"] == "1"


def test_put_ontology_creates_a_version_and_refuses_bad_bodies(client: TestClient) -> None:
    before = client.get("/v1/admin/ontology", headers=ADMIN).json()
    assert before["version"] == "1" and "1" in before["versions"]
    assert {"Person", "Site"} <= set(before["entity_types"])

    body = _ontology_body(client)
    body["version"] = "2"
    body["relation_types"]["MENTORS"] = {"subject": ["Person"], "object": ["Person"]}
    created = client.put("/v1/admin/ontology", json=body, headers=ADMIN)
    assert created.status_code == 200, created.text
    assert created.json()["version"] == "2" and created.json()["created"] is True
    after = client.get("/v1/admin/ontology", headers=ADMIN).json()
    assert after["version"] == "2" and {"1", "2"} <= set(after["versions"])
    assert "MENTORS" in after["relation_types"]
    # The same body again is not a new version.
    assert client.put("/v1/admin/ontology", json=body, headers=ADMIN).json()["created"] is False

    # A label is immutable: version 2 with other content is refused.
    body["relation_types"]["COACHES"] = {"subject": ["Person"], "object": ["Person"]}
    reused = client.put("/v1/admin/ontology", json=body, headers=ADMIN)
    assert reused.status_code == 422 and reused.json()["error"]["code"] == "ONTOLOGY_INVALID"
    assert "hint" in reused.json()["error"]

    # A relation whose endpoint type does not exist is refused.
    bad = {
        "version": "3",
        "entity_types": {"Person": {}},
        "relation_types": {"X": {"subject": ["Nope"], "object": ["Person"]}},
    }
    invalid = client.put("/v1/admin/ontology", json=bad, headers=ADMIN)
    assert invalid.status_code == 422 and invalid.json()["error"]["code"] == "ONTOLOGY_INVALID"

    final = client.get("/v1/admin/ontology", headers=ADMIN).json()
    assert final["version"] == "2" and "3" not in final["versions"] and "COACHES" not in final["relation_types"]


def test_rerun_dry_run_returns_the_preview_and_writes_nothing(kg: KgragApp, client: TestClient) -> None:
    kg.ingest(_incidents())  # no model configured: the incident chunks are owed their tier-3 pass
    response = client.post(
        "/v1/admin/extraction/rerun",
        headers=ADMIN,
        json={"scope": {"sources": ["incidents"]}, "extractor_version": "2"},
    )
    assert response.status_code == 200, response.text
    run = response.json()
    assert run["dry_run"] is True and run["status"] == "planned" and run["receipt"] is None
    assert run["scope"]["sources"] == ["incidents"] and run["extractor_version"] == "2"
    preview = run["preview"]
    for field in (
        "chunks_in_scope",
        "cache_hits",
        "calls",
        "input_tokens",
        "output_tokens",
        "estimated_cost",
        "currency",
        "estimated_seconds",
        "tokens_counted",
    ):
        assert field in preview, field
    assert preview["chunks_in_scope"] > 0
    assert preview["cache_hits"] == 0  # version 2 was never extracted
    assert 0 < preview["calls"] <= preview["llm_chunks"] <= preview["chunks_in_scope"]
    assert preview["input_tokens"] > 0 and preview["output_tokens"] > 0
    expected = preview["input_tokens"] / 1e6 * PRICE_IN + preview["output_tokens"] / 1e6 * PRICE_OUT
    assert preview["estimated_cost"] == pytest.approx(expected, abs=1e-6) and preview["estimated_cost"] > 0
    assert preview["currency"] == "EUR"
    assert preview["estimated_seconds"] >= preview["calls"] * 8.0  # the default assumed seconds per call
    assert preview["tokens_counted"] is False
    assert "estimated" in run["note"] and "KGRAG_LLM_TOKENIZER_FILE" in run["note"]

    # A dry run stores no run, and previewing the version in force finds every chunk in the cache.
    missing = client.get(f"/v1/admin/extraction/runs/{run['run_id']}", headers=ADMIN)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "RUN_NOT_FOUND"
    current = client.post(
        "/v1/admin/extraction/rerun",
        headers=ADMIN,
        json={"scope": {"sources": ["incidents"]}, "extractor_version": "1"},
    ).json()["preview"]
    assert current["chunks_in_scope"] == preview["chunks_in_scope"]
    # Chunks owed a tier-3 pass were never cached (pending results are not), so they still plan calls.
    assert current["cache_hits"] + current["llm_chunks"] >= current["chunks_in_scope"] - preview["llm_chunks"]


def test_rerun_refuses_unknown_scope_fields_and_unknown_runs(client: TestClient) -> None:
    unknown = client.post(
        "/v1/admin/extraction/rerun",
        headers=ADMIN,
        json={"scope": {"sources": ["wiki"], "tenant": ["acme"]}, "extractor_version": "2"},
    )
    assert unknown.status_code == 422
    assert unknown.json()["error"]["code"] == "INVALID_QUERY" and "tenant" in unknown.json()["error"]["message"]
    not_a_list = client.post(
        "/v1/admin/extraction/rerun", headers=ADMIN, json={"scope": {"sources": "wiki"}, "extractor_version": "2"}
    )
    assert not_a_list.status_code == 422 and not_a_list.json()["error"]["code"] == "INVALID_QUERY"
    blank = client.post("/v1/admin/extraction/rerun", headers=ADMIN, json={"scope": {}, "extractor_version": " "})
    assert blank.status_code == 422 and blank.json()["error"]["code"] == "INVALID_QUERY"
    for method, path in (
        ("GET", "/v1/admin/extraction/runs/run-nope"),
        ("POST", "/v1/admin/extraction/runs/run-nope/resume"),
    ):
        response = client.request(method, path, headers=ADMIN)
        assert response.status_code == 404, path
        assert response.json()["error"]["code"] == "RUN_NOT_FOUND"


def test_a_real_run_does_what_its_preview_said_and_can_be_read_back(
    settings: KgragSettings, embedder: OnnxMiniLmEmbedder
) -> None:
    with open_embedded(settings, embedder=embedder) as kg:
        kg.ingest(_incidents())
    model = ScriptedChatModel(first_word_entity)
    with open_embedded(settings, embedder=embedder, llm=model) as kg, TestClient(create_app(kg, VERIFIER)) as c:
        body = {"scope": {"sources": ["incidents"]}, "extractor_version": "2"}
        preview = c.post("/v1/admin/extraction/rerun", headers=ADMIN, json=body).json()["preview"]
        assert model.calls == []  # the dry run called nothing
        real = c.post("/v1/admin/extraction/rerun", headers=ADMIN, json={**body, "dry_run": False})
        assert real.status_code == 200, real.text
        run = real.json()
        assert run["dry_run"] is False and run["status"] == "completed"
        assert run["preview"] == preview
        for field in ("chunks_in_scope", "cache_hits", "llm_chunks", "calls", "input_tokens"):
            assert run["receipt"][field] == preview[field], field
        assert run["receipt"]["calls"] == len(model.calls) > 0
        stored = c.get(f"/v1/admin/extraction/runs/{run['run_id']}", headers=ADMIN)
        assert stored.status_code == 200
        assert stored.json()["status"] == "completed" and stored.json()["done_chunks"] == preview["chunks_in_scope"]
        # Resuming a finished run calls nothing more.
        resumed = c.post(f"/v1/admin/extraction/runs/{run['run_id']}/resume", headers=ADMIN)
        assert resumed.status_code == 200 and resumed.json()["status"] == "completed"
        assert len(model.calls) == run["receipt"]["calls"]


def test_a_real_run_without_a_model_refuses_rather_than_skip_the_planned_calls(
    kg: KgragApp, client: TestClient
) -> None:
    kg.ingest(_incidents())
    body = {"scope": {"sources": ["incidents"]}, "extractor_version": "2"}
    preview = client.post("/v1/admin/extraction/rerun", headers=ADMIN, json=body).json()["preview"]
    assert preview["calls"] > 0  # the preview plans tier-3 calls, and prices them
    # No chat model is configured, so the run cannot make them: it must say so, not "complete" with 0 calls.
    real = client.post("/v1/admin/extraction/rerun", headers=ADMIN, json={**body, "dry_run": False})
    assert real.status_code == 503, real.text
    assert real.json()["error"]["code"] == "LLM_UNAVAILABLE"


def test_claims_show_only_evidence_the_tokens_groups_can_read(kg: KgragApp, client: TestClient) -> None:
    kg.ingest(
        [
            _site(
                "record-site-open",
                {"code": "TST-9", "city": "Leipzig", "site_type": "Warehouse", "capacity_pallets": "1200"},
                "2024-01-05",
            ),
            _site(
                "record-site-closed",
                {"code": "TST-9", "manager": "Lena Fischer", "headcount": "40", "capacity_pallets": "1500"},
                "2024-06-01",
                AclClass.of(["group:finance"]),
            ),
        ]
    )

    def claims(headers: dict[str, str], **params: str) -> list[dict[str, Any]]:
        response = client.get("/v1/claims", params={"entity": "TST-9", **params}, headers=headers)
        assert response.status_code == 200, response.text
        assert response.json()["entity"] == "TST-9"
        rows: list[dict[str, Any]] = response.json()["claims"]
        return rows

    engineer = claims(bearer("sam", ["engineering"], ["search"]), attribute="capacity_pallets")
    assert [(c["value"], c["doc_id"], c["status"]) for c in engineer] == [("1200", "record-site-open", "current")]
    finance = claims(bearer("fin", ["finance"], ["search"]), attribute="capacity_pallets")
    by_value = {c["value"]: c for c in finance}
    assert set(by_value) == {"1200", "1500"}
    # For a reader of both, the later record supersedes the earlier value; both stay listed, oldest first.
    assert [c["value"] for c in finance] == ["1200", "1500"]
    assert by_value["1200"]["status"] == "superseded"
    assert by_value["1200"]["superseded_by"] == by_value["1500"]["claim_id"]
    assert by_value["1500"]["quote"].startswith("capacity") and by_value["1500"]["written_at"] == "2024-06-01"
    # What the documents said in March 2024: only the January value, current then.
    then = claims(bearer("fin", ["finance"], ["search"]), attribute="capacity_pallets", as_of="2024-03-01")
    assert [(c["value"], c["status"]) for c in then] == [("1200", "current")]
    bad_day = client.get(
        "/v1/claims", params={"entity": "TST-9", "as_of": "March"}, headers=bearer("fin", ["finance"], ["search"])
    )
    assert bad_day.status_code == 422 and bad_day.json()["error"]["code"] == "INVALID_QUERY"
    assert claims(bearer("nobody", [], ["search"]), attribute="nope") == []


def test_records_differing_in_one_value_each_keep_their_own_claim(kg: KgragApp, client: TestClient) -> None:
    # Two exports of the same site months apart: same fields, one value changed. Each is a fact of its own
    # (tier 1 maps every record for free), so neither may be folded into the other as a near-duplicate.
    older = _site("record-site-jan", {"code": "TST-9", "name": "TST-9", "capacity_pallets": "1200"}, "2024-01-05")
    newer = _site("record-site-jun", {"code": "TST-9", "name": "TST-9", "capacity_pallets": "1500"}, "2024-06-01")
    signatures = [minhash_signature(d.body.decode()) for d in (older, newer)]
    assert estimated_jaccard(*signatures) >= LSH_THRESHOLD  # the premise: MinHash calls them near-duplicates
    kg.ingest([older, newer])
    rows = client.get("/v1/claims", params={"entity": "TST-9", "attribute": "capacity_pallets"}, headers=ADMIN).json()[
        "claims"
    ]
    assert [(c["value"], c["doc_id"], c["status"]) for c in rows] == [
        ("1200", "record-site-jan", "superseded"),
        ("1500", "record-site-jun", "current"),
    ]


def test_openapi_lists_the_extraction_paths(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    assert {"get", "put"} <= set(paths["/v1/admin/ontology"])
    assert "post" in paths["/v1/admin/extraction/rerun"]
    assert "get" in paths["/v1/admin/extraction/runs/{run_id}"]
    assert "post" in paths["/v1/admin/extraction/runs/{run_id}/resume"]
    assert "get" in paths["/v1/claims"]
    rerun_schema = spec["components"]["schemas"]["RerunRequest"]
    assert {"scope", "extractor_version", "dry_run"} <= set(rerun_schema["properties"])
    assert rerun_schema["properties"]["dry_run"]["default"] is True
