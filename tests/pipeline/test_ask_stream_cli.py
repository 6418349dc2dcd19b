"""`kgrag ask --stream` and the LLM fallback as a user runs them: a real process and real stores.

With a model that cannot answer (a replay folder with no recording: LLM_UNAVAILABLE) the answer is the
extractive one, flagged with the reason, and the command still succeeds; streamed, it comes sentence by
sentence, one JSON event a line with --json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.pipeline.cli_runner import cli_env, json_cli, run_cli

pytestmark = pytest.mark.pipeline

NOTE = """# Dock 4

The hydraulic ramp at dock 4 in Leipzig was repaired on 3 June 2024.

The next inspection of the ramp is due in December 2024.
"""
QUESTION = "When was the hydraulic ramp at dock 4 repaired?"


def test_ask_streams_and_falls_back_from_a_model_that_cannot_answer(tmp_path: Path, pg_dsn: str) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "dock.md").write_text(NOTE, encoding="utf-8")
    env = cli_env(KGRAG_DATA_DIR=str(tmp_path / "index"), KGRAG_PG_DSN=pg_dsn)
    assert json_cli(env)("ingest", str(notes))["counts"]["INDEXED"] == 1

    # A model that cannot answer: a replay folder without the recording (every call is LLM_UNAVAILABLE).
    (tmp_path / "replies").mkdir()
    no_model = env | {"KGRAG_LLM_REPLAY_DIR": str(tmp_path / "replies")}
    streamed = run_cli(no_model, "ask", QUESTION, "--stream", "--json")
    assert streamed.returncode == 0, streamed.stderr[-2000:]
    events = [json.loads(line) for line in streamed.stdout.splitlines()]
    names = [e["event"] for e in events]
    assert names[:2] == ["route", "citations"] and names[-4:] == ["conflicts", "graph_evidence", "confidence", "done"]
    done = events[-1]["data"]
    said = [e["data"]["text"] for e in events if e["event"] == "sentence"]
    assert said and said == [s["text"] for s in done["sentences"]]
    assert done["mode"] == "extractive" and done["fallback"] == {"reason": "llm_unavailable"}
    assert "repaired on 3 June 2024" in done["answer"]

    shown = run_cli(no_model, "ask", QUESTION)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "repaired on 3 June 2024" in shown.stdout
    assert "could not be used (llm_unavailable)" in shown.stdout
