"""`make stack` (issue 16, item 7): the whole distributed pipeline on one machine as separate processes,
against the dev servers — start it, post documents through the connector gateway, find them through the
query API (with the ACL applied), read an outcome with `kgrag status --doc`, stop it, and nothing is left
running."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.integration.stack_support import Stack, dev_env, running_stack
from tests.pipeline.cli_runner import cli_env, json_cli

pytestmark = pytest.mark.integration

MODULES = {
    "query-api": "kgrag_query_api",
    "connector-gateway": "kgrag_connector_gateway",
    "chunk-indexer": "kgrag_chunk_indexer",
    "deletion-worker": "kgrag_deletion_worker",
    "acl-propagator": "kgrag_acl_propagator",
    "graph-writer": "kgrag_graph_writer",
    "extractor": "kgrag_extractor",
    "entity-resolver": "kgrag_entity_resolver",
}


def _call(method: str, url: str, token: str, body: object | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _outcomes(stack: Stack, doc_id: str, token: str) -> list[str]:
    code, body = _call("GET", f"{stack.query_url}/v1/ingest/documents/{doc_id}/status", token)
    return [o["status"] for o in body["outcomes"]] if code == 200 else []


@pytest.mark.timeout(900)
def test_make_stack_runs_the_pipeline_as_separate_processes(tmp_path: Path) -> None:
    with running_stack(tmp_path / "stack", dev_env()) as stack:
        pids = stack.pids()
        # Eight services, eight processes of their own, each running its service's module.
        assert sorted(pids) == sorted(MODULES) and len(set(pids.values())) == len(MODULES)
        for service, pid in pids.items():
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            assert MODULES[service].encode() in cmdline, (service, cmdline)

        ingest = stack.token("connector", "ingest")
        memo = "The yard gate code rotates every Monday at six."
        for doc in (
            {"doc_id": "gate-memo", "title": "Gate", "text": memo},
            {"doc_id": "gate-memo-hr", "title": "Gate (HR)", "text": memo, "acl": {"groups": ["hr"]}},
        ):
            code, body = _call("POST", f"{stack.gateway_url}/v1/ingest/documents", ingest, doc)
            assert code == 202 and body["status"] == "QUEUED", body
        deadline = time.monotonic() + 180
        while not all("INDEXED" in _outcomes(stack, d, ingest) for d in ("gate-memo", "gate-memo-hr")):
            assert time.monotonic() < deadline, "the chunk-indexer did not index both documents within 180 s"
            time.sleep(1)

        query = {"query": "yard gate code rotates Monday"}
        code, found = _call("POST", f"{stack.query_url}/v1/search", stack.token("sam", "search", "engineering"), query)
        assert code == 200, found
        assert [h["doc_id"] for h in found["hits"]] == ["gate-memo"]  # the HR copy is not his to see
        code, found = _call("POST", f"{stack.query_url}/v1/search", stack.token("hana", "search", "hr"), query)
        assert code == 200 and {h["doc_id"] for h in found["hits"]} == {"gate-memo", "gate-memo-hr"}  # positive control

        # The operator's view of one document, from the same ingest log (item 3's `kgrag status --doc`).
        settings = {k: v for k, v in stack.env.items() if k.startswith(("KGRAG_", "AWS_"))}
        status = json_cli(cli_env(**settings))("status", "--doc", "gate-memo")
        assert "INDEXED" in [o["status"] for o in status["outcomes"]]
    # running_stack has run `make stack-stop` and checked that no process of any service's group is left.
    assert not any((tmp_path / "stack" / "pids").glob("*.pid"))
