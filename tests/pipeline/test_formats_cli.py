"""`kgrag ingest corpora/formats/samples` as a user runs it: every format indexed, and answers cite the PDF
page and the transcript's speaker and time; Slack channel members only read their channel."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.cli_runner import cli_env, json_cli

SAMPLES = Path(__file__).resolve().parents[2] / "corpora" / "formats" / "samples"

pytestmark = pytest.mark.pipeline


@pytest.fixture
def kgrag(tmp_path: Path, pg_dsn: str) -> Callable[..., Any]:
    return json_cli(cli_env(KGRAG_DATA_DIR=str(tmp_path / "index"), KGRAG_PG_DSN=pg_dsn))


def test_formats_ingest_with_page_and_speaker_citations(kgrag: Callable[..., Any]) -> None:
    ingested = kgrag("ingest", str(SAMPLES))
    rejected = [o for o in ingested["outcomes"] if o["status"] == "REJECTED"]
    assert rejected == [] and ingested["counts"]["INDEXED"] == 13, ingested["counts"]

    answer = kgrag("ask", "Within how many hours must damaged goods be reported?", "--admin")
    pdf = [c for c in answer["citations"] if c["doc_id"] == "handbook/returns-policy.pdf"]
    assert pdf and "48 hours" in pdf[0]["quote"] and pdf[0]["page"] == 2, answer["citations"]

    answer = kgrag("ask", "How many near misses were there in aisle 7?", "--admin")
    said = [c for c in answer["citations"] if c["doc_id"] == "meetings/2026-03-02-ops-sync.vtt"]
    assert said and (said[0]["speaker"], said[0]["time"]) == ("Tomasz Kowal", "00:01:02"), answer["citations"]
    assert "page" not in said[0]

    member = kgrag("search", "Gdansk site lease renewal", "--principal", "priya.raman")["hits"]
    lease = [h for h in member if h["doc_id"] == "slack/leadership/2026-03-04"]
    assert lease and (lease[0]["speaker"], lease[0]["time"]) == ("Priya Raman", "16:20")  # positive control
    outsider = kgrag("search", "Gdansk site lease renewal", "--principal", "bob.okafor")["hits"]
    assert all(not h["doc_id"].startswith("slack/leadership/") for h in outsider)
