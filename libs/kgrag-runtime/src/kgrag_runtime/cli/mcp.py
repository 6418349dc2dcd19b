"""`kgrag mcp`: the MCP tools over stdio for a local agent, as the principal of one bearer token."""

from __future__ import annotations

from typing import Annotated

import typer

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_runtime.cli.context import CliState, open_app
from kgrag_runtime.cli.options import DataDir

TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="KGRAG_MCP_TOKEN",
        help="The bearer token (JWT) the tools act for; prefer $KGRAG_MCP_TOKEN (a flag shows in `ps`).",
        show_default=False,
    ),
]


def mcp(token: TokenOption = None, data_dir: DataDir = None) -> None:
    """Serve search, ask, entities and claims to an MCP client over stdio (docs/mcp.md). Every tool answers as
    the token's user and groups, verified with KGRAG_AUTH_SECRET like the HTTP API; a bad token exits with 2."""
    try:
        from kgrag_query_api.auth import AuthSettings, TokenVerifier
    except ImportError as err:
        raise KgragError(
            ErrorCode.CONFIGURATION_INVALID,
            "The HTTP API package (which holds the MCP server) is not installed.",
            hint="Install kgrag-query-api (it comes with `make install`).",
        ) from err
    auth = AuthSettings()
    if auth.secret is None:
        # Without a configured key no token could verify: say why, rather than refuse every token.
        raise KgragError(
            ErrorCode.CONFIGURATION_INVALID,
            "kgrag mcp verifies its token with KGRAG_AUTH_SECRET, which is not set.",
            hint="Set KGRAG_AUTH_SECRET (and KGRAG_AUTH_ISSUER/AUDIENCE) as for the HTTP API (docs/http-api.md).",
        )
    if not token:
        raise KgragError(ErrorCode.UNAUTHENTICATED, "A bearer token is required.", hint="Set $KGRAG_MCP_TOKEN.")
    verifier, _ = TokenVerifier.from_settings(auth)
    verifier.verify(f"Bearer {token}")  # UNAUTHENTICATED at once, before the server is even imported
    from kgrag_query_api.mcp_server import build_mcp_server, stdio_principal

    principal_of = stdio_principal(verifier, token)
    # Quiet mode: stdout carries the protocol, so nothing but the server may write there.
    state = CliState.from_options(data_dir, True)
    with open_app(state) as kg:
        build_mcp_server(kg, principal_of).run("stdio")
