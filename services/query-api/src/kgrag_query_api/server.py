"""Run the API: on the embedded default (one process owns the data dir) or on the distributed stores."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import uvicorn
from rich.console import Console

from kgrag_query_api.api import create_app
from kgrag_query_api.auth import AuthSettings, TokenVerifier
from kgrag_query_api.mcp_server import mount_mcp
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded


def verifier_for(console: Console) -> TokenVerifier:
    verifier, dev = TokenVerifier.from_settings(AuthSettings())
    if dev:
        token = verifier.issue("dev-admin", groups=[], scopes=["admin"], ttl_s=12 * 3600)
        console.print("[yellow]No KGRAG_AUTH_SECRET set: using a development key for this run only.[/]")
        # Plain print: rich would wrap the token across lines and break copy-paste.
        print(f"Admin token (12 h): {token}", file=sys.stderr, flush=True)
    return verifier


@contextmanager
def stop_cleanly_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP end the process through the normal exit path, so the stores it opened (the embedded
    PostgreSQL above all) are closed. Python's default for them is to die on the spot; and uvicorn, after
    its graceful shutdown, re-raises the signal it caught with the previous handler restored, which
    without this is that default. Here the handler raises SystemExit instead."""

    def leave(signum: int, _: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, leave) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def serve_embedded(settings: KgragSettings, *, host: str, port: int) -> None:
    console = Console(stderr=True)
    verifier = verifier_for(console)
    with stop_cleanly_on_signals(), open_embedded(settings) as kg:
        console.print(f"OpenAPI docs: http://{host}:{port}/docs; MCP (streamable HTTP): http://{host}:{port}/mcp")
        console.print(f"Web app: http://{host}:{port}/ui")
        api = create_app(kg, verifier, threads=settings.http_threads)
        mount_mcp(api, kg, verifier)
        uvicorn.run(api, host=host, port=port, log_level="info")


def serve_distributed(settings: KgragSettings, *, host: str, port: int) -> None:
    from kgrag_runtime.distributed import open_query_app

    console = Console(stderr=True)
    verifier = verifier_for(console)
    with stop_cleanly_on_signals(), open_query_app(settings) as kg:
        console.print(f"Web app: http://{host}:{port}/ui")
        api = create_app(kg, verifier, threads=settings.http_threads)
        mount_mcp(api, kg, verifier)
        uvicorn.run(api, host=host, port=port, log_level="info")
