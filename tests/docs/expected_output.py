"""Does a command's output still contain what the page shows next to it?

Text: every line of the shown output, cut at `…` (or `...`: "something goes here that varies or was
trimmed"), must appear in the output, compared with whitespace runs (line wraps included) collapsed and
table borders removed. JSON: every `"key": value` pair with a scalar or empty value that the page shows
must appear in the output's JSON (a string value cut at `…` is compared up to the cut; `"key": "…"` only
asks for the key).
"""

from __future__ import annotations

import json
import re

from tests.docs.doc_blocks import Expected

_ELISION = re.compile(r"…|\.\.\.")
_BOX = re.compile(r"[\u2500-\u259f]")  # box drawing and block elements: table borders, progress bars
_PAIR = re.compile(
    r'"(?P<key>[^"\\]+)"\s*:\s*(?P<value>"(?:[^"\\]|\\.)*"?|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|\[\]|\{\})'
)
_MIN_FRAGMENT = 3


def _flat(text: str) -> str:
    return " ".join(_BOX.sub(" ", text).split())


def text_fragments(shown: str) -> list[str]:
    out = []
    for line in shown.splitlines():
        for part in _ELISION.split(line):
            flat = _flat(part)
            if len(flat) >= _MIN_FRAGMENT:
                out.append(flat)
    return out


def json_pairs(shown: str) -> list[str]:
    """`"key": value` as json.dumps writes it (one space after the colon), a cut string left open."""
    pairs = []
    for match in _PAIR.finditer(shown):
        if _ELISION.search(match["key"]):
            continue  # `"…": "…"`: fields left out
        value = match["value"]
        if value.startswith('"'):
            cut = _ELISION.search(value)
            value = value[: cut.start()] if cut else value
            if value == '"':
                value = ""  # `"key": "…"`: the key, with any value
        pairs.append(f'"{match["key"]}": {value}')
    return pairs


def _canonical(output: str) -> str:
    try:
        return json.dumps(json.loads(output), ensure_ascii=False)
    except ValueError:
        # Not one JSON document (several, or text around it): compare on the text as written.
        return re.sub(r'"\s*:\s*', '": ', " ".join(output.split()))


def missing(expected: Expected, stdout: str, stderr: str) -> list[str]:
    """What the page shows that the output lacks (empty: the output still matches)."""
    if expected.kind == "json":
        canonical = _canonical(stdout)
        return [p for p in json_pairs(expected.text) if p not in canonical]
    flat = _flat(stdout + "\n" + stderr)
    return [f for f in text_fragments(expected.text) if f not in flat]
