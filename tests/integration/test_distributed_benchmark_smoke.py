"""Smoke test of the distributed benchmark: its freshness part, with a handful of documents, on the real
servers. It checks that the report is whole and sane, not how fast this machine is."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from kgrag_runtime.benchmarks.distributed import Endpoints, run_distributed_benchmarks
from tests.integration.conftest import endpoint

pytestmark = pytest.mark.integration
DOCS = 5


@pytest.mark.timeout(150)
def test_freshness_report_has_sane_fields(tmp_path: Path, pg_server_dsn: str) -> None:
    endpoints = Endpoints.from_env(
        kafka=endpoint("kafka"),
        pg=pg_server_dsn,
        opensearch=endpoint("opensearch"),
        redis=endpoint("redis"),
        s3=endpoint("s3"),
    )
    console = Console(file=io.StringIO())

    report = run_distributed_benchmarks(
        tmp_path,
        console,
        docs=DOCS,
        rate_per_s=5.0,
        replicas=(),
        settle_s=60.0,
        lag_diagnostic=False,
        endpoints=endpoints,
    )

    fresh = report["freshness"]
    assert fresh["documents"] == DOCS
    assert fresh["searchable"] == DOCS and fresh["not_searchable"] == 0
    assert fresh["hybrid_search_found"] == DOCS  # the full search path finds each by its token
    assert 0 < fresh["freshness_min_s"] <= fresh["freshness_p50_s"] <= fresh["freshness_p95_s"]
    assert fresh["freshness_p95_s"] <= fresh["freshness_max_s"]
    assert fresh["achieved_docs_per_s"] > 0 and fresh["achieved_chunks_per_s"] > 0
    assert 2 * DOCS <= fresh["chunks"] <= 4 * DOCS  # small documents: 2-4 chunks each
    assert fresh["model_alone_chunks_per_s"] > 0
    assert fresh["batches"] >= 1
    assert report["scale_out"] == [] and report["freshness_diagnostic"] is None
    assert "Qdrant Edge shard per worker process" in report["vector_projection"]

    written = json.loads((tmp_path / "results.json").read_text())
    assert written["freshness"]["searchable"] == DOCS
    markdown = (tmp_path / "results.md").read_text()
    assert "Table 1 — freshness" in markdown and f"| {DOCS} |" in markdown
