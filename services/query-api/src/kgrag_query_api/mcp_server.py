"""The MCP server for agents: kgrag's reads as Model Context Protocol tools (official `mcp` SDK).

Every tool answers as the principal of the bearer token the connection carries, verified on every call by
the same `TokenVerifier` (and scopes) as the HTTP API: over stdio the token given at start (`kgrag mcp`),
over streamable HTTP the `Authorization` header of each request (`/mcp` next to the query API). No tool
takes a user, a group or an admin switch as an argument, so none can widen what the token sees. Tools call
the app's public reads (`KgragApp.search/ask`, the entity and claims reads), so the answer contract is the
HTTP API's, field for field.

Errors are tool errors whose text is kgrag's JSON error body (`{"error": {"code": ..., "message": ...}}`),
the stable codes of `kgrag_core.errors`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

from fastapi import FastAPI
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import Field
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.limits import EVIDENCE_CHUNKS, QUERY_CHARS, TOP_K
from kgrag_core.retrieval.hybrid import SearchMode
from kgrag_query_api.admin_routes import _full_date
from kgrag_query_api.auth import Principal, TokenVerifier
from kgrag_query_api.patterns import KEY, MAX_KEY_CHARS, TEXT, check
from kgrag_runtime.app import KgragApp
from kgrag_runtime.graph_admin import MAX_DEPTH, MAX_LIMIT

T = TypeVar("T")
PrincipalOf = Callable[[Context], Principal]  # who the current tool call acts for
MCP_PATH = "/mcp"

Query = Annotated[str, Field(min_length=1, max_length=QUERY_CHARS.maximum, description="Plain words.")]
EntityId = Annotated[str, Field(min_length=1, max_length=MAX_KEY_CHARS, description="An entity id (ent_…).")]

_INSTRUCTIONS = (
    "kgrag answers from an organisation's documents and its knowledge graph. Everything you see is limited "
    "to what this connection's token may read. Prefer `ask` for a cited answer, `search` for ranked "
    "evidence, `resolve_entity` then `get_entity`/`neighbors`/`claims` to explore one thing."
)


def build_mcp_server(kg: KgragApp, principal_of: PrincipalOf) -> MCPServer:
    """The tools over `kg`, each acting for `principal_of(ctx)` of its own call."""
    server = MCPServer("kgrag", instructions=_INSTRUCTIONS, version="0.1.0")

    def acting(ctx: Context, scope: str, fn: Callable[[Principal], T]) -> T:
        try:
            who = principal_of(ctx)
            if not (scope == "ask" and "ask" in who.scopes):  # `ask` or `search` may ask, as on POST /v1/ask
                who.require("search")
            return fn(who)
        except KgragError as err:
            raise ToolError(json.dumps({"error": err.as_dict()})) from err

    @server.tool()
    def search(
        query: Query,
        ctx: Context,
        top_k: Annotated[int, Field(ge=1, le=TOP_K.maximum, description="Results to return.")] = TOP_K.default,
        mode: Annotated[SearchMode, Field(description="hybrid (default), dense or bm25.")] = SearchMode.HYBRID,
        graph: Annotated[bool | None, Field(description="Add routed graph evidence (default: server's).")] = None,
    ) -> dict[str, Any]:
        """Hybrid search (dense + BM25, and graph evidence when routed) over the chunks this token may read:
        ranked hits with their exact text, byte spans, document and score. Same as POST /v1/search."""
        return acting(
            ctx, "search", lambda who: kg.search(query, who.caller, top_k=top_k, mode=mode, graph=graph).as_dict()
        )

    @server.tool()
    def ask(
        question: Query,
        ctx: Context,
        evidence_chunks: Annotated[
            int | None, Field(ge=1, le=EVIDENCE_CHUNKS.maximum, description="Evidence chunks to read.")
        ] = None,
        graph: Annotated[bool | None, Field(description="Route and add graph facts (default: server's).")] = None,
    ) -> dict[str, Any]:
        """A cited answer (every sentence cites exact source spans) or an honest abstention, with confidence,
        citations, route and trace id: the full answer of POST /v1/ask."""
        return acting(
            ctx, "ask", lambda who: kg.ask(question, who.caller, evidence_chunks=evidence_chunks, graph=graph)
        )

    @server.tool()
    def get_entity(entity_id: EntityId, ctx: Context) -> dict[str, Any]:
        """An entity: aliases, strong identifiers, attributes (claims with validity and evidence), relations
        and conflicts, from evidence this token may read; ENTITY_NOT_FOUND when it may read none."""

        def read(who: Principal) -> dict[str, Any]:
            check(entity_id, KEY, field="entity_id", max_chars=MAX_KEY_CHARS)
            return kg.require_graph().entity(entity_id, who.caller)

        return acting(ctx, "search", read)

    @server.tool()
    def neighbors(
        entity_id: EntityId,
        ctx: Context,
        relation: Annotated[str | None, Field(min_length=1, max_length=64, description="Only this relation.")] = None,
        depth: Annotated[int, Field(ge=1, le=MAX_DEPTH, description="Hops.")] = 1,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="Edges at most.")] = 50,
    ) -> dict[str, Any]:
        """Edges around an entity, breadth first, strongest first, never through a hub; `truncated` says
        what was left out. Only edges with evidence this token may read."""

        def read(who: Principal) -> dict[str, Any]:
            check(entity_id, KEY, field="entity_id", max_chars=MAX_KEY_CHARS)
            if relation is not None:
                check(relation, TEXT, field="relation", max_chars=64)
            return kg.require_graph().neighbours(entity_id, who.caller, relation=relation, depth=depth, limit=limit)

        return acting(ctx, "search", read)

    @server.tool()
    def resolve_entity(
        name: Annotated[str, Field(min_length=1, max_length=256, description="A name as people write it.")],
        ctx: Context,
        type: Annotated[str | None, Field(max_length=64, description="Only this entity type.")] = None,
    ) -> dict[str, Any]:
        """Which entities a name may mean, best connected first; `ambiguous` when more than one."""

        def read(who: Principal) -> dict[str, Any]:
            check(name, TEXT, field="name", max_chars=256)
            return kg.require_graph().resolve(name, who.caller, entity_type=type or None)

        return acting(ctx, "search", read)

    @server.tool()
    def claims(
        entity: Annotated[str, Field(min_length=1, max_length=256, description="The entity's name.")],
        ctx: Context,
        attribute: Annotated[str | None, Field(min_length=1, max_length=128, description="Only this one.")] = None,
        as_of: Annotated[str | None, Field(description="YYYY-MM-DD: what the documents said that day.")] = None,
    ) -> dict[str, Any]:
        """An entity's claims over time, oldest written first, superseded and conflicting values marked, each
        with its modality, validity and quote. Only claims with evidence this token may read."""

        def read(who: Principal) -> dict[str, Any]:
            check(entity, TEXT, field="entity", max_chars=256)
            if attribute is not None:
                check(attribute, TEXT, field="attribute", max_chars=128)
            day = _full_date(as_of) if as_of is not None else None
            rows = kg.require_extraction().claims(who.caller, entity=entity, attribute=attribute, as_of=day)
            return {"entity": entity, "claims": rows}

        return acting(ctx, "search", read)

    @server.tool()
    def global_themes(question: Query, ctx: Context) -> dict[str, Any]:
        """Corpus-wide themes ("what are the recurring causes of ...?"): the graph-routed cited answer of
        `ask` (graph on); a question the router calls global takes the GLOBAL route, whose `themes` come
        from the caller's views of the communities (docs/communities.md)."""
        return acting(ctx, "ask", lambda who: kg.ask(question, who.caller, graph=True))

    return server


def stdio_principal(verifier: TokenVerifier, token: str) -> PrincipalOf:
    """The principal of the token `kgrag mcp` was started with, re-verified per call (so it expires)."""
    authorization = f"Bearer {token}"
    verifier.verify(authorization)  # a bad token is refused at start, before any client connects
    return lambda _ctx: verifier.verify(authorization)


def http_principal(verifier: TokenVerifier) -> PrincipalOf:
    """The principal of the `Authorization` header of the HTTP request carrying the tool call."""

    def principal(ctx: Context) -> Principal:
        return verifier.verify(_authorization(ctx.headers))

    return principal


def mount_mcp(api: FastAPI, kg: KgragApp, verifier: TokenVerifier) -> MCPServer:
    """Serve the tools over streamable HTTP at `/mcp` on `api` (stateless JSON responses, so any replica
    answers any request). Requests without a valid bearer token are refused with 401 and kgrag's error body
    before they reach the MCP session; the tools verify it again for their principal."""
    server = build_mcp_server(kg, http_principal(verifier))
    # DNS-rebinding protection guards servers that trust ambient credentials; every request here carries
    # its own bearer token, and the API's host names are the deployment's, not the SDK's localhost list.
    server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager
    endpoint = _RequireBearer(StreamableHTTPASGIApp(manager), verifier)
    api.router.routes.append(Route(MCP_PATH, endpoint=endpoint, methods=["GET", "POST", "DELETE"]))
    inner = api.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
        async with inner(app) as state, manager.run():
            yield state

    api.router.lifespan_context = lifespan
    return server


class _RequireBearer:
    """ASGI guard: a request whose bearer token does not verify never reaches the MCP transport."""

    def __init__(self, app: ASGIApp, verifier: TokenVerifier) -> None:
        self.app = app
        self.verifier = verifier

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            self.verifier.verify(headers.get("authorization"))
        except KgragError as err:
            status = 401 if err.code is ErrorCode.UNAUTHENTICATED else 403
            response = JSONResponse(
                {"error": err.as_dict()}, status_code=status, headers={"WWW-Authenticate": "Bearer"}
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _authorization(headers: Mapping[str, str] | None) -> str | None:
    if headers is None:  # not an HTTP transport: no token, no identity
        return None
    return next((v for k, v in headers.items() if k.lower() == "authorization"), None)
