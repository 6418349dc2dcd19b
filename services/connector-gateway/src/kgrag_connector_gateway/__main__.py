"""`python -m kgrag_connector_gateway`: accept change events over HTTP and produce them onto Kafka."""

from __future__ import annotations

import os
from typing import Any

import uvicorn
from confluent_kafka.admin import AdminClient
from rich.console import Console

from kgrag_adapters.postgres.store import PostgresStore
from kgrag_query_api.api import create_gateway_app
from kgrag_query_api.server import verifier_for
from kgrag_runtime.distributed import producer, require
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_key_ring


def main() -> None:
    settings = KgragSettings()
    bootstrap = require(settings.kafka_bootstrap, "KGRAG_KAFKA_BOOTSTRAP")
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def ready() -> dict[str, Any]:
        metadata = admin.list_topics(timeout=3)
        return {"ok": bool(metadata.brokers), "brokers": len(metadata.brokers)}

    # Events are sealed under their documents' data keys (ADR 0008); the keys live in PostgreSQL, so the
    # gateway needs KGRAG_PG_DSN and the shared KEK like the workers.
    store = PostgresStore.connect(
        require(settings.pg_dsn.get_secret_value() if settings.pg_dsn else None, "KGRAG_PG_DSN"),
        kek=build_key_ring(settings),
        encrypt=settings.content_encryption,
    )
    app = create_gateway_app(
        KafkaIngest(producer(settings, "connector-gateway"), cipher=store.cipher),
        verifier_for(Console(stderr=True)),
        ready=ready,
    )
    uvicorn.run(app, host=os.environ.get("KGRAG_HOST", "127.0.0.1"), port=int(os.environ.get("KGRAG_PORT", "8080")))


if __name__ == "__main__":
    main()
