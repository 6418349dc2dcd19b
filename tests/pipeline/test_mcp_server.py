"""The MCP server through the official SDK's own client, over streamable HTTP (`/mcp` next to the query API)
and over stdio (`kgrag mcp` in a subprocess): every tool answers as its token's principal only.

Real embedded stores; records mapped by tier 1 (no model): an HR-only team and person, and a public person.
Each visibility check has its positive control (the HR reader sees what the outsider must not).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from kgrag_adapters.connectors import iter_path
from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_query_api.api import create_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_query_api.mcp_server import mount_mcp
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from tests.pipeline.cli_runner import cli_env, run_cli
from tests.socket_server import serving_api

pytestmark = pytest.mark.pipeline

SECRET = "mcp-test-key-" + "z" * 32
VERIFIER = TokenVerifier(key=SECRET, issuer="kgrag-mcp-test", audience="kgrag", algorithm="HS256")
OUTSIDER = VERIFIER.issue("sam.ortiz", groups=["engineering"], scopes=["search"])
READER = VERIFIER.issue("hana.hr", groups=["hr"], scopes=["search"])
INGEST_ONLY = VERIFIER.issue("hana.hr", groups=["hr"], scopes=["ingest"])
FORGED = TokenVerifier("another-key-" + "q" * 32, "kgrag-mcp-test", "kgrag", "HS256").issue(
    "hana.hr", groups=["hr"], scopes=["admin"]
)

SECRET_TEAM, SECRET_NAME, EMAIL = "Osprey Restructuring", "Jordan Blake", "jb@northwind.example"
RECORDS = [
    {"id": "record-person-secret", "title": "Person (HR)", "source": "records", "acl": {"groups": ["hr"]},
     "record": {"type": "person", "fields": {"name": SECRET_NAME, "email": EMAIL, "user_id": "u-secret-77"}}},
    {"id": "record-person-public", "title": "Person", "source": "records",
     "record": {"type": "person", "fields": {"name": "J. Blake", "email": EMAIL, "role": "Planner"}}},
    {"id": "record-team-secret", "title": "Team (HR)", "source": "records", "acl": {"groups": ["hr"]},
     "record": {"type": "team", "fields": {"name": SECRET_TEAM, "lead": SECRET_NAME, "headcount": "14"}}},
]  # fmt: skip
TOOLS = {"search", "ask", "get_entity", "neighbors", "resolve_entity", "claims", "global_themes"}


def result(reply: Any) -> dict[str, Any]:
    assert not reply.is_error, reply.content
    out: dict[str, Any] = reply.structured_content
    return out


def error_code(reply: Any) -> str:
    assert reply.is_error
    text = reply.content[0].text
    return str(json.loads(text[text.index("{") :])["error"]["code"])


async def check_visibility(client: Client) -> dict[str, Any]:
    """What the outsider sees through every tool; the reader's view (positive control) is checked by the caller."""
    assert {t.name for t in (await client.list_tools()).tools} == TOOLS
    return {
        "search": result(await client.call_tool("search", {"query": SECRET_TEAM, "top_k": 5})),
        "resolve": result(await client.call_tool("resolve_entity", {"name": SECRET_TEAM})),
        "ask": result(await client.call_tool("ask", {"question": f"Who leads {SECRET_TEAM}?"})),
    }


def doc_ids(found: dict[str, Any]) -> set[str]:
    return {h["doc_id"] for h in found["hits"]}


@pytest.fixture
def index(tmp_path: Path, pg_dsn: str, embedder: OnnxMiniLmEmbedder) -> KgragSettings:
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    settings = KgragSettings(data_dir=tmp_path / "index", pg_dsn=pg_dsn, max_document_bytes=20_000)
    with open_embedded(settings, embedder=embedder) as kg:
        outcomes = kg.ingest(list(iter_path(path)))
        assert all(o.error_code is None for o in outcomes), [o.as_dict() for o in outcomes]
    return settings


@contextmanager
def serving(settings: KgragSettings, embedder: OnnxMiniLmEmbedder) -> Iterator[str]:
    """The query API with `/mcp` mounted, on a real port (uvicorn in a thread)."""
    with open_embedded(settings, embedder=embedder) as kg:
        api = create_app(kg, VERIFIER)
        mount_mcp(api, kg, VERIFIER)
        with serving_api(api) as url:
            yield url


@asynccontextmanager
async def http_client(base: str, token: str) -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
            yield client


def test_mcp_over_streamable_http_answers_as_the_tokens_principal(
    index: KgragSettings, embedder: OnnxMiniLmEmbedder
) -> None:
    with serving(index, embedder) as base:

        async def scenario() -> None:
            async with http_client(base, READER) as reader:
                seen = await check_visibility(reader)
                # Positive control: the HR reader finds the restricted team by search, name and entity reads.
                assert "record-team-secret" in doc_ids(seen["search"])
                [team] = [c for c in seen["resolve"]["candidates"] if c["type"] == "Team"]
                entity = result(await reader.call_tool("get_entity", {"entity_id": team["entity_id"]}))
                assert entity["name"] == SECRET_TEAM
                edges = result(await reader.call_tool("neighbors", {"entity_id": team["entity_id"]}))
                assert SECRET_NAME in json.dumps(edges)
                facts = result(await reader.call_tool("claims", {"entity": SECRET_TEAM}))
                assert [(c["attribute"], c["value"]) for c in facts["claims"]] == [("headcount", "14")]
                assert seen["ask"]["citations"], seen["ask"]  # the full answer contract, cited
                assert {"answer", "confidence", "citations", "trace_id"} <= set(seen["ask"])
            async with http_client(base, OUTSIDER) as outsider:
                hidden = await check_visibility(outsider)
                assert "record-team-secret" not in doc_ids(hidden["search"])
                assert "record-person-secret" not in doc_ids(hidden["search"])
                assert hidden["resolve"]["candidates"] == []
                assert SECRET_TEAM not in json.dumps(hidden["ask"]["citations"])
                # The restricted entity reads exactly like an unknown one.
                missing = await outsider.call_tool("get_entity", {"entity_id": team["entity_id"]})
                assert error_code(missing) == "ENTITY_NOT_FOUND"
                themes = result(await outsider.call_tool("global_themes", {"question": "Overall themes of teams?"}))
                assert SECRET_TEAM not in json.dumps(themes) and SECRET_NAME not in json.dumps(themes)
                assert result(await outsider.call_tool("claims", {"entity": SECRET_TEAM}))["claims"] == []
                public = result(await outsider.call_tool("resolve_entity", {"name": "J. Blake"}))
                assert SECRET_NAME not in json.dumps(public) and public["candidates"]
            async with http_client(base, INGEST_ONLY) as ingest:
                assert error_code(await ingest.call_tool("search", {"query": SECRET_TEAM})) == "FORBIDDEN"

        anyio.run(scenario)
        # A forged (wrongly signed) token and no token are refused before the MCP session.
        init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        for headers in ({"Authorization": f"Bearer {FORGED}"}, {}):
            refused = httpx.post(f"{base}/mcp", json=init, headers=headers, timeout=30)
            assert refused.status_code == 401 and refused.json()["error"]["code"] == "UNAUTHENTICATED"


def stdio_env(settings: KgragSettings, token: str) -> dict[str, str]:
    assert settings.pg_dsn is not None
    return cli_env(
        KGRAG_DATA_DIR=str(settings.data_dir),
        KGRAG_PG_DSN=settings.pg_dsn.get_secret_value(),
        KGRAG_AUTH_SECRET=SECRET,
        KGRAG_AUTH_ISSUER="kgrag-mcp-test",
        KGRAG_MCP_TOKEN=token,
    )


def test_kgrag_mcp_over_stdio_answers_as_the_tokens_principal(index: KgragSettings) -> None:
    refused = run_cli(stdio_env(index, FORGED), "mcp")
    assert refused.returncode == 2 and "UNAUTHENTICATED" in refused.stderr, refused.stderr[-2000:]

    async def scenario() -> None:
        for token, sees in ((READER, True), (OUTSIDER, False)):
            params = StdioServerParameters(
                command=sys.executable, args=["-m", "kgrag_runtime.cli", "mcp"], env=stdio_env(index, token)
            )
            async with Client(params, read_timeout_seconds=120) as client:
                found = result(await client.call_tool("search", {"query": SECRET_TEAM, "top_k": 5}))
                names = result(await client.call_tool("resolve_entity", {"name": SECRET_TEAM}))
                assert ("record-team-secret" in doc_ids(found)) is sees
                assert bool(names["candidates"]) is sees

    anyio.run(scenario)
