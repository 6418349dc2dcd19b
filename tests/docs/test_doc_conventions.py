"""The docs test's own rules (tests/docs/README.md): which blocks run, what counts as their output, and
when an output still shows what the page shows."""

from __future__ import annotations

from pathlib import Path

from tests.docs.doc_blocks import Expected, steps_of
from tests.docs.expected_output import json_pairs, missing, text_fragments

PAGE = """# Page

```bash
uv run kgrag ingest x --data-dir .kgrag-demo
```

What you see:

```text
Done: 106 indexed.
```

```text
uv run kgrag search "QUERY" [--top-k N]
```

- In a list:

  ```sh
  curl -s http://127.0.0.1:8765/readyz
  ```

## Next

```json
{"not": "an output: a heading came first"}
```

```text
$ uv run kgrag status
documents 106
$ uv run kgrag delete a
Deleted a: 2 chunks removed from every store.
```
"""


def test_steps_outputs_and_transcripts(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    steps = steps_of(page, "page.md")
    assert [s.commands.strip() for s in steps] == [
        "uv run kgrag ingest x --data-dir .kgrag-demo",
        "curl -s http://127.0.0.1:8765/readyz",  # an indented block in a list runs too
        "uv run kgrag status",
        "uv run kgrag delete a",
    ]
    assert steps[0].expected is not None and steps[0].expected.text == "Done: 106 indexed.\n"
    assert steps[1].expected is None  # the JSON block is under the next heading
    assert steps[2].expected is not None and steps[2].expected.text == "documents 106"
    assert steps[3].expected is not None and "2 chunks removed" in steps[3].expected.text
    assert not any(s.expected.shows_an_error for s in steps if s.expected is not None)
    assert [s.line for s in steps] == [3, 19, 30, 32]  # the fence's line; a transcript's `$` line


def test_a_shown_cli_error_means_the_step_must_fail() -> None:
    assert Expected("text", "error [DOCUMENT_NOT_FOUND] No active document 'a'.\nhint …", 1).shows_an_error
    assert Expected("text", '{"error": {"code": "DOCUMENT_NOT_FOUND"}}', 1).shows_an_error  # a --json transcript
    assert not Expected("json", '{"error": {"code": "LIMIT_EXCEEDED"}}', 1).shows_an_error  # curl succeeds
    assert not Expected("text", "Deleted a: 2 chunks removed from every store.", 1).shows_an_error


def test_text_is_compared_without_wraps_borders_or_elided_parts() -> None:
    shown = Expected(
        "text", "Ingesting documents.jsonl ━━━━ 106/106 0:00:39…\n│ documents │ 106 │\nA: one two … five", 1
    )
    assert text_fragments(shown.text) == [
        "Ingesting documents.jsonl 106/106 0:00:39",
        "documents 106",
        "A: one two",
        "five",
    ]
    real = "Ingesting documents.jsonl ━━━━━━━━ 106/106 0:00:39\n┃ documents ┃ 106 ┃\nA: one\ntwo three four five\n"
    assert missing(shown, real, "") == []
    assert missing(shown, real.replace("106/106", "105/106"), "") == ["Ingesting documents.jsonl 106/106 0:00:39"]


def test_json_is_compared_pair_by_pair() -> None:
    shown = (
        '{"status": "INDEXED", "outcome": {"doc_id": "wiki-a", "…": "…", "chunks": 1, "text": "Dock 4 …",\n'
        ' "hits": []}}'
    )
    assert json_pairs(shown) == [
        '"status": "INDEXED"',
        '"doc_id": "wiki-a"',
        '"chunks": 1',
        '"text": "Dock 4 ',
        '"hits": []',
    ]
    expected = Expected("json", shown, 1)
    real = '{"status":"INDEXED","outcome":{"doc_id":"wiki-a","chunks":1,"text":"Dock 4 at LEJ-2","hits":[]}}'
    assert missing(expected, real, "") == []
    assert missing(expected, real.replace('"chunks":1', '"chunks":2'), "") == ['"chunks": 1']
    any_value = Expected("json", '{"facts": {"entities": "…", "chunks": 548}}', 1)
    assert missing(any_value, '{"facts": {"entities": 372, "chunks": 548}}', "") == []
    assert missing(any_value, '{"facts": {"chunks": 548}}', "") == ['"entities": ']
