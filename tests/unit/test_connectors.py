"""Folder and JSON Lines connectors: documents out, failures as values, never an exception per item."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path

import pytest

from kgrag_adapters.connectors import iter_folder, iter_jsonl, iter_path
from kgrag_core.acl import PRIVATE_ACL, PUBLIC_ACL, acl_from_source
from kgrag_core.chunking import chunk_document
from kgrag_core.connectors import ConnectorFailure, ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.validation import decode_body

ATLAS = """---
title: Project Atlas
date: 2024-03-05
acl:
  groups: [eng, ops]
  users: [ann]
---
# Atlas overview

Atlas links to [[Borealis]] and [[Cygnus|the Cygnus team]] and [[Borealis#Setup]].
"""


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_bytes(data.encode("utf-8"))
    else:
        path.write_bytes(data)
    return path


def multipart_email() -> bytes:
    msg = EmailMessage()
    msg["From"] = "José Álvarez <jose@example.com>"
    msg["To"] = "Ann <ann@example.com>, bob@example.com"
    msg["Cc"] = "Zoë <zoe@example.com>"
    msg["Date"] = "Tue, 05 Mar 2024 10:15:00 +0100"
    msg["Subject"] = "Réunion: budget 中文 ✓"
    msg["Message-ID"] = "<m1@example.com>"
    msg.set_content("Bonjour à tous,\n\nLe budget est validé.\n")
    msg.add_alternative("<html><body><p>Bonjour <b>HTML</b></p></body></html>", subtype="html")
    return msg.as_bytes()


def html_email() -> bytes:
    msg = EmailMessage()
    msg["From"] = "a@example.com"
    msg["To"] = "b@example.com"
    msg["Subject"] = "HTML only"
    msg.set_content(
        "<html><head><style>p{color:red}</style></head><body><h1>Title</h1><p>Fish &amp; chips<br>"
        "now</p><script>alert(1)</script></body></html>",
        subtype="html",
    )
    return msg.as_bytes()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    write(root / "notes" / "atlas.md", ATLAS)
    write(root / "notes" / "h1-title.markdown", "Intro line.\n\n# The Real Title\n\nBody.\n")
    write(root / "notes" / "untitled.md", "Just text, no heading.\n")
    write(root / "notes" / "custom.md", "---\nid: custom-1\nmodified: 2024-06-01T08:00:00+02:00\n---\nBody\n")
    write(root / "notes" / "bad-acl.md", "---\nacl: everyone\n---\nBody\n")
    write(root / "notes" / "empty-acl.md", "---\nacl:\n---\nBody\n")
    write(root / "notes" / "bad-yaml.md", "---\ntitle: [unclosed\n---\nBody\n")
    write(root / "notes" / "bad-date.md", "---\ndate: last tuesday\n---\nBody\n")
    write(root / "readme.txt", "Plain text readme.\n")
    write(root / "latin1.txt", "caf\xe9".encode("latin-1"))
    write(root / "latin1.md", b"---\nacl:\n  groups: [x]\n---\nna\xefve\n")
    write(root / "mail" / "budget.eml", multipart_email())
    write(root / "mail" / "html.eml", html_email())
    write(root / "mail" / "not-mail.eml", "just some words\nwithout headers\n")
    write(root / "image.png", b"\x89PNG\r\n")
    write(root / ".hidden" / "secret.md", "# Secret\n")
    write(root / "notes" / ".draft.md", "# Draft\n")
    return root


def by_id(items: list[ConnectorItem]) -> dict[str, ConnectorItem]:
    out: dict[str, ConnectorItem] = {}
    for item in items:
        key = item.doc_id if item.doc_id is not None else item.uri
        assert key not in out
        out[key] = item
    return out


def doc(items: dict[str, ConnectorItem], key: str) -> SourceDocument:
    item = items[key]
    assert isinstance(item, SourceDocument), item
    return item


def fail(items: dict[str, ConnectorItem], key: str) -> ConnectorFailure:
    item = items[key]
    assert isinstance(item, ConnectorFailure), item
    return item


def test_folder_order_and_hidden_files(corpus: Path) -> None:
    items = list(iter_folder(corpus))
    ids = [i.doc_id for i in items]
    assert ids == [
        "image.png",
        "latin1.md",
        "latin1.txt",
        "mail/budget.eml",
        "mail/html.eml",
        "mail/not-mail.eml",
        "notes/atlas.md",
        "notes/bad-acl.md",
        "notes/bad-date.md",
        "notes/bad-yaml.md",
        "custom-1",
        "notes/empty-acl.md",
        "notes/h1-title.markdown",
        "notes/untitled.md",
        "readme.txt",
    ]
    assert all(i.uri.startswith("file://") for i in items)
    assert list(iter_folder(corpus)) == items  # deterministic


def test_markdown_with_front_matter(corpus: Path) -> None:
    items = by_id(list(iter_folder(corpus, source="kb")))
    atlas = doc(items, "notes/atlas.md")
    assert atlas.title == "Project Atlas"
    assert atlas.source == "kb"
    assert atlas.body == ATLAS.encode()  # the file bytes exactly, front matter included
    assert atlas.acl == acl_from_source({"groups": ["eng", "ops"], "users": ["ann"]})
    assert atlas.modified_at == datetime(2024, 3, 5, tzinfo=UTC)
    assert atlas.metadata["wikilinks"] == "Borealis,Cygnus"
    assert atlas.metadata["published_at"] == "2024-03-05T00:00:00+00:00"
    assert atlas.media_type == "text/markdown"
    assert atlas.uri == (corpus / "notes" / "atlas.md").as_uri()
    # The chunker skips the same front matter the connector parsed.
    text = decode_body(atlas.body, max_bytes=10_000)
    spans = chunk_document(text, title=atlas.title)
    assert atlas.body[spans[0].start_byte : spans[0].end_byte].decode().startswith("# Atlas overview")


def test_markdown_titles_ids_and_acls(corpus: Path) -> None:
    items = by_id(list(iter_folder(corpus)))
    assert doc(items, "notes/h1-title.markdown").title == "The Real Title"
    assert doc(items, "notes/untitled.md").title == "untitled"
    assert doc(items, "notes/untitled.md").acl == PUBLIC_ACL  # no front matter: public
    custom = doc(items, "custom-1")
    assert custom.uri.endswith("/notes/custom.md")
    assert custom.modified_at == datetime(2024, 6, 1, 6, 0, tzinfo=UTC)
    assert doc(items, "notes/bad-acl.md").acl == PRIVATE_ACL  # malformed acl: private, not a failure
    assert doc(items, "notes/empty-acl.md").acl == PRIVATE_ACL


def test_markdown_front_matter_errors_are_failures(corpus: Path) -> None:
    items = by_id(list(iter_folder(corpus)))
    assert fail(items, "notes/bad-yaml.md").code is ErrorCode.MALFORMED_EVENT
    bad_date = fail(items, "notes/bad-date.md")
    assert bad_date.code is ErrorCode.MALFORMED_EVENT
    assert "last tuesday" in bad_date.message


def test_text_and_undecodable_files(corpus: Path) -> None:
    items = by_id(list(iter_folder(corpus)))
    readme = doc(items, "readme.txt")
    assert (readme.title, readme.body, readme.media_type) == ("readme", b"Plain text readme.\n", "text/plain")
    for key in ("latin1.txt", "latin1.md"):
        raw = doc(items, key)  # yielded with its raw bytes: the core rejects it
        with pytest.raises(KgragError) as excinfo:
            decode_body(raw.body, max_bytes=1000)
        assert excinfo.value.code is ErrorCode.INVALID_UTF8
    assert doc(items, "latin1.md").acl == PRIVATE_ACL  # its ACL cannot be read: never public


def test_email_rendering(corpus: Path) -> None:
    items = by_id(list(iter_folder(corpus)))
    mail = doc(items, "mail/budget.eml")
    assert mail.title == "Réunion: budget 中文 ✓"
    assert mail.body.decode() == (
        "From: José Álvarez <jose@example.com>\n"
        "To: Ann <ann@example.com>, bob@example.com\n"
        "Cc: Zoë <zoe@example.com>\n"
        "Date: Tue, 05 Mar 2024 10:15:00 +0100\n"
        "Subject: Réunion: budget 中文 ✓\n"
        "\n"
        "Bonjour à tous,\n\nLe budget est validé.\n"
    )
    assert mail.modified_at == datetime(2024, 3, 5, 9, 15, tzinfo=UTC)
    assert mail.metadata["sender"] == "José Álvarez <jose@example.com>"
    assert mail.metadata["recipients"] == "Ann <ann@example.com>, bob@example.com, Zoë <zoe@example.com>"
    assert mail.acl == PUBLIC_ACL

    html = doc(items, "mail/html.eml")
    body = html.body.decode()
    assert "Cc:" not in body
    assert body.endswith("\n\nTitle\n\nFish & chips\nnow\n")
    assert "alert" not in body and "color" not in body
    assert html.modified_at is None

    assert fail(items, "mail/not-mail.eml").code is ErrorCode.MALFORMED_EMAIL


def test_unsupported_file(corpus: Path) -> None:
    failure = fail(by_id(list(iter_folder(corpus))), "image.png")
    assert failure.code is ErrorCode.UNSUPPORTED_FILE_TYPE
    assert ".png" in failure.message


def test_missing_folder(tmp_path: Path) -> None:
    (item,) = list(iter_folder(tmp_path / "nope"))
    assert isinstance(item, ConnectorFailure) and item.code is ErrorCode.DOCUMENT_NOT_FOUND


# --- JSON Lines ----------------------------------------------------------------------------------


def test_jsonl(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "a", "title": "Alpha", "text": "# Alpha\n\nBody é", "published_at": "2024-01-02"}),
        "",
        json.dumps(
            {
                "id": "b",
                "title": "Beta",
                "text": "x",
                "source": "wiki",
                "uri": "https://w/b",
                "published_at": "2024-01-02T03:04:05",
                "acl": {"groups": ["g"]},
            }
        ),
        "{not json",
        "[1, 2]",
        json.dumps({"title": "No id", "text": "x"}),
        json.dumps({"id": 7, "title": "Numeric id", "text": "x"}),
        json.dumps({"id": "c", "text": "x"}),
        json.dumps({"id": "d", "title": "T", "text": None}),
        json.dumps({"id": "e", "title": "T", "text": "x", "acl": {"groups": "g"}}),
        json.dumps({"id": "f", "title": "T", "text": "x", "published_at": "soon"}),
        '{"id": "g", "title": "T", "text": "bad \\ud800 surrogate"}',
        json.dumps({"id": "h", "title": "T", "text": "x", "acl": None}),
        json.dumps({"id": "i\u0000", "title": "T", "text": "x"}),
    ]
    path = write(tmp_path / "docs.jsonl", "\n".join(lines) + "\n\n")
    write(tmp_path / "docs.jsonl", path.read_bytes() + b'{"id": "j", "title": "\xff"}\n')
    items = list(iter_jsonl(path))
    assert len(items) == 14

    a, b = items[0], items[1]
    assert isinstance(a, SourceDocument) and isinstance(b, SourceDocument)
    assert (a.doc_id, a.title, a.source, a.uri) == ("a", "Alpha", "jsonl", "jsonl://docs.jsonl/a")
    assert a.body == "# Alpha\n\nBody é".encode()
    assert a.acl == PUBLIC_ACL
    assert a.modified_at == datetime(2024, 1, 2, tzinfo=UTC)
    assert a.media_type == "text/markdown"
    assert (b.source, b.uri, b.modified_at) == ("wiki", "https://w/b", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert b.acl == acl_from_source({"groups": ["g"]})

    failures = [i for i in items if isinstance(i, ConnectorFailure)]
    assert [(f.uri.rsplit("#", 1)[1], f.code, f.doc_id) for f in failures] == [
        ("L4", ErrorCode.MALFORMED_JSON, None),
        ("L5", ErrorCode.MALFORMED_JSON, None),
        ("L6", ErrorCode.MISSING_FIELD, None),
        ("L7", ErrorCode.MISSING_FIELD, None),
        ("L8", ErrorCode.MISSING_FIELD, "c"),
        ("L9", ErrorCode.MISSING_FIELD, "d"),
        ("L11", ErrorCode.MALFORMED_EVENT, "f"),
        ("L12", ErrorCode.INVALID_UTF8, "g"),
        ("L14", ErrorCode.MALFORMED_EVENT, "i\u0000"),
        ("L16", ErrorCode.INVALID_UTF8, None),
    ]
    assert all(f.uri.startswith(f"{path}#L") for f in failures)
    private = {i.doc_id: i.acl for i in items if isinstance(i, SourceDocument) and i.doc_id in {"e", "h"}}
    assert private == {"e": PRIVATE_ACL, "h": PRIVATE_ACL}


def test_jsonl_missing_file(tmp_path: Path) -> None:
    (item,) = list(iter_jsonl(tmp_path / "none.jsonl"))
    assert isinstance(item, ConnectorFailure) and item.code is ErrorCode.DOCUMENT_NOT_FOUND


# --- dispatch ------------------------------------------------------------------------------------


def test_iter_path_dispatch(corpus: Path, tmp_path: Path) -> None:
    assert [i.doc_id for i in iter_path(corpus)] == [i.doc_id for i in iter_folder(corpus)]
    jsonl = write(tmp_path / "one.jsonl", json.dumps({"id": "z", "title": "Z", "text": "zz"}) + "\n")
    assert [i.doc_id for i in iter_path(jsonl)] == ["z"]
    (single,) = list(iter_path(corpus / "notes" / "atlas.md"))
    assert isinstance(single, SourceDocument) and single.doc_id == "atlas.md" and single.title == "Project Atlas"
    (png,) = list(iter_path(corpus / "image.png"))
    assert isinstance(png, ConnectorFailure) and png.code is ErrorCode.UNSUPPORTED_FILE_TYPE
    (missing,) = list(iter_path(tmp_path / "missing.md"))
    assert isinstance(missing, ConnectorFailure) and missing.code is ErrorCode.DOCUMENT_NOT_FOUND
