"""Front-matter mistakes that are valid YAML but not what the writer meant: reported as warnings (with the
file's own line numbers), never as rejections, so what is valid keeps being indexed exactly as before.

A misspelt key (`titel:`) is ignored, a misspelt ACL key (`acl: {group: [...]}`) makes the note readable by
administrators only (fail closed), and a `---` block that is never closed is indexed as body text: each
is silent without these warnings.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence

from kgrag_core.chunking.lines import Line

# The keys the Markdown loader reads (docs/getting-started.md, "Markdown front matter").
KNOWN_KEYS = ("id", "title", "date", "modified", "published_at", "acl")
ACL_KEYS = ("groups", "users")
_KEY_LINE = re.compile(r"^[\w.-]+[ \t]*:(?:[ \t]|$)")


def unclosed_block(lines: Sequence[Line]) -> str | None:
    """A file that opens front matter (`---`, then a `key:` line) and never closes it."""
    if not lines or lines[0].text.rstrip() != "---":
        return None
    if any(line.text.rstrip() in ("---", "...") for line in lines[1:]):
        return None
    first = next((line.text for line in lines[1:] if line.text.strip()), "")
    if not _KEY_LINE.match(first):
        return None  # a thematic break at the top, not front matter
    return (
        "line 1: front matter opened with `---` is never closed, so it is indexed as body text; "
        "add a `---` line after it."
    )


def key_warnings(front: Mapping[str, object], lines: Sequence[Line], front_count: int) -> list[str]:
    """Unknown top-level keys (ignored) and unknown ACL keys (which make the document private)."""
    block = lines[1 : max(front_count - 1, 1)]
    warnings = []
    for key in front:
        if key not in KNOWN_KEYS:
            warnings.append(
                f"line {_line_of(key, block, top_level=True)}: front matter key {key!r} is not one kgrag reads, "
                f"so it is ignored{_did_you_mean(key, KNOWN_KEYS)}."
            )
    acl = front.get("acl")
    if isinstance(acl, Mapping):
        for key in acl:
            if str(key) not in ACL_KEYS:
                warnings.append(
                    f"line {_line_of(str(key), block, top_level=False)}: ACL key {key!r} is not `groups` or `users`"
                    f"{_did_you_mean(str(key), ACL_KEYS)}, so the document is readable by administrators only."
                )
    return warnings


def yaml_error_line(problem_line: int | None) -> int | None:
    """A YAML error's line within the front matter (0-based, as PyYAML counts) as a line of the file: the
    front matter starts on line 2, after the opening `---`."""
    return None if problem_line is None else problem_line + 2


def _line_of(key: str, block: Sequence[Line], *, top_level: bool) -> int:
    pattern = re.compile(("^" if top_level else r"(?:^\s+|[{,]\s*)") + re.escape(key) + r"\s*:")
    # Line numbers of the file: the block starts on line 2.
    found = next((i for i, line in enumerate(block, start=2) if pattern.search(line.text)), None)
    if found is None and not top_level:
        found = next((i for i, line in enumerate(block, start=2) if line.text.startswith("acl")), None)
    return found or 1


def _did_you_mean(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
