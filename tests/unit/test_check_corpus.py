"""corpora/northwind/check_corpus.py accepts what docs/evaluation.md documents (optional fields left out)
and reports each real problem once; the bundled corpus keeps its stricter conventions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "corpora" / "northwind" / "check_corpus.py"
FACT = "Dock 4 at LEJ-2 is reserved for Brightwater Foods on Tuesdays."


def _check(tmp_path: Path, docs: list[dict[str, object]], questions: list[dict[str, object]]) -> tuple[int, str]:
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--docs",
            str(tmp_path / "docs.jsonl"),
            "--questions",
            str(tmp_path / "q.jsonl"),
            "--min-per-type",
            "0",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_the_documented_minimum_passes(tmp_path: Path) -> None:
    docs = [{"id": "Dock_Schedule", "title": "Dock schedule", "text": f"# Docks\n\n{FACT}\n"}]
    questions = [
        {"id": "q1", "question": "Which dock is reserved on Tuesdays?", "type": "lookup", "gold": {"Dock_Schedule": 2}},
        {"id": "q2", "question": "What is the wifi password?", "type": "unanswerable"},
        {"id": "q3", "question": "Who reserved dock 4?", "type": "lookup", "gold": {"Dock_Schedule": 2}}
        | {"key_facts": [FACT], "principal": {"admin": True}},
    ]
    rc, out = _check(tmp_path, docs, questions)
    assert rc == 0, out
    assert "OK: no problems found" in out


def test_a_bad_date_is_reported_once_and_a_date_time_is_accepted(tmp_path: Path) -> None:
    docs = [
        {"id": "a", "title": "A", "text": f"{FACT}\n", "published_at": "1 June 2024"},
        {"id": "b", "title": "B", "text": f"{FACT}\n", "published_at": "2024-05-01T09:30:00Z"},
        {"id": "c", "title": "C", "text": f"{FACT}\n", "source": ""},
    ]
    rc, out = _check(tmp_path, docs, [])
    assert rc == 1
    problems = [line for line in out.splitlines() if line.startswith("  - ")]
    assert problems == [
        "  - document 'a': published_at is not an ISO 8601 date or date-time",
        "  - document line 3: invalid field 'source' (want a non-empty string)",
    ]


def test_required_fields_are_still_required(tmp_path: Path) -> None:
    rc, out = _check(tmp_path, [{"id": "a", "text": "x"}], [{"id": "q1", "type": "lookup", "gold": {"nope": 3}}])
    assert rc == 1
    assert "document line 1: missing field 'title'" in out
    assert "question line 1: missing field 'question'" in out
    assert "gold id 'nope' does not exist" in out and "grade for 'nope' must be 1 or 2" in out


def test_the_bundled_corpus_passes_with_its_own_conventions() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "OK: no problems found" in proc.stdout
