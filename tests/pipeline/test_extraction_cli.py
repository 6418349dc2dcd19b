"""`kgrag extract`, `kgrag ontology`, `kgrag claims` and `kgrag eval --extraction-gold` as a user runs them:
a real process on real stores, JSON output, exit codes and help texts. No model is configured or called."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from kgrag_adapters.llm.replay import RecordingChatModel
from kgrag_core.ports import ChatMessage
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_llm
from kgrag_testing.scripted_llm import ScriptedChatModel
from tests.pipeline.cli_runner import cli_env, json_cli, run_cli

CORPUS = Path("corpora/northwind")
DOCUMENTS = ("incident-inc-2024-002-relay-cert-expiry", "wiki-team-ownership")
RECORDS = ("record-site-lej-2", "record-person-lena.fischer")


def _lines(path: Path, ids: tuple[str, ...]) -> str:
    picked = [line for line in path.read_text(encoding="utf-8").splitlines() if json.loads(line)["id"] in ids]
    assert len(picked) == len(ids)
    return "\n".join(picked) + "\n"


@pytest.fixture
def env(tmp_path: Path, pg_dsn: str) -> dict[str, str]:
    return cli_env(
        KGRAG_DATA_DIR=str(tmp_path / "index"),
        KGRAG_PG_DSN=pg_dsn,
        # Example prices, so the preview's cost is not zero (not any provider's list price).
        KGRAG_LLM_PRICE_INPUT_PER_MTOK="0.15",
        KGRAG_LLM_PRICE_OUTPUT_PER_MTOK="0.60",
    )


@pytest.fixture
def kgrag(env: dict[str, str]):  # type: ignore[no-untyped-def]
    return json_cli(env)


@pytest.fixture
def ingested(kgrag, tmp_path: Path):  # type: ignore[no-untyped-def]
    docs = tmp_path / "docs.jsonl"
    docs.write_text(_lines(CORPUS / "documents.jsonl", DOCUMENTS), encoding="utf-8")
    records = tmp_path / "records.jsonl"
    records.write_text(_lines(CORPUS / "records.jsonl", RECORDS), encoding="utf-8")
    assert kgrag("ingest", str(docs))["counts"]["INDEXED"] == len(DOCUMENTS)
    assert kgrag("ingest", str(records))["counts"]["INDEXED"] == len(RECORDS)
    return kgrag


def test_status_preview_and_claims_after_ingesting_documents_and_records(ingested) -> None:  # type: ignore[no-untyped-def]
    kgrag = ingested
    status = kgrag("extract", "status")
    assert status["ontology_version"] == "1" and status["extractor_version"] == "1"
    assert status["llm"] is False  # no model configured
    assert isinstance(status["facts"], dict) and status["quarantined"] == 0

    run = kgrag("extract", "rerun", "-v", "2", "--dry-run")
    assert run["dry_run"] is True and run["status"] == "planned" and run["extractor_version"] == "2"
    preview = run["preview"]
    assert preview["chunks_in_scope"] == kgrag("status")["chunks"]
    assert preview["cache_hits"] == 0  # nothing was extracted under version 2
    # The incident is a priority source: its chunks are planned for tier 3, and priced.
    assert 0 < preview["calls"] <= preview["llm_chunks"] < preview["chunks_in_scope"]
    expected = preview["input_tokens"] / 1e6 * 0.15 + preview["output_tokens"] / 1e6 * 0.60
    assert preview["estimated_cost"] == pytest.approx(expected, abs=1e-6) and preview["estimated_cost"] > 0
    assert preview["currency"] == "USD" and preview["estimated_seconds"] > 0
    assert preview["tokens_counted"] is False and "estimated" in run["note"]
    # Narrowed to the records: mapped deterministically, so no calls and no cost.
    records = kgrag("extract", "rerun", "-v", "2", "--dry-run", "--source", "records")["preview"]
    assert records["chunks_in_scope"] == len(RECORDS) and records["calls"] == 0 and records["estimated_cost"] == 0

    claims = kgrag("claims", "LEJ-2")["claims"]
    capacity = [c for c in claims if c["attribute"] == "capacity_pallets"]
    assert [c["value"] for c in capacity] == ["24500"]
    assert capacity[0]["quote"] == "capacity_pallets: 24500" and capacity[0]["doc_id"] == "record-site-lej-2"
    assert capacity[0]["status"] == "current" and capacity[0]["tier"] == 1
    assert capacity[0]["written_at"] == "2025-06-03"
    # Before the record was written, the documents said nothing about it.
    assert kgrag("claims", "LEJ-2", "--as-of", "2024-01-01")["claims"] == []
    bad_day = kgrag("claims", "LEJ-2", "--as-of", "last week", expect=2)
    assert bad_day["error"]["code"] == "INVALID_QUERY"


def test_ontology_put_validates_the_file_and_creates_a_version(kgrag, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump(
            {
                "version": "2",
                "entity_types": {"Person": {}},
                "relation_types": {"MENTORS": {"subject": ["Person"], "object": ["Robot"]}},
            }
        ),
        encoding="utf-8",
    )
    (tmp_path / "empty").mkdir()  # read commands refuse a folder with no index: make an empty one
    assert kgrag("ingest", str(tmp_path / "empty"))["counts"]["INDEXED"] == 0
    refused = kgrag("ontology", "put", str(bad), expect=2)
    assert refused["error"]["code"] == "ONTOLOGY_INVALID"
    assert refused["error"]["message"] and "hint" in refused["error"]
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: '2'\nentity_types: [Person\n", encoding="utf-8")
    assert kgrag("ontology", "put", str(broken), expect=2)["error"]["code"] == "ONTOLOGY_INVALID"

    shown = kgrag("ontology", "show")
    assert shown["version"] == "1" and shown["versions"] == ["1"]  # nothing refused was stored
    good = {k: v for k, v in shown.items() if k != "versions"}
    good["version"] = "2"
    good["relation_types"]["MENTORS"] = {"subject": ["Person"], "object": ["Person"]}
    path = tmp_path / "ontology-2.yaml"
    path.write_text(yaml.safe_dump(good), encoding="utf-8")
    created = kgrag("ontology", "put", str(path))
    assert created["version"] == "2" and created["created"] is True
    after = kgrag("ontology", "show")
    assert after["version"] == "2" and set(after["versions"]) == {"1", "2"}
    assert kgrag("extract", "status")["ontology_version"] == "2"


def test_unknown_runs_and_missing_eval_corpus_exit_2_with_a_code(kgrag, env: dict[str, str], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "empty").mkdir()
    assert kgrag("ingest", str(tmp_path / "empty"))["counts"]["INDEXED"] == 0  # an index, with nothing in it
    unknown = [kgrag("extract", "run", "run-nope", expect=2), kgrag("extract", "resume", "run-nope", expect=2)]
    assert [e["error"]["code"] for e in unknown] == ["RUN_NOT_FOUND", "RUN_NOT_FOUND"]
    # A hint that names a command names one that exists.
    suggested = {cmd for e in unknown for cmd in re.findall(r"`kgrag ([a-z][a-z ]*?)`", e["error"]["hint"])}
    assert suggested
    for command in sorted(suggested):
        assert run_cli(env, *command.split(), "--help").returncode == 0, f"the hint names `kgrag {command}`"
    missing = kgrag("eval", "--extraction-gold", str(CORPUS / "extraction"), expect=2)
    assert missing["error"]["code"] == "MISSING_FIELD"
    assert "--corpus" in missing["error"]["hint"]


@pytest.mark.parametrize(
    ("command", "phrases"),
    [
        (("extract",), ("status", "rerun", "resume", "run", "re-extraction")),
        (("extract", "rerun"), ("--extractor-version", "--dry-run", "--doc", "--source", "--contains", "preview")),
        (("extract", "resume"), ("run_id", "interrupted")),
        (("ontology",), ("show", "put", "versioned")),
        (("ontology", "put"), ("{file}", "Ontology YAML", "version in force")),
        (("claims",), ("{entity}", "--attribute", "--as-of", "YYYY-MM-DD", "superseded")),
        (("eval",), ("--extraction-gold", "--corpus", "precision/recall per tier")),
    ],
)
def test_help_texts_of_the_extraction_commands(
    env: dict[str, str], command: tuple[str, ...], phrases: tuple[str, ...]
) -> None:
    proc = run_cli(env, *command, "--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    for phrase in phrases:
        assert phrase in text, (phrase, text[:1500])
    assert "Traceback" not in proc.stdout + proc.stderr


def test_replies_recorded_with_the_record_dir_are_served_from_the_replay_dir(tmp_path: Path) -> None:
    # The documented round trip: run once with KGRAG_LLM_RECORD_DIR against the model, then again with
    # KGRAG_LLM_REPLAY_DIR (same model settings) and call nothing. The request key includes the model ID,
    # so the replayer must ask under the recorded model's ID, not a fixed one.
    recordings = tmp_path / "recordings"
    model = ScriptedChatModel(['{"entities": [], "relations": [], "claims": []}'], model_id="my-model")
    messages = [ChatMessage("user", "Extract entities, relations and claims from these chunks.")]
    recorded = RecordingChatModel(model, recordings).complete(messages, json_schema={"type": "object"})
    assert len(list(recordings.glob("*.json"))) == 1
    settings = KgragSettings(
        data_dir=tmp_path / "index",
        llm_base_url="http://llm.invalid/v1",
        llm_model="my-model",
        llm_replay_dir=recordings,
    )
    replayer = build_llm(settings)
    assert replayer is not None
    assert replayer.complete(messages, json_schema={"type": "object"}) == recorded
