"""The connector SDK's pure parts: event ids, request bodies, backoff bounds, the file checkpoint."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kgrag_connectors import Acl, DocumentChanged, DocumentDeleted, FileCheckpoint, RetryPolicy
from kgrag_core.acl import PUBLIC_ACL, acl_from_source
from kgrag_core.connectors import ConnectorFailure
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode
from kgrag_core.watching import FileState, fingerprint, unclaimed

HR_ACL = acl_from_source({"groups": ["hr"]})


def test_the_same_change_has_the_same_id_whatever_its_cursor() -> None:
    a = DocumentChanged("d1", "T", text="x", acl=Acl(groups=("hr",)), cursor="1")
    assert a.event_id == DocumentChanged("d1", "T", text="x", acl=Acl(groups=("hr",)), cursor="99").event_id
    assert a.event_id != DocumentChanged("d1", "T", text="y", acl=Acl(groups=("hr",))).event_id
    assert a.event_id != DocumentChanged("d1", "T", text="x").event_id  # another ACL is another change
    assert DocumentDeleted("d1").event_id != a.event_id


def test_request_bodies_follow_the_ingest_api() -> None:
    when = datetime(2026, 11, 30, 10, tzinfo=UTC)
    pdf = DocumentChanged("d", "T", body=b"\x00\xff", media_type="application/pdf", modified_at=when)
    assert pdf.request_body() == {
        "doc_id": "d", "source": "api", "title": "T", "body_b64": "AP8=", "media_type": "application/pdf",
        "modified_at": "2026-11-30T10:00:00+00:00",
    }  # fmt: skip
    assert DocumentChanged("d", "T", text="x", acl=Acl()).request_body()["acl"] == {"groups": [], "users": []}
    with pytest.raises(ValueError, match="exactly one"):
        DocumentChanged("d", "T")


def test_backoff_grows_within_its_cap_and_honours_retry_after() -> None:
    policy, rng = RetryPolicy(initial_backoff_s=1.0, max_backoff_s=8.0), random.Random(3)
    for attempt in range(1, 10):
        ceiling = min(8.0, 2 ** (attempt - 1))
        assert all(0 <= policy.delay(attempt, None, rng) <= ceiling for _ in range(50))
    assert policy.delay(1, 5.0, rng) >= 5.0 and policy.delay(1, 600.0, rng) == 8.0


def test_the_file_checkpoint_round_trips_and_refuses_a_foreign_file(tmp_path: Path) -> None:
    checkpoint = FileCheckpoint(tmp_path / "state" / "cp.json")
    assert checkpoint.load() is None
    checkpoint.save("42")
    checkpoint.save("43")
    assert checkpoint.load() == "43" and [p.name for p in (tmp_path / "state").iterdir()] == ["cp.json"]
    (tmp_path / "state" / "cp.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match="not a kgrag connector checkpoint"):
        checkpoint.load()


def test_a_watch_fingerprint_moves_with_content_and_readers_only() -> None:
    doc = SourceDocument("a.md", "folder", "file:///r/a.md", "a", b"text", PUBLIC_ACL)
    same = SourceDocument("a.md", "folder", "file:///r/a.md", "a", b"text", PUBLIC_ACL, warnings=("a warning",))
    assert fingerprint([doc]) == fingerprint([same])
    assert fingerprint([doc]) != fingerprint([SourceDocument("a.md", "folder", doc.uri, "a", b"text!", PUBLIC_ACL)])
    assert fingerprint([doc]) != fingerprint([SourceDocument("a.md", "folder", doc.uri, "a", b"text", HR_ACL)])
    failed = ConnectorFailure("file:///r/a.md", "a.md", ErrorCode.INVALID_UTF8, "bad")
    assert fingerprint([doc, failed]) == fingerprint([failed, doc]) != fingerprint([doc])
    states = {"b.md": FileState("b.md", ("b.md", "moved-id"), "f")}
    assert unclaimed(["a.md", "moved-id"], states) == ["a.md"]
