"""Slack export folders: one document per channel-day, messages with author and time, members as the ACL."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

from kgrag_adapters.connectors import iter_folder, iter_path
from kgrag_core.acl import PRIVATE_ACL
from kgrag_core.chunking import chunk_document
from kgrag_core.chunking.locators import CHAT_MEDIA_TYPE, Locator, annotate_spans, chunk_locator
from kgrag_core.connectors import ConnectorFailure
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode

SAMPLES = Path(__file__).resolve().parents[2] / "corpora" / "formats" / "samples"


def _docs(path: Path) -> dict[str, SourceDocument]:
    return {i.doc_id: i for i in iter_path(path) if isinstance(i, SourceDocument)}


def test_channel_days_with_authors_times_and_member_acl() -> None:
    docs = {k: v for k, v in _docs(SAMPLES).items() if k.startswith("slack/")}
    assert sorted(docs) == [
        "slack/leadership/2026-03-04",
        "slack/ops-warehouse/2026-03-02",
        "slack/ops-warehouse/2026-03-03",
    ]
    day = docs["slack/ops-warehouse/2026-03-02"]
    body = day.body.decode("utf-8")
    assert day.media_type == CHAT_MEDIA_TYPE and day.title == "#ops-warehouse 2026-03-02"
    assert day.acl.principals == ("role:admin", "user:alice.chen", "user:bob.okafor", "user:tomasz.kowal")
    assert docs["slack/leadership/2026-03-04"].acl.principals == ("role:admin", "user:alice.chen", "user:priya.raman")
    assert day.modified_at == datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
    assert "has joined" not in body  # join notices are not messages
    assert "[09:12 Tomasz Kowal] @Alice Chen forklift 3 is out of service" in body
    assert "OPS-21 (https://intranet.northwind.example/tickets/OPS-21)" in body
    spans = annotate_spans(day.media_type, body, chunk_document(body, title=day.title, max_tokens=12, overlap_tokens=2))
    places = {
        chunk_locator(day.media_type, s.breadcrumb, day.body[s.start_byte : s.end_byte].decode("utf-8")) for s in spans
    }
    assert Locator(speaker="Bob Okafor", time="09:30") in places and None not in places


def test_broken_day_fails_alone_and_memberless_channel_is_private(tmp_path: Path) -> None:
    export = tmp_path / "export"
    shutil.copytree(SAMPLES / "slack", export)
    (export / "ops-warehouse" / "2026-03-05.json").write_text("[{", encoding="utf-8")
    (export / "ops-warehouse" / "2026-03-06.json").write_text(
        '[{"user": "U02BOB", "text": "x", "ts": "soon"}]', "utf-8"
    )
    groups = json.loads((export / "groups.json").read_text("utf-8"))
    del groups[0]["members"]
    (export / "groups.json").write_text(json.dumps(groups), encoding="utf-8")
    items = list(iter_folder(tmp_path))
    docs = {i.doc_id: i for i in items if isinstance(i, SourceDocument)}
    assert "export/ops-warehouse/2026-03-02" in docs and "export/ops-warehouse/2026-03-03" in docs
    lead = docs["export/leadership/2026-03-04"]
    assert lead.acl == PRIVATE_ACL and "lists no members" in lead.warnings[0]
    codes = {i.doc_id: i.code for i in items if isinstance(i, ConnectorFailure)}
    assert codes == {
        "export/ops-warehouse/2026-03-05": ErrorCode.MALFORMED_JSON,
        "export/ops-warehouse/2026-03-06": ErrorCode.MALFORMED_EVENT,
    }
    (export / "users.json").write_text("not json", encoding="utf-8")
    (failure,) = list(iter_folder(export))
    assert isinstance(failure, ConnectorFailure) and failure.code is ErrorCode.MALFORMED_JSON
