"""Structured records through the connectors: JSONL `record` objects and CSV rows become record documents."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from kgrag_adapters.connectors import iter_csv, iter_folder, iter_jsonl, iter_path
from kgrag_core.acl import PUBLIC_ACL, acl_from_source
from kgrag_core.connectors import ConnectorFailure, ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode
from kgrag_core.extraction.records_text import RECORD_MEDIA_TYPE, parse_record

ROOT = Path(__file__).resolve().parents[2]


def docs(items: list[ConnectorItem]) -> list[SourceDocument]:
    return [i for i in items if isinstance(i, SourceDocument)]


def failures(items: list[ConnectorItem]) -> list[ConnectorFailure]:
    return [i for i in items if isinstance(i, ConnectorFailure)]


# --- JSONL -----------------------------------------------------------------------------------------


def test_jsonl_record_round_trip(tmp_path: Path) -> None:
    fields = {"name": "Priya Raman", "team": "Routing", "owns": ["Atlas", "Beacon"], "headcount": 12, "gone": None}
    lines = [
        {
            "id": "record-person-priya",
            "title": "Priya",
            "record": {"type": "person", "fields": fields},
            "published_at": "2025-06-03",
            "acl": {"groups": ["hr"]},
        },
        {"id": "plain", "title": "Plain", "text": "# Plain\n\nText."},
        {"id": "both", "title": "T", "text": "x", "record": {"type": "person", "fields": {"name": "x"}}},
        {"id": "no-type", "title": "T", "record": {"fields": {"name": "x"}}},
        {"id": "no-fields", "title": "T", "record": {"type": "person", "fields": {}}},
        {"id": "not-object", "title": "T", "record": ["person"]},
        {"id": "nested", "title": "T", "record": {"type": "person", "fields": {"name": {"first": "x"}}}},
        {"id": "bool", "title": "T", "record": {"type": "person", "fields": {"active": True}}},
        {"id": "bad-type", "title": "T", "record": {"type": "***", "fields": {"name": "x"}}},
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    items = list(iter_jsonl(path))
    assert len(items) == len(lines)

    record, plain = items[0], items[1]
    assert isinstance(record, SourceDocument) and isinstance(plain, SourceDocument)
    assert record.media_type == RECORD_MEDIA_TYPE and plain.media_type == "text/markdown"
    assert record.body.decode() == (
        "record_type: person\nname: Priya Raman\nteam: Routing\nowns: Atlas; Beacon\nheadcount: 12\n"
    )
    assert parse_record(record.body.decode()) == (
        "person",
        {"name": ["Priya Raman"], "team": ["Routing"], "owns": ["Atlas; Beacon"], "headcount": ["12"]},
    )
    assert (record.doc_id, record.title, record.acl) == (
        "record-person-priya",
        "Priya",
        acl_from_source({"groups": ["hr"]}),
    )
    assert record.modified_at == datetime(2025, 6, 3, tzinfo=UTC)
    assert record.metadata["published_at"] == "2025-06-03T00:00:00+00:00"

    assert [(f.uri.rsplit("#", 1)[1], f.code, f.doc_id) for f in failures(items)] == [
        ("L3", ErrorCode.MALFORMED_EVENT, "both"),
        ("L4", ErrorCode.MISSING_FIELD, "no-type"),
        ("L5", ErrorCode.MISSING_FIELD, "no-fields"),
        ("L6", ErrorCode.MALFORMED_EVENT, "not-object"),
        ("L7", ErrorCode.MALFORMED_EVENT, "nested"),
        ("L8", ErrorCode.MALFORMED_EVENT, "bool"),
        ("L9", ErrorCode.MALFORMED_EVENT, "bad-type"),
    ]


def test_bundled_records_file() -> None:
    items = list(iter_jsonl(ROOT / "corpora" / "northwind" / "records.jsonl"))
    assert failures(items) == []
    records = docs(items)
    assert 40 <= len(records) <= 60
    assert len({d.doc_id for d in records}) == len(records)
    for doc in records:
        parsed = parse_record(doc.body.decode("utf-8"))
        assert parsed is not None and doc.doc_id.startswith(f"record-{parsed[0]}-")
        assert doc.acl == PUBLIC_ACL and doc.modified_at == datetime(2025, 6, 3, tzinfo=UTC)
    people = {
        parse_record(d.body.decode())[1]["user_id"][0]: parse_record(d.body.decode())[1]  # type: ignore[index]
        for d in records
        if d.doc_id.startswith("record-person-")
    }
    for user_id, fields in people.items():
        assert fields["email"] == [f"{user_id}@northwind.example"]


# --- CSV -------------------------------------------------------------------------------------------


CSV_TEXT = (
    "\ufeffUser ID,Name,Team,Owns,published_at\n"
    "priya.raman,Priya Raman,Routing,,2025-06-03\n"
    'kenji.watanabe,"Watanabe, Kenji",Routing,Atlas; Beacon,\n'
    ",No Key,Routing,,\n"
    "too,many,cells,here,2025-01-01,extra\n"
    "bad.date,Bad Date,Routing,,yesterday\n"
    ",,,,\n"
    "priya.raman,Priya Again,Routing,,\n"
    "oliver.grant,Oliver Grant,Operations,,\n"
)


def test_csv_rows_become_records(tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_text(CSV_TEXT, encoding="utf-8")
    items = list(iter_csv(path))
    rows = docs(items)
    assert [d.doc_id for d in rows] == [
        "record-people-priya.raman",
        "record-people-kenji.watanabe",
        "record-people-oliver.grant",
    ]
    priya, kenji = rows[0], rows[1]
    assert priya.body.decode() == "record_type: people\nuser_id: priya.raman\nname: Priya Raman\nteam: Routing\n"
    assert (priya.title, priya.source, priya.media_type) == ("Priya Raman", "csv", RECORD_MEDIA_TYPE)
    assert priya.modified_at == datetime(2025, 6, 3, tzinfo=UTC) and kenji.modified_at is None
    assert priya.uri == f"{path.as_uri()}#priya.raman"
    assert parse_record(kenji.body.decode()) == (
        "people",
        {"user_id": ["kenji.watanabe"], "name": ["Watanabe, Kenji"], "team": ["Routing"], "owns": ["Atlas; Beacon"]},
    )
    # Bad rows fail alone, with the line they are on; the rows after them still come.
    assert [(f.uri.rsplit("#", 1)[1], f.code) for f in failures(items)] == [
        ("L4", ErrorCode.MISSING_FIELD),
        ("L5", ErrorCode.MALFORMED_EVENT),
        ("L6", ErrorCode.MALFORMED_EVENT),
        ("L8", ErrorCode.MALFORMED_EVENT),
    ]
    assert all(f.uri.startswith(path.as_uri()) for f in failures(items))


def test_csv_record_type_and_id_columns(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_text(
        "name,record_type,id,title\nAtlas,system,sys-1,The Atlas engine\nKestrel Pharma,customer,NW-C-1001,\n",
        encoding="utf-8",
    )
    atlas, kestrel = docs(list(iter_csv(path)))
    assert (atlas.doc_id, atlas.title) == ("record-system-sys-1", "The Atlas engine")
    assert atlas.body.decode() == "record_type: system\nname: Atlas\nid: sys-1\n"
    assert (kestrel.doc_id, kestrel.title) == ("record-customer-NW-C-1001", "Kestrel Pharma")


def test_csv_file_level_failures(tmp_path: Path) -> None:
    cases = {
        "latin1.csv": ("name\ncaf\xe9\n".encode("latin-1"), ErrorCode.INVALID_UTF8),
        "empty.csv": (b"", ErrorCode.MISSING_FIELD),
        "blank-header.csv": (b"name,,team\na,b,c\n", ErrorCode.MISSING_FIELD),
        "repeat.csv": (b"name,Name\na,b\n", ErrorCode.MALFORMED_EVENT),
    }
    for name, (data, code) in cases.items():
        (tmp_path / name).write_bytes(data)
        (item,) = list(iter_csv(tmp_path / name))
        assert isinstance(item, ConnectorFailure) and item.code is code, name
    (missing,) = list(iter_csv(tmp_path / "missing.csv"))
    assert isinstance(missing, ConnectorFailure) and missing.code is ErrorCode.DOCUMENT_NOT_FOUND


def test_folder_and_path_dispatch_csv(tmp_path: Path) -> None:
    root = tmp_path / "export"
    root.mkdir()
    (root / "a-notes.md").write_text("# Notes\n\nText.\n", encoding="utf-8")
    (root / "sites.csv").write_text("code,city\nLEJ-2,Leipzig\nCHI-3,Joliet\n", encoding="utf-8")
    ids = [i.doc_id for i in iter_folder(root, source="kb")]
    assert ids == ["a-notes.md", "record-sites-LEJ-2", "record-sites-CHI-3"]
    assert {d.source for d in docs(list(iter_folder(root, source="kb")))} == {"kb"}
    assert [i.doc_id for i in iter_path(root / "sites.csv")] == ["record-sites-LEJ-2", "record-sites-CHI-3"]
