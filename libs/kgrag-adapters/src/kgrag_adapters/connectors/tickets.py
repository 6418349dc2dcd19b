"""Ticket exports (`.json`): GitHub issues and Jira issues, one record document per ticket.

- GitHub: a JSON array of issues as `gh issue list --json number,title,body,state,author,assignees,labels,
  comments,createdAt,updatedAt,closedAt,url` writes them (the REST API's `user`/`assignee`/`created_at`/
  `html_url` spellings are read too).
- Jira: a JSON object `{"issues": [...]}` as the search API returns it (`key`, `fields.summary`,
  `fields.status.name`, `fields.assignee`, `fields.reporter`, `fields.components`, `fields.comment.comments`),
  or Jira's CSV export (a `.csv` whose header names `Issue key` and `Summary`; any other CSV file is
  records, as before).

A ticket is stored as a structured record (`records_text`): the ticket's fields first, then its
description and each comment in order, one line each (`comment: [TIME AUTHOR] text`). Tier 1 maps the
`ticket` record type (schemas/mappings/records.yaml): the ticket with its strong id `ticket_id`, its
status, who reported it, and the systems it is about (Jira components, GitHub `system:` labels). The
ticket's date is its last update; `published_at` its creation. A ticket that lacks its key or title fails
alone (`uri=<file>#<index>`); a `.json` file of another shape is UNSUPPORTED_FILE_TYPE, invalid JSON
MALFORMED_JSON.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

from kgrag_adapters.connectors._common import failure, failure_from, load_json, read_source
from kgrag_adapters.connectors.csv_records import iter_csv
from kgrag_core.acl import PUBLIC_ACL, AclClass
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.records_text import RECORD_MEDIA_TYPE, render_record
from kgrag_core.validation import parse_timestamp, validate_doc_id

_MAX_FILE_BYTES = 50_000_000
_ISSUE_URL = re.compile(r"^https?://[^/]+/([^/]+/[^/]+)/(?:issues|pull)/(\d+)")
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9._-]+")
Fields = dict[str, str | list[str]]


def iter_tickets(path: Path, *, source: str = "tickets", default_acl: AclClass = PUBLIC_ACL) -> Iterator[ConnectorItem]:
    path = path.absolute()
    file_uri = path.as_uri()
    try:
        loaded = load_json(read_source(path, max_bytes=_MAX_FILE_BYTES), path.name)
    except KgragError as err:
        yield failure_from(err, file_uri, None)
        return
    if isinstance(loaded, dict) and isinstance(loaded.get("issues"), list):
        issues, render = loaded["issues"], _jira
    elif isinstance(loaded, list) and all(isinstance(i, dict) and ("number" in i or "url" in i) for i in loaded):
        issues, render = loaded, _github
    else:
        yield failure(
            file_uri,
            None,
            ErrorCode.UNSUPPORTED_FILE_TYPE,
            f"{path.name} is neither a GitHub issues export (a JSON array of issues) nor a Jira export "
            '({"issues": [...]}); see docs/connectors.md.',
        )
        return
    seen: set[str] = set()
    for index, issue in enumerate(issues):
        where = f"{file_uri}#{index}"
        try:
            if not isinstance(issue, dict):
                raise KgragError(ErrorCode.MALFORMED_EVENT, f"Issue {index} is not a JSON object.")
            doc = render(issue, source=source, file_uri=file_uri, acl=default_acl)
        except KgragError as err:
            yield failure_from(err, where, None)
            continue
        if doc.doc_id in seen:
            yield failure(where, doc.doc_id, ErrorCode.MALFORMED_EVENT, f"Ticket {doc.doc_id!r} appears twice.")
            continue
        seen.add(doc.doc_id)
        yield doc


def _github(issue: Mapping[str, object], *, source: str, file_uri: str, acl: AclClass) -> SourceDocument:
    url = _str(issue.get("url")) or _str(issue.get("html_url"))
    if url.startswith("https://api."):
        url = _str(issue.get("html_url"))
    found = _ISSUE_URL.match(url)
    number = _str(issue.get("number")) or (found.group(2) if found else "")
    repo = found.group(1) if found else ""
    title = _str(issue.get("title"))
    if not number or not title:
        raise KgragError(ErrorCode.MISSING_FIELD, "A GitHub issue needs its number (or url) and its title.")
    key = f"{repo}#{number}" if repo else f"#{number}"
    labels = [_str(label.get("name")) if isinstance(label, dict) else _str(label) for label in _list(issue, "labels")]
    assignees = _list(issue, "assignees") or ([issue["assignee"]] if isinstance(issue.get("assignee"), dict) else [])
    fields: Fields = {
        "ticket_id": key,
        "title": title,
        "tracker": "github",
        "status": _str(issue.get("state")).lower(),
        "reporter": _login(issue.get("author") or issue.get("user")),
        "assignee": [_login(person) for person in assignees],
        "labels": [label for label in labels if label],
        "system": [label.split(":", 1)[1].strip() for label in labels if label.lower().startswith("system:")],
    }
    comments = [
        (_str(c.get("createdAt") or c.get("created_at")), _login(c.get("author") or c.get("user")), _str(c.get("body")))
        for c in _list(issue, "comments")
        if isinstance(c, dict)
    ]
    return _ticket(
        fields,
        description=_str(issue.get("body")),
        comments=comments,
        dates=(issue.get("createdAt") or issue.get("created_at"), issue.get("updatedAt") or issue.get("updated_at")),
        closed=issue.get("closedAt") or issue.get("closed_at"),
        doc_key=f"github-{repo.replace('/', '-')}-{number}" if repo else f"github-{number}",
        uri=url or f"{file_uri}#{number}",
        source=source,
        acl=acl,
    )


def _jira(issue: Mapping[str, object], *, source: str, file_uri: str, acl: AclClass) -> SourceDocument:
    key = _str(issue.get("key"))
    raw_fields = issue.get("fields")
    data = raw_fields if isinstance(raw_fields, dict) else {}
    title = _str(data.get("summary"))
    if not key or not title:
        raise KgragError(ErrorCode.MISSING_FIELD, "A Jira issue needs its key and fields.summary.")
    status = data.get("status")
    comment_block = data.get("comment")
    raw_comments = comment_block.get("comments") if isinstance(comment_block, dict) else None
    comments = [
        (_str(c.get("created")), _person(c.get("author")), _str(c.get("body")))
        for c in (raw_comments if isinstance(raw_comments, list) else [])
        if isinstance(c, dict)
    ]
    project = key.rsplit("-", 1)[0]
    fields: Fields = {
        "ticket_id": key,
        "title": title,
        "tracker": "jira",
        "project": project,
        "issue_type": _name(data.get("issuetype")),
        "priority": _name(data.get("priority")),
        "status": _name(status).lower(),
        "reporter": _person(data.get("reporter")),
        "assignee": _person(data.get("assignee")),
        "labels": [_str(label) for label in _list(data, "labels")],
        "system": [_name(component) for component in _list(data, "components")],
    }
    self_url = _str(issue.get("self"))
    base = self_url.split("/rest/", 1)[0] if "/rest/" in self_url else ""
    return _ticket(
        fields,
        description=_str(data.get("description")),
        comments=comments,
        dates=(data.get("created"), data.get("updated")),
        closed=data.get("resolutiondate"),
        doc_key=f"jira-{key}",
        uri=f"{base}/browse/{key}" if base else f"{file_uri}#{key}",
        source=source,
        acl=acl,
    )


def _ticket(
    fields: Fields,
    *,
    description: str,
    comments: list[tuple[str, str, str]],
    dates: tuple[object, object],
    closed: object,
    doc_key: str,
    uri: str,
    source: str,
    acl: AclClass,
) -> SourceDocument:
    created = parse_timestamp(dates[0] or None, field="created")
    updated = parse_timestamp(dates[1] or None, field="updated")
    closed_at = parse_timestamp(closed or None, field="closed")
    for name, value in (("created", created), ("updated", updated), ("closed", closed_at)):
        if value is not None:
            fields[name] = value.isoformat()
    fields["description"] = description
    lines: list[str] = []
    for when, author, text in comments:
        stamp = parse_timestamp(when or None, field="comment created")
        head = " ".join(part for part in (stamp.isoformat() if stamp else "", author) if part)
        lines.append(f"[{head}] {text}" if head else text)
    # One line per comment, in order (a list field would join them on one line): each quotes exactly.
    body = render_record("ticket", fields) + "".join(
        f"comment: {flat}\n" for line in lines if (flat := " ".join(line.split()))
    )
    doc_id = validate_doc_id("ticket-" + _UNSAFE_ID.sub("-", doc_key).strip("-"))
    metadata = {"published_at": created.isoformat()} if created else {}
    return SourceDocument(
        doc_id=doc_id,
        source=source,
        uri=uri,
        title=f"{fields['ticket_id']}: {fields['title']}",
        body=body.encode("utf-8"),
        acl=acl,  # exports carry no reader lists: the file's sidecar or folder ACL file gives them (else public)
        modified_at=updated or created,
        media_type=RECORD_MEDIA_TYPE,
        metadata=metadata,
    )


def _list(mapping: Mapping[str, object], key: str) -> list[object]:
    value = mapping.get(key)
    if isinstance(value, dict) and isinstance(value.get("nodes"), list):  # GraphQL-shaped exports
        value = value["nodes"]
    return list(value) if isinstance(value, list) else []


def _login(person: object) -> str:
    if isinstance(person, dict):
        return _str(person.get("login") or person.get("name"))
    return _str(person)


def _person(person: object) -> str:
    if isinstance(person, dict):
        return _str(person.get("displayName") or person.get("name") or person.get("emailAddress"))
    return _str(person)


def _name(value: object) -> str:
    return _str(value.get("name")) if isinstance(value, dict) else _str(value)


def _str(value: object) -> str:
    if value is None or isinstance(value, bool | dict | list):
        return ""
    return " ".join(str(value).split())


# --- Jira CSV export ---------------------------------------------------------------------------------
# Jira's CSV export repeats a column once per value (Comment, Component/s, Labels); dates are written in
# the instance's format, by default `16/Mar/26 10:02 AM`; a comment cell is `DATE;AUTHOR;BODY`.
_JIRA_CSV_KEYS = frozenset({"issue key", "summary"})
_JIRA_DATES = ("%d/%b/%y %I:%M %p", "%d/%b/%Y %I:%M %p", "%d/%b/%y %H:%M", "%Y-%m-%d %H:%M", "%d.%m.%Y %H:%M")


def is_jira_csv(header: list[str]) -> bool:
    return {name.strip().lower() for name in header} >= _JIRA_CSV_KEYS


def iter_csv_export(path: Path, *, source: str = "csv", default_acl: AclClass = PUBLIC_ACL) -> Iterator[ConnectorItem]:
    """A `.csv` file: a Jira export (its header names `Issue key` and `Summary`) as tickets, else records."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            header = next(csv.reader(handle), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        header = []  # the records connector reads the file again and reports what is wrong with it
    if is_jira_csv(header):
        yield from _iter_jira_csv(path, source=source, default_acl=default_acl)
    else:
        yield from iter_csv(path, source=source, default_acl=default_acl)


def _iter_jira_csv(path: Path, *, source: str, default_acl: AclClass) -> Iterator[ConnectorItem]:
    path = path.absolute()
    file_uri = path.as_uri()
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        code = ErrorCode.INVALID_UTF8 if isinstance(err, UnicodeDecodeError) else ErrorCode.SOURCE_UNREADABLE
        yield failure(file_uri, None, code, f"{path.name} cannot be read: {err}")
        return
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [name.strip().lower() for name in next(reader)]
    seen: set[str] = set()
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            yield failure(f"{file_uri}#L{reader.line_num}", None, ErrorCode.MALFORMED_EVENT, f"Row unreadable: {err}")
            continue
        if not any(cell.strip() for cell in row):
            continue
        where = f"{file_uri}#L{reader.line_num}"
        try:
            doc = _jira(_jira_issue(header, row), source=source, file_uri=file_uri, acl=default_acl)
        except KgragError as err:
            yield failure_from(err, where, None)
            continue
        if doc.doc_id in seen:
            yield failure(where, doc.doc_id, ErrorCode.MALFORMED_EVENT, f"Ticket {doc.doc_id!r} appears twice.")
            continue
        seen.add(doc.doc_id)
        yield doc


def _jira_issue(header: list[str], row: list[str]) -> dict[str, object]:
    """A CSV row in the shape of the JSON export's issue, so both are read by `_jira`."""
    cells: dict[str, list[str]] = {}
    for name, cell in zip(header, row, strict=False):
        if cell.strip():
            cells.setdefault(name, []).append(cell.strip())

    def one(name: str) -> str:
        return cells.get(name, [""])[0]

    comments = []
    for cell in cells.get("comment", []):
        parts = cell.split(";", 2)
        when, author, body = parts if len(parts) == 3 else ("", "", cell)
        comments.append({"author": {"displayName": author}, "body": body, "created": _jira_date(when, "comment")})
    return {
        "key": one("issue key"),
        "fields": {
            "summary": one("summary"),
            "description": one("description"),
            "issuetype": {"name": one("issue type")},
            "priority": {"name": one("priority")},
            "status": {"name": one("status")},
            "reporter": {"displayName": one("reporter")},
            "assignee": {"displayName": one("assignee")},
            "components": [{"name": name} for name in cells.get("component/s", [])],
            "labels": cells.get("labels", []),
            "created": _jira_date(one("created"), "Created"),
            "updated": _jira_date(one("updated"), "Updated"),
            "resolutiondate": _jira_date(one("resolved"), "Resolved"),
            "comment": {"comments": comments},
        },
    }


def _jira_date(value: str, field: str) -> str | None:
    if not value.strip():
        return None
    for form in _JIRA_DATES:
        try:
            return datetime.strptime(value.strip(), form).replace(tzinfo=UTC).isoformat()
        except ValueError:
            continue
    parsed = parse_timestamp(value, field=field)  # ISO 8601, else MALFORMED_EVENT naming the field
    return parsed.isoformat() if parsed else None
