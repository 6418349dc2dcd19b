"""`kgrag ingest corpora/formats/samples` as a user runs it: every format indexed, and answers cite the PDF
page and the transcript's speaker and time; Slack channel members only read their channel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kgrag_core.acl import Caller
from kgrag_runtime.settings import KgragSettings
from tests.pipeline.cli_runner import cli_env, json_cli

SAMPLES = Path(__file__).resolve().parents[2] / "corpora" / "formats" / "samples"

ADMIN = Caller(admin=True)
ENGINEER = Caller(user="sam.ortiz", groups=("engineering",))

pytestmark = pytest.mark.pipeline


def test_formats_ingest_with_page_and_speaker_citations(settings: KgragSettings, pg_dsn: str, open_kg: Any) -> None:
    # Ingested by the real CLI, as a user does; queried in-process (one model load instead of one per call).
    kgrag = json_cli(cli_env(KGRAG_DATA_DIR=str(settings.data_dir), KGRAG_PG_DSN=pg_dsn))
    ingested = kgrag("ingest", str(SAMPLES))
    rejected = [o for o in ingested["outcomes"] if o["status"] == "REJECTED"]
    assert rejected == [] and ingested["counts"]["INDEXED"] == 14, ingested["counts"]

    with open_kg() as kg:
        answer = kg.ask("Within how many hours must damaged goods be reported?", ADMIN)
        pdf = [c for c in answer["citations"] if c["doc_id"] == "handbook/returns-policy.pdf"]
        assert pdf and "48 hours" in pdf[0]["quote"] and pdf[0]["page"] == 2, answer["citations"]

        answer = kg.ask("How many near misses were there in aisle 7?", ADMIN)
        said = [c for c in answer["citations"] if c["doc_id"] == "meetings/2026-03-02-ops-sync.vtt"]
        assert said and (said[0]["speaker"], said[0]["time"]) == ("Tomasz Kowal", "00:01:02"), answer["citations"]
        assert "page" not in said[0]

        hits = kg.search("Gdansk site lease renewal", Caller(user="priya.raman"), graph=False).hits
        lease = [h.as_dict() for h in hits if h.doc_id == "slack/leadership/2026-03-04"]
        assert lease and (lease[0]["speaker"], lease[0]["time"]) == ("Priya Raman", "16:20")  # positive control
        outsider = kg.search("Gdansk site lease renewal", Caller(user="bob.okafor"), graph=False).hits
        assert all(not h.doc_id.startswith("slack/leadership/") for h in outsider)

        # Tier 1 mapped the Jira ticket: the ticket by its strong id, its status, reporter and system.
        graph = kg.require_graph()
        [ticket] = graph.resolve("OPS-17", ENGINEER, entity_type="Ticket")["candidates"]
        shown = graph.entity(ticket["entity_id"], ENGINEER)
        edges = {(r["subject"]["name"], r["relation"], r["object"]["name"]) for r in shown["relations"]}
        assert {("Maria Santos", "REPORTED", "OPS-17"), ("OPS-17", "ABOUT", "Warehouse Management System")} <= edges
        assert ("status", "in progress") in {(a["attribute"], a["value"]) for a in shown["attributes"]}
        # The tickets folder is readable by engineering and operations only.
        assert graph.resolve("OPS-17", Caller(user="sam.ortiz"), entity_type="Ticket")["candidates"] == []
