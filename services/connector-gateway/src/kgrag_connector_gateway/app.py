"""The connector gateway's wiring: ingestion endpoints producing onto Kafka, ready while a broker answers."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from fastapi import FastAPI

from kgrag_query_api.api import create_gateway_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.distributed import producer, require
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.settings import KgragSettings


def build_gateway(settings: KgragSettings, verifier: TokenVerifier) -> FastAPI:
    admin = AdminClient({"bootstrap.servers": require(settings.kafka_bootstrap, "KGRAG_KAFKA_BOOTSTRAP")})
    events = producer(settings, "connector-gateway")

    def ready() -> dict[str, Any]:
        # The producer learns "all brokers down" from librdkafka at once; ask the broker only otherwise.
        if not events.reachable():
            return {"ok": False, "brokers": 0, "error": "no Kafka broker answers"}
        try:
            metadata = admin.list_topics(timeout=3)
        except KafkaException as err:
            return {"ok": False, "brokers": 0, "error": str(err)}
        return {"ok": bool(metadata.brokers), "brokers": len(metadata.brokers)}

    return create_gateway_app(KafkaIngest(events, ack_timeout_s=settings.kafka_ack_timeout_s), verifier, ready=ready)
