"""`kgrag trace`, `kgrag feedback` and `kgrag curation` as a user runs them (subprocesses, embedded runtime).

Every command starts the embedded stores, so the index is built in-process first and each test keeps to one
call per behaviour (tests/pipeline/test_traces_http.py covers the rest).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from tests.pipeline.cli_runner import cli_env, json_cli
from tests.pipeline.corpus import corpus


@pytest.fixture
def cli(settings: KgragSettings, embedder: OnnxMiniLmEmbedder) -> Callable[..., Any]:
    with open_embedded(settings, embedder=embedder) as kg:
        kg.ingest(corpus())
    assert settings.pg_dsn is not None
    return json_cli(cli_env(KGRAG_DATA_DIR=str(settings.data_dir), KGRAG_PG_DSN=settings.pg_dsn.get_secret_value()))


def test_a_search_trace_is_read_back_by_its_principal_only(cli: Callable[..., Any]) -> None:
    found = cli("search", "Atlas on-call owner", "--principal", "sam")
    assert found["hits"]
    # The search's process has exited: its trace was written before it did.
    trace = cli("trace", found["trace_id"], "--principal", "sam")
    assert (trace["kind"], trace["owner"]) == ("search", "user:sam")
    assert [r["chunk_id"] for r in trace["results"]] == [h["chunk_id"] for h in found["hits"]]
    refused = cli("trace", found["trace_id"], "--principal", "eve", expect=2)
    assert refused["error"]["code"] == "TRACE_NOT_FOUND"


def test_feedback_joins_the_curation_queue_and_is_resolved_there(cli: Callable[..., Any]) -> None:
    asked = cli("ask", "Who is the on-call owner of Atlas?")  # anonymous: its trace is anonymous's
    bad = cli("feedback", asked["trace_id"], "--rating", "9", expect=2)
    assert bad["error"]["code"] == "INVALID_FEEDBACK"
    item = cli("feedback", asked["trace_id"], "--rating", "2", "--issue", "missing_source", "-m", "no runbook")
    assert (item["issue"], item["author"], item["status"]) == ("MISSING_SOURCE", "anonymous", "open")
    queue = cli("curation")
    assert [f["feedback_id"] for f in queue["feedback"]] == [item["feedback_id"]]
    done = cli("curation", "resolve", item["feedback_id"], "--resolution", "added the runbook")
    assert (done["status"], done["resolution"]) == ("resolved", "added the runbook")
