"""Structured records as text: one `field: value` line per field, the first line naming the record type.

A record (a row of a CSV export, a JSONL `record` object) is stored as an ordinary document whose body is
this rendering, so it stays searchable like any other text and every item tier 1 maps from it can quote
the exact line it came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

RECORD_MEDIA_TYPE = "text/x-kgrag-record"
TYPE_FIELD = "record_type"
LIST_SEPARATOR = "; "

_NON_KEY = re.compile(r"[^0-9a-z]+")
_LINE = re.compile(r"^([a-z0-9][a-z0-9_]*): ?(.*)$")
_SPACE = re.compile(r"\s+")


def field_key(name: str) -> str:
    """A column or field name as a record key: lowercase, runs of anything else than [a-z0-9] become `_`."""
    return _NON_KEY.sub("_", name.strip().lower()).strip("_")


def _one_line(value: str) -> str:
    # A line break inside a value would forge a field line of its own.
    return _SPACE.sub(" ", value).strip()


def render_record(record_type: str, fields: Mapping[str, str | list[str]]) -> str:
    """The record as text. Keys are normalised with `field_key`; empty values and empty keys are left out;
    a list is one line with its items joined by "; ". Raises ValueError for an empty record type."""
    kind = field_key(record_type)
    if not kind:
        raise ValueError(f"record type {record_type!r} has no letters or digits")
    lines = [f"{TYPE_FIELD}: {kind}"]
    for name, raw in fields.items():
        key = field_key(name)
        items = [raw] if isinstance(raw, str) else list(raw)
        value = LIST_SEPARATOR.join(v for v in (_one_line(item) for item in items) if v)
        if key and key != TYPE_FIELD and value:
            lines.append(f"{key}: {value}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class RecordLine:
    key: str
    value: str
    line: str  # the line exactly as it stands in the text (stripped): what a mapped item quotes


def record_lines(text: str) -> tuple[str, list[RecordLine]] | None:
    """(record type, its field lines in order), or None when the text is not a rendered record."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    first = _LINE.match(lines[0])
    if first is None or first.group(1) != TYPE_FIELD or not field_key(first.group(2)):
        return None
    out: list[RecordLine] = []
    for line in lines[1:]:
        match = _LINE.match(line)
        if match is None:
            return None
        if value := match.group(2).strip():
            out.append(RecordLine(match.group(1), value, line))
    return field_key(first.group(2)), out


def parse_record(text: str) -> tuple[str, dict[str, list[str]]] | None:
    """(record type, field -> values in line order), or None when the text is not a rendered record.

    A field given on several lines collects every line's value; a value is not split on ";" here (which
    fields hold lists is the mapping rules' business).
    """
    parsed = record_lines(text)
    if parsed is None:
        return None
    kind, lines = parsed
    fields: dict[str, list[str]] = {}
    for item in lines:
        fields.setdefault(item.key, []).append(item.value)
    return kind, fields
