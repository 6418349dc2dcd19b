"""Meeting transcripts: WebVTT (`.vtt`), SRT (`.srt`) and plain `SPEAKER: text` files (`.transcript.txt`).

The stored body is one paragraph per utterance, each opened by its marker (`[00:01:23 Alice Chen] `,
see `kgrag_core.chunking.locators`), so every chunk and citation says who spoke and when. Consecutive
cues of one speaker form one utterance (subtitles cut sentences into cues). The speaker is the cue's voice
tag (`<v Alice Chen>`), else a leading `Name: ` in its text; plain transcripts may give a time before the
name (`[00:01:23] Alice Chen: ...` or `00:01:23 Alice Chen: ...`). The meeting date, the document's date,
comes from a WebVTT `NOTE date: YYYY-MM-DD` (a `NOTE title: ...` gives the title), else from a file name
starting with the date (`2026-03-02-ops-sync.vtt`). Unparsable files get MALFORMED_FILE.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

import webvtt
from webvtt.errors import MalformedFileError

from kgrag_adapters.connectors._common import failure
from kgrag_core.acl import PUBLIC_ACL, AclClass
from kgrag_core.chunking.locators import TRANSCRIPT_MEDIA_TYPE, marker
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.validation import parse_timestamp

PLAIN_SUFFIX = ".transcript.txt"
_SPEAKER = re.compile(r"^(?:-\s*)?([A-Z][\w .'’-]{0,48}?):\s+(\S.*)$")
_PLAIN_TIME = re.compile(r"^\[?(\d{1,2}:\d{2}(?::\d{2})?)(?:[.,]\d{1,3})?\]?\s+(.*)$")
_STEM_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})[-_ ]?(.*)$")
_NOTE = re.compile(r"^\s*(date|title)\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


@dataclass(slots=True)
class _Utterance:
    time: str | None
    speaker: str | None
    text: str


def load_vtt(
    data: bytes, *, doc_id: str, source: str, uri: str, stem: str, default_acl: AclClass = PUBLIC_ACL
) -> ConnectorItem:
    return _load_captions(data, "vtt", doc_id=doc_id, source=source, uri=uri, stem=stem, acl=default_acl)


def load_srt(
    data: bytes, *, doc_id: str, source: str, uri: str, stem: str, default_acl: AclClass = PUBLIC_ACL
) -> ConnectorItem:
    return _load_captions(data, "srt", doc_id=doc_id, source=source, uri=uri, stem=stem, acl=default_acl)


def load_plain_transcript(
    data: bytes, *, doc_id: str, source: str, uri: str, stem: str, default_acl: AclClass = PUBLIC_ACL
) -> ConnectorItem:
    text = _decode(data)
    if text is None:
        return failure(uri, doc_id, ErrorCode.INVALID_UTF8, f"{doc_id} is not UTF-8.")
    utterances: list[_Utterance] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        time = None
        if timed := _PLAIN_TIME.match(line):
            time, line = _hms(timed.group(1)), timed.group(2)
        spoken = _SPEAKER.match(line)
        if spoken:
            utterances.append(_Utterance(time, spoken.group(1).strip(), spoken.group(2).strip()))
        elif utterances:
            utterances[-1].text += " " + line  # a wrapped line continues the utterance
        else:
            return failure(uri, doc_id, ErrorCode.MALFORMED_FILE, f"{doc_id}: the first line names no speaker.")
    if not utterances:
        return failure(uri, doc_id, ErrorCode.MALFORMED_FILE, f"{doc_id} has no `SPEAKER: text` lines.")
    return _document(utterances, {}, doc_id=doc_id, source=source, uri=uri, stem=stem, acl=default_acl)


def _load_captions(
    data: bytes, kind: str, *, doc_id: str, source: str, uri: str, stem: str, acl: AclClass
) -> ConnectorItem:
    text = _decode(data)
    if text is None:
        return failure(uri, doc_id, ErrorCode.INVALID_UTF8, f"{doc_id} is not UTF-8.")
    try:
        captions = webvtt.from_buffer(io.StringIO(text), format=kind)
    except (MalformedFileError, ValueError, IndexError) as err:
        return failure(uri, doc_id, ErrorCode.MALFORMED_FILE, f"{doc_id} is not a valid {kind.upper()} file: {err}")
    notes = {key.lower(): value for key, value in _NOTE.findall("\n".join(captions.header_comments or []))}
    utterances: list[_Utterance] = []
    for cue in captions.captions:
        words = " ".join(cue.text.split())
        if not words:
            continue
        speaker = cue.voice
        if speaker is None and (spoken := _SPEAKER.match(words)):
            speaker, words = spoken.group(1).strip(), spoken.group(2).strip()
        speaker = " ".join(speaker.split()) if speaker else None
        if utterances and utterances[-1].speaker == speaker and speaker is not None:
            utterances[-1].text += " " + words
        else:
            utterances.append(_Utterance(_hms(cue.start), speaker, words))
    if not utterances:
        return failure(uri, doc_id, ErrorCode.MALFORMED_FILE, f"{doc_id} has no captions with text.")
    return _document(utterances, notes, doc_id=doc_id, source=source, uri=uri, stem=stem, acl=acl)


def _document(
    utterances: list[_Utterance], notes: dict[str, str], *, doc_id: str, source: str, uri: str, stem: str, acl: AclClass
) -> ConnectorItem:
    name = stem.removesuffix(".transcript")
    stem_match = _STEM_DATE.match(name)
    try:
        meeting = parse_timestamp(
            notes.get("date") or (stem_match.group(1) if stem_match else None), field="meeting date"
        )
    except KgragError as err:
        return failure(uri, doc_id, err.code, f"{doc_id}: {err.message}")
    base = stem_match.group(2) if stem_match else name
    title = notes.get("title") or " ".join(base.replace("-", " ").replace("_", " ").split()).capitalize() or name
    if meeting is not None and not notes.get("title"):
        title = f"{title} ({meeting.date().isoformat()})"
    body = "\n\n".join(marker(u.time, u.speaker) + u.text for u in utterances) + "\n"
    speakers = dict.fromkeys(u.speaker for u in utterances if u.speaker)
    metadata = {"speakers": ", ".join(speakers)}
    if meeting is not None:
        metadata["published_at"] = meeting.isoformat()
    return SourceDocument(
        doc_id=doc_id,
        source=source,
        uri=uri,
        title=title,
        body=body.encode("utf-8"),
        acl=acl,  # a transcript carries no reader list: its sidecar or folder ACL file gives it (else public)
        modified_at=meeting,
        media_type=TRANSCRIPT_MEDIA_TYPE,
        metadata=metadata,
    )


def _hms(value: str) -> str:
    """`00:01:23.456` / `1:23` -> `00:01:23` (a citation shows the second the utterance starts)."""
    parts = value.split(".")[0].split(",")[0].split(":")
    parts = ["0"] * (3 - len(parts)) + parts
    return ":".join(f"{int(part):02d}" for part in parts)


def _decode(data: bytes) -> str | None:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
