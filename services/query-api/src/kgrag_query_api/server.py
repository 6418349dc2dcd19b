"""Run the API on the embedded default."""

from __future__ import annotations

import uvicorn
from rich.console import Console

from kgrag_query_api.api import create_app
from kgrag_query_api.auth import AuthSettings, TokenVerifier
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded


def serve_embedded(settings: KgragSettings, *, host: str, port: int) -> None:
    verifier, dev = TokenVerifier.from_settings(AuthSettings())
    console = Console(stderr=True)
    if dev:
        token = verifier.issue("dev-admin", groups=[], scopes=["admin"], ttl_s=12 * 3600)
        console.print("[yellow]No KGRAG_AUTH_SECRET set: using a development key for this run only.[/]")
        console.print(f"Admin token (12 h): [bold]{token}[/]")
    with open_embedded(settings) as kg:
        console.print(f"OpenAPI docs: http://{host}:{port}/docs")
        uvicorn.run(create_app(kg, verifier), host=host, port=port, log_level="info")
