"""What a person reads from the CLI: ids never cut, nested values flattened, no `<bool>` on flags, and a
mistyped --data-dir that fails instead of becoming a new, empty index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_runtime.cli import render
from kgrag_runtime.cli.app import app
from kgrag_runtime.cli.data_dir import check_data_dir
from kgrag_runtime.cli.help_text import hide_flag_types
from tests.pipeline.cli_runner import cli_env, run_cli

LONG_ID = "email-atlas-oncall-handover-announcement"


def _console(width: int) -> Console:
    return Console(width=width, record=True, color_system=None)


def test_ids_are_never_cut_at_80_columns() -> None:
    out = _console(80)
    rows = [(LONG_ID, "Atlas on-call owner changes on 2 September", "email", "1", "ACTIVE", "2024-08-26")]
    render.id_table(out, ("doc_id", "title", "source", "version", "status", "modified"), rows, ids={"doc_id"})
    text = out.export_text()
    assert LONG_ID in text and "…" not in text
    assert "2 September" in text  # the other columns wrap instead


def test_ids_go_on_their_own_line_when_a_table_cannot_fit() -> None:
    out = _console(50)
    merge, canonical, other = "mrg_574c5c9d0e1f2a3b4c5d6e7f", "ent_0123456789abcdef01", "ent_fedcba9876543210fe"
    render.id_table(
        out,
        ("merge", "canonical", "members", "basis"),
        [(merge, canonical, f"{canonical}, {other}", "name 0.97")],
        ids={"merge", "canonical", "members"},
    )
    text = out.export_text()
    words = text.split()
    assert words[:2] == [merge, canonical]  # the ids first, whole, on a line of their own
    assert other in words and "…" not in text
    assert "basis: name 0.97" in text


def test_status_flattens_extraction_and_counts_errors_consistently() -> None:
    out = _console(100)
    errors = [{"doc_id": "bad.md", "error_code": "MALFORMED_EVENT", "message": "not YAML", "at": "2026-12-01T10:00:00"}]
    info = {
        "documents": 3,
        "ingest_errors": 7,
        "extraction": {"ontology_version": "1", "facts": {"entities": 389}},
        "data_dir": ".kgrag-demo",
        "recent_errors": errors,
    }
    render.status(out, info)
    text = out.export_text()
    assert "extraction.facts.entities" in text and "389" in text
    assert "{'" not in text  # no raw Python dict
    assert "The 1 most recent of 7 ingest errors" in text and "bad.md" in text


def test_eval_headers_do_not_wrap_at_80_columns() -> None:
    out = _console(80)
    types = ("lookup", "entity", "multi_hop", "temporal", "modality", "global", "unanswerable", "ALL")
    per_type = {"hybrid": {t: {"n": 9, "recall@10": 0.5, "key_facts@2000": 1.0} for t in types}}
    render.eval_report(out, {"per_type": per_type})
    header = next(line for line in out.export_text().splitlines() if "metric" in line)
    assert header.split() == ["metric", "lookup", "entity", "multi", "temp", "modal", "global", "unans", "ALL"]


def test_flags_show_no_value_type_in_help() -> None:
    hide_flag_types()
    result = CliRunner().invoke(app, ["status", "--help"], env={"COLUMNS": "100", "NO_COLOR": "1"})
    assert result.exit_code == 0
    assert "--json" in result.output and "--data-dir" in result.output
    assert "<bool>" not in result.output
    assert "<path>" in result.output  # options that take a value still show it


def test_read_commands_need_an_existing_index(tmp_path: Path) -> None:
    missing = tmp_path / ".kgrag-dmeo"
    with pytest.raises(KgragError) as err:
        check_data_dir(missing, creates=False, explicit=True, console=None)
    assert err.value.code is ErrorCode.DATA_DIR_NOT_FOUND and str(missing) in err.value.message
    assert not missing.exists()

    out = _console(300)
    check_data_dir(missing, creates=True, explicit=True, console=out)
    assert f"Creating a new index in {missing}" in out.export_text()

    (tmp_path / "index" / "bm25").mkdir(parents=True)
    out = _console(120)
    check_data_dir(tmp_path / "index", creates=False, explicit=False, console=out)
    note = " ".join(out.export_text().split())
    assert note == f"Using the index in {tmp_path / 'index'} (the default; pass --data-dir for another)"
    out = _console(120)
    check_data_dir(tmp_path / "index", creates=False, explicit=True, console=out)
    assert out.export_text() == ""  # a folder the user named needs no note


def test_a_mistyped_data_dir_fails_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / ".kgrag-dmeo"
    proc = run_cli(cli_env(), "search", "Atlas", "--data-dir", str(missing), "--json")
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["error"]["code"] == "DATA_DIR_NOT_FOUND"
    assert not missing.exists()
