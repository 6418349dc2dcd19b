"""Slack export folders: one document per channel and day, readable by the channel's members only.

An export folder holds `users.json`, `channels.json` (and `groups.json` for private channels, if any)
and one folder per channel with a `YYYY-MM-DD.json` file per day (a JSON array of messages). Each
channel-day becomes a document: its messages in time order, each a paragraph opened by its marker
`[HH:MM Real Name] ` (UTC; see `kgrag_core.chunking.locators`), user and channel mentions resolved to
names, links shown by their label. The ACL is the channel's member list (`user:<Slack user name>`); a
channel without a member list is private (admins only) and says so in a warning. doc_id is
`<export folder>/<channel>/<date>`. A `users.json` or `channels.json` that cannot be read fails the
export; a day file that cannot be read fails alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

from kgrag_adapters.connectors._common import failure_from, load_json, read_source
from kgrag_core.acl import PRIVATE_ACL, AclClass, acl_from_source
from kgrag_core.chunking.locators import CHAT_MEDIA_TYPE, marker
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.validation import validate_doc_id

_DAY_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.json$")
_USER_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")
_CHANNEL_MENTION = re.compile(r"<#[A-Z0-9]+\|([^>]*)>")
_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|([^>]*))?>")
_SPECIAL = re.compile(r"<!(here|channel|everyone)[^>]*>")
_MAX_FILE_BYTES = 20_000_000


def is_slack_export(folder: Path) -> bool:
    return (folder / "users.json").is_file() and (folder / "channels.json").is_file()


def iter_slack_export(folder: Path, *, prefix: str, source: str = "slack") -> Iterator[ConnectorItem]:
    """The export's channel-day documents; `prefix` (the folder's path under the walk's root) opens each ID."""
    folder = folder.absolute()
    try:
        users = {str(u["id"]): u for u in _read_list(folder / "users.json") if isinstance(u, dict) and "id" in u}
        channels = [c for c in _read_list(folder / "channels.json") if isinstance(c, dict)]
        if (folder / "groups.json").is_file():
            channels += [c for c in _read_list(folder / "groups.json") if isinstance(c, dict)]
    except KgragError as err:
        yield failure_from(err, folder.as_uri(), None)
        return
    names = {uid: _display(user) for uid, user in users.items()}
    for channel in sorted(channels, key=lambda c: str(c.get("name", ""))):
        name = str(channel.get("name") or "")
        if not name or not (folder / name).is_dir():
            continue
        acl, warnings = _channel_acl(channel, users)
        for day_file in sorted((folder / name).iterdir()):
            day = _DAY_FILE.match(day_file.name)
            if day is None:
                continue
            doc_id = f"{prefix}/{name}/{day.group(1)}" if prefix else f"{name}/{day.group(1)}"
            try:
                yield _day_document(day_file, day.group(1), name, names, doc_id, source, acl, warnings)
            except KgragError as err:
                yield failure_from(err, day_file.as_uri(), doc_id)


def _day_document(
    path: Path,
    day: str,
    channel: str,
    names: Mapping[str, str],
    doc_id: str,
    source: str,
    acl: AclClass,
    warnings: tuple[str, ...],
) -> SourceDocument:
    messages = []
    for message in _read_list(path):
        if not isinstance(message, dict) or message.get("subtype") in ("channel_join", "channel_leave"):
            continue
        try:
            # The digits after the dot make ts unique within a channel; they are no time of their own.
            sent = datetime.fromtimestamp(float(str(message.get("ts"))), tz=UTC).replace(microsecond=0)
        except (ValueError, OverflowError, OSError) as err:
            raise KgragError(ErrorCode.MALFORMED_EVENT, f"A message has no valid ts: {message.get('ts')!r}.") from err
        text = _text(str(message.get("text") or ""), names)
        if text:
            profile = message.get("user_profile")
            fallback = str(profile.get("real_name") or "") if isinstance(profile, dict) else ""
            # Bots and integrations post with a `username` and no user ID.
            author = names.get(str(message.get("user")), fallback) or str(
                message.get("username") or message.get("user") or "unknown"
            )
            messages.append((sent, author, text))
    if not messages:
        raise KgragError(ErrorCode.EMPTY_DOCUMENT, f"{path.name} in #{channel} has no messages with text.")
    messages.sort(key=lambda m: m[0])
    body = "\n\n".join(marker(sent.strftime("%H:%M"), author) + text for sent, author, text in messages) + "\n"
    return SourceDocument(
        doc_id=validate_doc_id(doc_id),
        source=source,
        uri=path.as_uri(),
        title=f"#{channel} {day}",
        body=body.encode("utf-8"),
        acl=acl,
        modified_at=messages[-1][0],
        media_type=CHAT_MEDIA_TYPE,
        metadata={"channel": channel, "published_at": messages[0][0].isoformat()},
        warnings=warnings,
    )


def _channel_acl(
    channel: Mapping[str, object], users: Mapping[str, Mapping[str, object]]
) -> tuple[AclClass, tuple[str, ...]]:
    members = channel.get("members")
    if not isinstance(members, list) or not members:
        return PRIVATE_ACL, (f"Slack channel #{channel.get('name')} lists no members: private (admins only).",)
    logins = sorted({str(users[m].get("name") or m) if m in users else str(m) for m in members})
    return acl_from_source({"users": logins}), ()


def _text(raw: str, names: Mapping[str, str]) -> str:
    text = _USER_MENTION.sub(lambda m: "@" + names.get(m.group(1), m.group(1)), raw)
    text = _CHANNEL_MENTION.sub(lambda m: "#" + m.group(1), text)
    text = _LINK.sub(lambda m: f"{m.group(2)} ({m.group(1)})" if m.group(2) else m.group(1), text)
    text = _SPECIAL.sub(lambda m: "@" + m.group(1), text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return " ".join(text.split())


def _display(user: Mapping[str, object]) -> str:
    profile = user.get("profile")
    real = profile.get("real_name") if isinstance(profile, dict) else None
    return " ".join(str(user.get("real_name") or real or user.get("name") or user.get("id")).split())


def _read_list(path: Path) -> list[object]:
    loaded = load_json(read_source(path, max_bytes=_MAX_FILE_BYTES), path.name)
    if not isinstance(loaded, list):
        raise KgragError(ErrorCode.MALFORMED_JSON, f"{path.name} must hold a JSON array.")
    return loaded
