"""The connector gateway during a Kafka outage: a fast 503 with Retry-After and an unready /readyz, never a
caller blocked for the flush limit nor a 4xx (issue 16, item 5). The outage is genuine: the gateway's
producer points at a port where no broker listens, so librdkafka sees real connection failures."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from kgrag_connector_gateway.app import build_gateway, close_gateway
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.settings import KgragSettings
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.integration
VERIFIER = TokenVerifier(key="test-key-" + "x" * 32, issuer="kgrag-test", audience="kgrag", algorithm="HS256")
TOKEN = {"Authorization": f"Bearer {VERIFIER.issue('connector', groups=[], scopes=['ingest'])}"}
DOC = {"doc_id": "outage-probe", "source": "wiki", "title": "Probe", "text": "The gateway answers fast."}


def _post(client: TestClient) -> tuple[int, dict[str, str], dict[str, object], float]:
    started = time.monotonic()
    response = client.post("/v1/ingest/documents", json=DOC, headers=TOKEN)
    return response.status_code, dict(response.headers), response.json(), time.monotonic() - started


def test_the_gateway_answers_503_fast_while_no_broker_answers(distributed_settings: KgragSettings) -> None:
    down = distributed_settings.model_copy(update={"kafka_bootstrap": "127.0.0.1:9", "kafka_ack_timeout_s": 2.0})
    app = build_gateway(down, VERIFIER)
    with TestClient(app) as client:
        status, headers, body, took = _post(client)
        # Before librdkafka has given up on every broker the call waits for its acknowledgement, bounded.
        assert status == 503, body
        assert body["error"]["code"] == "BROKER_UNAVAILABLE"  # type: ignore[index]
        assert headers["retry-after"] == "5"
        assert took < 2.0 + 1.5
        wait_for(lambda: client.get("/readyz").status_code == 503, timeout_s=15, what="/readyz false")
        # Once every broker is known down, callers are refused at once.
        status, headers, body, took = _post(client)
        assert status == 503 and headers["retry-after"] == "5"
        assert took < 1.5
        assert client.get("/readyz").json()["ok"] is False
    close_gateway(app)


def test_positive_control_the_same_gateway_queues_against_the_real_broker(
    distributed_settings: KgragSettings,
) -> None:
    app = build_gateway(distributed_settings, VERIFIER)
    with TestClient(app) as client:
        status, _, body, _ = _post(client)
        assert status == 202, body
        assert body["status"] == "QUEUED"
        ready = client.get("/readyz")
        assert ready.status_code == 200 and ready.json()["brokers"] >= 1
    close_gateway(app)
