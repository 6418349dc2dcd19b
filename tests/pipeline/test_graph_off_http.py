"""A server running without the knowledge graph (KGRAG_EXTRACTION_ENABLED=false) answers the graph's and
extraction's endpoints with a documented 503 and the stable code CONFIGURATION_INVALID, never a 500 (which
reads as a crash); search keeps working. Real embedded PostgreSQL and model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_query_api.api import create_app
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from tests.pipeline.test_entities_http import ADMIN, ENGINEER, VERIFIER


@pytest.fixture
def client(tmp_path: Path, pg_dsn: str, embedder: OnnxMiniLmEmbedder) -> Iterator[TestClient]:
    settings = KgragSettings(data_dir=tmp_path / "index", pg_dsn=pg_dsn, extraction_enabled=False)
    with open_embedded(settings, embedder=embedder) as kg, TestClient(create_app(kg, VERIFIER)) as c:
        yield c


@pytest.mark.pipeline
def test_graph_endpoints_answer_503_configuration_invalid_when_the_graph_is_off(client: TestClient) -> None:
    calls = [
        ("GET", "/v1/entities/ent_x", ENGINEER, None),
        ("GET", "/v1/entities/ent_x/neighbors", ENGINEER, None),
        ("POST", "/v1/entities/resolve", ENGINEER, {"name": "Atlas"}),
        ("GET", "/v1/admin/entities/merges", ADMIN, None),
        ("POST", "/v1/admin/entities/resolution", ADMIN, None),
        ("GET", "/v1/admin/ontology", ADMIN, None),
    ]
    for method, path, headers, body in calls:
        response = client.request(method, path, headers=headers, json=body)
        assert response.status_code == 503, (path, response.status_code, response.text)
        assert response.json()["error"]["code"] == "CONFIGURATION_INVALID", (path, response.text)
    # Positive control: the server is up and serves what it runs with.
    searched = client.post("/v1/search", headers=ENGINEER, json={"query": "Atlas"})
    assert searched.status_code == 200, searched.text
