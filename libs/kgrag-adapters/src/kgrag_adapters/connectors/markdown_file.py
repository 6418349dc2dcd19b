"""Markdown files: YAML front matter, title fallback and wikilinks.

The stored body is the file's bytes exactly (front matter included): the chunker excludes front matter
itself, and keeping the bytes exact keeps chunk offsets valid against the stored object.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import yaml

from kgrag_adapters.connectors._common import failure_from
from kgrag_adapters.connectors.front_matter_checks import key_warnings, unclosed_block, yaml_error_line
from kgrag_core.acl import PRIVATE_ACL, PUBLIC_ACL, AclClass, acl_from_source
from kgrag_core.chunking.blocks import BlockKind, detect_blocks
from kgrag_core.chunking.lines import front_matter_lines, split_lines
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.validation import parse_timestamp, validate_doc_id

MEDIA_TYPE = "text/markdown"
# [[Target]], [[Target|label]], [[Target#Section]]: the target is everything before `|` or `#`.
_WIKILINK = re.compile(r"\[\[([^\[\]|#\r\n]+)(?:#[^\[\]|\r\n]*)?(?:\|[^\[\]\r\n]*)?\]\]")


def load_markdown(
    data: bytes, *, doc_id: str, source: str, uri: str, stem: str, default_acl: AclClass = PUBLIC_ACL
) -> ConnectorItem:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        # Still yielded, so the core reports INVALID_UTF8 like for every other entry point. Its front
        # matter cannot be read, so nothing says who may read it: private, never public.
        return SourceDocument(doc_id, source, uri, stem, data, PRIVATE_ACL, media_type=MEDIA_TYPE)
    lines = split_lines(data)
    front_count = front_matter_lines(lines)
    try:
        front = _front_matter(data, lines[1].start, lines[front_count - 2].end) if front_count > 2 else {}
        doc_id = validate_doc_id(_front_id(front) or doc_id)
        acl = _acl(front, default_acl)
        modified_at = parse_timestamp(
            _first(front, "modified", "published_at", "date"), field="front matter modified/date"
        )
        published_at = parse_timestamp(_first(front, "published_at", "date"), field="front matter date")
    except KgragError as err:
        return failure_from(err, uri, doc_id)
    unclosed = unclosed_block(lines) if front_count == 0 else None
    warnings = (unclosed,) if unclosed else tuple(key_warnings(front, lines, front_count))

    blocks = detect_blocks(lines, front_count)
    h1 = next((b.heading for b in blocks if b.kind is BlockKind.HEADING and b.level == 1 and b.heading), "")
    title = _scalar_text(front.get("title")) or " ".join(h1.split()) or stem

    body_start = lines[front_count].start if front_count < len(lines) else len(data)
    targets: dict[str, None] = {}  # an ordered set: first mention first
    for match in _WIKILINK.finditer(data[body_start:].decode("utf-8")):
        if target := match.group(1).strip():
            targets.setdefault(target, None)
    metadata: dict[str, str] = {}
    if targets:
        metadata["wikilinks"] = ",".join(targets)
    if published_at is not None:
        metadata["published_at"] = published_at.isoformat()
    return SourceDocument(
        doc_id=doc_id,
        source=source,
        uri=uri,
        title=title,
        body=data,
        acl=acl,
        modified_at=modified_at,
        media_type=MEDIA_TYPE,
        metadata=metadata,
        warnings=warnings,
    )


def _front_matter(data: bytes, start: int, end: int) -> Mapping[str, object]:
    try:
        loaded = yaml.safe_load(data[start:end].decode("utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = yaml_error_line(mark.line if mark is not None else None)
        problem = getattr(err, "problem", None) or str(err)
        where = f" (line {line} of the file)" if line is not None else ""
        raise KgragError(ErrorCode.MALFORMED_EVENT, f"The front matter is not valid YAML{where}: {problem}.") from err
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise KgragError(ErrorCode.MALFORMED_EVENT, f"The front matter must be a mapping, got {type(loaded).__name__}.")
    return {str(key): value for key, value in loaded.items()}


def _front_id(front: Mapping[str, object]) -> str | None:
    value = front.get("id")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise KgragError(ErrorCode.MALFORMED_EVENT, f"Front matter id must be a string, got {value!r}.")
    return str(value)


def _acl(front: Mapping[str, object], default_acl: AclClass) -> AclClass:
    if "acl" not in front:
        return default_acl  # no ACL of its own: its sidecar's or folder's (public when there is none)
    # `acl:` with no value is an ACL someone meant to write: treat it as malformed (private), not public.
    return PRIVATE_ACL if front["acl"] is None else acl_from_source(front["acl"])


def _first(front: Mapping[str, object], *keys: str) -> object:
    return next((front[key] for key in keys if front.get(key) is not None), None)


def _scalar_text(value: object) -> str:
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return " ".join(str(value).split())
    return ""
