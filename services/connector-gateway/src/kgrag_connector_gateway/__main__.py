"""`python -m kgrag_connector_gateway`: accept change events over HTTP and produce them onto Kafka."""

from __future__ import annotations

import os
from typing import Any

import uvicorn
from confluent_kafka.admin import AdminClient
from rich.console import Console

from kgrag_query_api.api import create_gateway_app
from kgrag_query_api.server import verifier_for
from kgrag_runtime.distributed import producer, require
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.settings import KgragSettings


def main() -> None:
    settings = KgragSettings()
    bootstrap = require(settings.kafka_bootstrap, "KGRAG_KAFKA_BOOTSTRAP")
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def ready() -> dict[str, Any]:
        metadata = admin.list_topics(timeout=3)
        return {"ok": bool(metadata.brokers), "brokers": len(metadata.brokers)}

    app = create_gateway_app(
        KafkaIngest(producer(settings, "connector-gateway")), verifier_for(Console(stderr=True)), ready=ready
    )
    uvicorn.run(app, host=os.environ.get("KGRAG_HOST", "127.0.0.1"), port=int(os.environ.get("KGRAG_PORT", "8080")))


if __name__ == "__main__":
    main()
