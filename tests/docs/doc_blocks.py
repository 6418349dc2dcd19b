"""The runnable examples of a Markdown page, and what the page shows as their output.

The convention (tests/docs/README.md):

- A fenced block tagged `bash`, `sh`, `shell` or `console` is a **step**: its lines run as one shell
  script. Its expected output is the first following `text` or `json` block that is not a transcript, if
  no heading and no other step comes first. Several commands in one step: the output is all of theirs.
- A `text` block whose first line starts with `$ ` is a **transcript**: each `$ ` line is a step, and
  the lines after it, up to the next `$ ` line, are its expected output.
- A usage synopsis (`kgrag ingest PATH [--json]`) is neither a command nor an output: tag it `usage`.
- A step whose shown output is a CLI error (`error [CODE] …`) must fail with exit status 2; any other
  step must succeed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)[^`]*$")
_HEADING = re.compile(r"^#{1,6} ")
STEP_LANGUAGES = frozenset({"bash", "sh", "shell", "console"})
OUTPUT_LANGUAGES = frozenset({"text", "json"})


@dataclass(frozen=True, slots=True)
class Block:
    line: int  # 1-based line of the opening fence
    language: str
    text: str  # the content, dedented by the fence's indentation

    @property
    def is_transcript(self) -> bool:
        first = next((line for line in self.text.splitlines() if line.strip()), "")
        return self.language == "text" and first.startswith("$ ")


@dataclass(frozen=True, slots=True)
class Expected:
    kind: str  # "text" or "json"
    text: str
    line: int

    @property
    def shows_an_error(self) -> bool:
        """The page shows the CLI failing (`error [CODE] …`, or `{"error": …}` in a transcript of `--json`):
        the command must then exit with status 2, the CLI's error status. (A curl example shows an error
        body in a `json` block, and curl itself succeeds.)"""
        first = next((line.strip() for line in self.text.splitlines() if line.strip()), "")
        return first.startswith("error [") or (self.kind == "text" and first.startswith('{"error"'))


@dataclass(frozen=True, slots=True)
class Step:
    doc: str
    line: int
    commands: str
    expected: Expected | None

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def read_blocks(path: Path) -> list[Block | int]:
    """Fenced blocks in order, with the line number of every heading between them (as an int)."""
    out: list[Block | int] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            if _HEADING.match(lines[i]):
                out.append(i + 1)
            i += 1
            continue
        indent, fence = len(match["indent"]), match["fence"]
        body: list[str] = []
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence:
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        out.append(Block(i + 1, match["info"].lower(), "\n".join(body) + "\n"))
        i = j + 1
    return out


def steps_of(path: Path, doc: str) -> list[Step]:
    items = read_blocks(path)
    steps: list[Step] = []
    for index, item in enumerate(items):
        if not isinstance(item, Block):
            continue
        if item.is_transcript:
            steps.extend(_transcript_steps(item, doc))
        elif item.language in STEP_LANGUAGES:
            steps.append(Step(doc, item.line, item.text, _output_after(items, index)))
    return steps


def _output_after(items: list[Block | int], index: int) -> Expected | None:
    for item in items[index + 1 :]:
        if not isinstance(item, Block) or item.language in STEP_LANGUAGES or item.is_transcript:
            return None  # a heading or another step comes first
        if item.language in OUTPUT_LANGUAGES:
            return Expected(item.language, item.text, item.line)
    return None


def _transcript_steps(block: Block, doc: str) -> list[Step]:
    steps: list[Step] = []
    command: str | None = None
    start = block.line
    output: list[str] = []
    for offset, line in enumerate(block.text.splitlines(), start=1):
        if line.startswith("$ "):
            if command is not None:
                steps.append(Step(doc, start, command, Expected("text", "\n".join(output), start)))
            command, start, output = line[2:], block.line + offset, []
        else:
            output.append(line)
    if command is not None:
        steps.append(Step(doc, start, command, Expected("text", "\n".join(output), start)))
    return steps
