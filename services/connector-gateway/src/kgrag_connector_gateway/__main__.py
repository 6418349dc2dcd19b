"""`python -m kgrag_connector_gateway`: accept change events over HTTP and produce them onto Kafka."""

from __future__ import annotations

import os

import uvicorn
from rich.console import Console

from kgrag_connector_gateway.app import build_gateway
from kgrag_query_api.server import stop_cleanly_on_signals, verifier_for
from kgrag_runtime.settings import KgragSettings


def main() -> None:
    app = build_gateway(KgragSettings(), verifier_for(Console(stderr=True)))
    # Like the query API: SIGTERM ends the process through this path (uvicorn re-raising it after its
    # graceful shutdown killed the process before the PostgreSQL pool was closed).
    with stop_cleanly_on_signals():
        try:
            uvicorn.run(
                app, host=os.environ.get("KGRAG_HOST", "127.0.0.1"), port=int(os.environ.get("KGRAG_PORT", "8080"))
            )
        finally:
            app.state.store.close()


if __name__ == "__main__":
    main()
