"""A command imports only what it needs (issue 10, a fast CLI): a search never loads the NER model or the
extraction tiers, and `--help` not even the settings or the stores. Positive control: a command that builds
the whole app (`status`, extraction on) does import them, so the checks can fail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pipeline.cli_runner import cli_env, run_cli

PROBE = """
import json, sys
from kgrag_runtime.cli.app import app
try:
    app(sys.argv[1:], standalone_mode=False)
except SystemExit as done:  # --help exits; what matters here is what was imported by then
    print("EXIT=" + str(done.code))
roots = {"spacy", "psycopg", "kgrag_runtime", "kgrag_core"}
print("MODULES=" + json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in roots)))
"""

HEAVY = ("spacy", "kgrag_core.extraction.pipeline", "kgrag_runtime.extraction")


def modules_after(env: dict[str, str], *args: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    line = [x for x in proc.stdout.splitlines() if x.startswith("MODULES=")]
    assert line, proc.stderr[-3000:]
    return set(json.loads(line[0].removeprefix("MODULES=")))


@pytest.fixture
def env(tmp_path: Path, pg_dsn: str) -> dict[str, str]:
    env = cli_env(KGRAG_DATA_DIR=str(tmp_path / "index"), KGRAG_PG_DSN=pg_dsn)
    # Read commands refuse a folder that holds no index (DATA_DIR_NOT_FOUND): make an empty one first.
    (tmp_path / "empty").mkdir()
    made = run_cli(env, "ingest", str(tmp_path / "empty"), "--json")
    assert made.returncode == 0, made.stderr[-2000:]
    return env


def test_help_imports_no_settings_and_no_store(env: dict[str, str]) -> None:
    loaded = modules_after(env, "--help")
    assert "kgrag_runtime.cli.app" in loaded
    assert not loaded & {"kgrag_runtime.settings", "kgrag_runtime.wiring", "psycopg", *HEAVY}


def test_search_and_ask_load_no_extraction_but_status_does(env: dict[str, str]) -> None:
    for command in (["search", "ramp", "--json"], ["ask", "What about the ramp?", "--json"]):
        loaded = modules_after(env, *command)
        assert "kgrag_runtime.wiring" in loaded and "psycopg" in loaded  # it really opened the stores
        assert not loaded & set(HEAVY), command
    assert set(HEAVY) <= modules_after(env, "status", "--json")
