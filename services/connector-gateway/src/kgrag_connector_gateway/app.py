"""The connector gateway's wiring: ingestion endpoints producing onto Kafka, ready while a broker answers."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaException
from fastapi import FastAPI

from kgrag_adapters.postgres.store import PostgresStore
from kgrag_query_api.api import create_gateway_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.distributed import active_document_check, producer, require
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_key_ring


def build_gateway(settings: KgragSettings, verifier: TokenVerifier) -> FastAPI:
    events = producer(settings, "connector-gateway")
    # Events are sealed under their documents' data keys (ADR 0008), which live in PostgreSQL: the gateway
    # needs KGRAG_PG_DSN and the shared KEK like the workers, and so it also answers a delete or ACL change
    # of an unknown document with 404, as the query API does.
    store = PostgresStore.connect(
        require(settings.pg_dsn.get_secret_value() if settings.pg_dsn else None, "KGRAG_PG_DSN"),
        pool_size=settings.pg_pool_size,
        kek=build_key_ring(settings),
        encrypt=settings.content_encryption,
    )

    def ready() -> dict[str, Any]:
        # The producer learns "all brokers down" from librdkafka at once; ask the broker only otherwise.
        if not events.reachable():
            return {"ok": False, "brokers": 0, "error": "no Kafka broker answers"}
        try:
            brokers = events.brokers(timeout_s=3)  # the producer's own client: no second one to keep alive
        except KafkaException as err:
            return {"ok": False, "brokers": 0, "error": str(err)}
        return {"ok": brokers > 0, "brokers": brokers}

    ingest = KafkaIngest(
        events,
        cipher=store.cipher,
        ack_timeout_s=settings.kafka_ack_timeout_s,
        is_active=active_document_check(store),
    )
    app = create_gateway_app(ingest, verifier, ready=ready)
    # Closed with the process; tests close them with close_gateway.
    app.state.store = store
    app.state.events = events
    return app


def close_gateway(app: FastAPI) -> None:
    """Close what build_gateway opened: the Kafka producer (now, not whenever the collector gets to it) and
    the PostgreSQL pool."""
    app.state.events.close()
    app.state.store.close()
