"""`kgrag entities …` as a user runs it: a real process on real stores, JSON output, exit codes and help texts.

No model is configured or called; the records and documents are resolved by the pass that follows extraction.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.cli_runner import cli_env, json_cli, run_cli
from tests.pipeline.test_entity_resolution_pipeline import HUB_MIN_DEGREE, northwind_files

Kgrag = Callable[..., Any]


@pytest.fixture
def env(tmp_path: Path, pg_dsn: str) -> dict[str, str]:
    return cli_env(
        KGRAG_DATA_DIR=str(tmp_path / "index"), KGRAG_PG_DSN=pg_dsn, KGRAG_RESOLUTION_HUB_MIN_DEGREE=str(HUB_MIN_DEGREE)
    )


@pytest.fixture
def kgrag(env: dict[str, str]) -> Kgrag:
    return json_cli(env)


@pytest.fixture
def ingested(kgrag: Kgrag, tmp_path: Path) -> Kgrag:
    # One file, one process: every CLI call pays for starting the stores and loading the model.
    combined = tmp_path / "northwind.jsonl"
    combined.write_text("".join(p.read_text(encoding="utf-8") for p in northwind_files(tmp_path)), encoding="utf-8")
    counts = kgrag("ingest", str(combined))["counts"]
    assert counts["INDEXED"] > 0 and counts["REJECTED"] == 0, counts
    return kgrag


def test_entity_commands_read_and_administer_with_json(ingested: Kgrag) -> None:
    kgrag = ingested
    found = kgrag("entities", "resolve", "Atlas", "--type", "System")
    assert found["name"] == "Atlas" and [c["type"] for c in found["candidates"]] == ["System"]
    atlas_id = found["candidates"][0]["entity_id"]

    shown = kgrag("entities", "show", atlas_id, "--group", "engineering")
    assert shown["entity_id"] == atlas_id and shown["name"] == "Atlas"
    owns = [r for r in shown["relations"] if (r["subject"]["name"], r["relation"]) == ("Routing", "OWNS")]
    assert len(owns) == 1 and owns[0]["evidence_count"] == 2
    assert ("status", "production") in {(a["attribute"], a["value"]) for a in shown["attributes"]}
    # The leadership-only record adds an edge only leadership sees.
    as_leader = kgrag("entities", "show", atlas_id, "--principal", "grace.oneill", "--group", "leadership")
    assert as_leader["degree"] == shown["degree"] + 1
    assert kgrag("entities", "resolve", "Osprey Integration", "--group", "engineering")["candidates"] == []

    around = kgrag("entities", "neighbors", atlas_id, "--depth", "2", "--relation", "OWNS", "--admin")
    assert around["entity"]["entity_id"] == atlas_id
    assert {e["subject"]["name"] for e in around["edges"]} >= {"Routing", "Osprey Integration"}
    assert all(e["relation"] == "OWNS" for e in around["edges"])

    merges = kgrag("entities", "merges")["merges"]
    assert merges and all(m["decided_by"] in {"auto", "review", "override"} for m in merges)
    assert all(m["basis"] and m["basis"][0]["rule"] and 0 < m["basis"][0]["score"] <= 1 for m in merges)

    # A hand merge, then its split: the entity reads exactly as before.
    harbor_id = kgrag("entities", "resolve", "Harbor", "--type", "System")["candidates"][0]["entity_id"]
    merged = kgrag("entities", "merge", atlas_id, harbor_id, "--canonical", atlas_id, "--reason", "cli test")
    assert merged["canonical_id"] == atlas_id and merged["members"] == [harbor_id]
    assert kgrag("entities", "show", harbor_id, "--admin")["entity_id"] == atlas_id
    assert kgrag("entities", "split", merged["merge_id"])["reverted"] is True
    assert kgrag("entities", "show", atlas_id, "--group", "engineering") == shown

    pairs = kgrag("entities", "review", "--limit", "3")["pairs"]
    assert 0 < len(pairs) <= 3
    decided = kgrag("entities", "decide", pairs[0]["a"], pairs[0]["b"], "--different")
    assert decided["same"] is False and decided["merge"] is None
    report = kgrag("entities", "resolve-pass")
    assert report["profiles"] > 0 and report["hubs"] >= 1
    assert (pairs[0]["a"], pairs[0]["b"]) not in {(p["a"], p["b"]) for p in kgrag("entities", "review")["pairs"]}


def test_unknown_entities_and_merges_exit_2_with_a_code(kgrag: Kgrag, env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert kgrag("ingest", str(tmp_path / "empty"))["counts"]["INDEXED"] == 0  # an index, with nothing in it
    errors = [
        kgrag("entities", "show", "ent_nope", expect=2),
        kgrag("entities", "neighbors", "ent_nope", expect=2),
        kgrag("entities", "split", "mrg_nope", expect=2),
        kgrag("entities", "merge", "ent_a", "ent_b", expect=2),
        kgrag("entities", "split-mentions", "ent_nope", "--doc", "d", expect=2),
    ]
    assert [e["error"]["code"] for e in errors] == ["ENTITY_NOT_FOUND"] * len(errors)
    assert kgrag("entities", "merges") == {"merges": []}  # the refused merge logged nothing
    assert kgrag("entities", "neighbors", "ent_nope", "--depth", "9", expect=2)["error"]["code"] == "LIMIT_EXCEEDED"
    # The hint names a command that exists.
    assert "kgrag entities resolve" in errors[0]["error"]["hint"]
    assert run_cli(env, "entities", "resolve", "--help").returncode == 0


@pytest.mark.parametrize(
    ("command", "phrases"),
    [
        (
            ("entities",),
            (
                *("show", "neighbors", "resolve", "merge", "split", "split-mentions"),
                *("merges", "review", "decide", "resolve-pass"),
            ),
        ),
        (("entities", "show"), ("{entity_id}", "--principal", "--group", "--admin", "--json", "evidence")),
        (("entities", "neighbors"), ("--relation", "--depth", "--limit", "hub")),
        (("entities", "merge"), ("--canonical", "--reason", "split")),
    ],
)
def test_help_texts_of_the_entity_commands(
    env: dict[str, str], command: tuple[str, ...], phrases: tuple[str, ...]
) -> None:
    proc = run_cli(env, *command, "--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    for phrase in phrases:
        assert phrase in text, (phrase, text[:1500])
    assert "Traceback" not in proc.stdout + proc.stderr
