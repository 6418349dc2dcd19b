"""GitHub and Jira ticket exports: one record per ticket, comments in order, mapped by tier 1 with strong ids."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import yaml

from kgrag_adapters.connectors import iter_folder
from kgrag_adapters.connectors.tickets import iter_csv_export, iter_tickets
from kgrag_core.connectors import ConnectorFailure
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode
from kgrag_core.extraction.ontology import parse_ontology
from kgrag_core.extraction.records_text import RECORD_MEDIA_TYPE
from kgrag_core.extraction.tier1 import load_mapping_rules, map_record

ROOT = Path(__file__).resolve().parents[2]
TICKETS = ROOT / "corpora" / "formats" / "samples" / "tickets"


def _docs(path: Path) -> dict[str, SourceDocument]:
    out = {}
    for item in iter_tickets(path):
        assert isinstance(item, SourceDocument), item
        out[item.doc_id] = item
    return out


def test_github_issue_fields_and_comments_in_order() -> None:
    doc = _docs(TICKETS / "github-issues.json")["ticket-github-northwind-carrier-portal-42"]
    body = doc.body.decode("utf-8")
    assert doc.media_type == RECORD_MEDIA_TYPE and doc.uri == "https://github.com/northwind/carrier-portal/issues/42"
    assert doc.modified_at == datetime(2026, 2, 12, 11, 40, tzinfo=UTC)
    assert doc.metadata["published_at"] == "2026-02-11T16:20:00+00:00"
    for line in ("status: open", "reporter: grace-oneill", "assignee: bob-okafor", "system: Carrier portal"):
        assert f"\n{line}\n" in body
    first = body.index("comment: [2026-02-12T09:05:00+00:00 bob-okafor] Reproduced")
    assert first < body.index("comment: [2026-02-12T11:40:00+00:00 grace-oneill] Workaround")


def test_jira_ticket_maps_to_ticket_person_and_system_with_strong_id() -> None:
    docs = _docs(TICKETS / "jira-export.json")
    doc = docs["ticket-jira-OPS-17"]
    assert doc.uri == "https://northwind.atlassian.example/browse/OPS-17"
    assert doc.title == "OPS-17: Packaging audit for Rotterdam damaged pallets"
    ontology = parse_ontology(yaml.safe_load((ROOT / "schemas/ontology/ontology.yaml").read_text("utf-8")))
    rules = load_mapping_rules(yaml.safe_load((ROOT / "schemas/mappings/records.yaml").read_text("utf-8")), ontology)
    entities, relations, claims = map_record(doc.body.decode("utf-8"), rules)
    ticket = entities[0]
    assert (ticket.name, ticket.type, ticket.strong_ids) == ("OPS-17", "Ticket", (("ticket_id", "OPS-17"),))
    assert {(e.name, e.type) for e in entities[1:]} == {
        ("Maria Santos", "Person"),
        ("Warehouse Management System", "System"),
    }
    assert {(r.subject, r.relation, r.object) for r in relations} == {
        ("Maria Santos", "REPORTED", "OPS-17"),
        ("OPS-17", "ABOUT", "Warehouse Management System"),
    }
    assert [(c.attribute, c.value) for c in claims] == [("status", "in progress")]


def test_bad_tickets_fail_alone_and_other_json_is_not_taken_for_tickets(tmp_path: Path) -> None:
    issues = json.loads((TICKETS / "github-issues.json").read_text("utf-8"))
    (tmp_path / "mixed.json").write_text(
        json.dumps([issues[0], {"number": 7}, {"number": 8, "title": "t", "createdAt": "soon"}, issues[0]]),
        encoding="utf-8",
    )
    (tmp_path / "other.json").write_text(json.dumps({"name": "package", "version": "1"}), encoding="utf-8")
    (tmp_path / "broken.json").write_text("[{", encoding="utf-8")
    items = list(iter_folder(tmp_path))
    good = [i for i in items if isinstance(i, SourceDocument)]
    assert [d.doc_id for d in good] == ["ticket-github-northwind-carrier-portal-42"]
    codes = sorted((f.uri.rsplit("/", 1)[-1], f.code) for f in items if isinstance(f, ConnectorFailure))
    assert codes == [
        ("broken.json", ErrorCode.MALFORMED_JSON),
        ("mixed.json#1", ErrorCode.MISSING_FIELD),
        ("mixed.json#2", ErrorCode.MALFORMED_EVENT),
        ("mixed.json#3", ErrorCode.MALFORMED_EVENT),  # the same ticket twice
        ("other.json", ErrorCode.UNSUPPORTED_FILE_TYPE),
    ]


def test_jira_csv_export_reads_repeated_columns_and_jira_dates(tmp_path: Path) -> None:
    [doc] = list(iter_csv_export(TICKETS / "jira-export.csv"))
    assert isinstance(doc, SourceDocument), doc
    body = doc.body.decode("utf-8")
    assert doc.doc_id == "ticket-jira-OPS-21" and doc.modified_at == datetime(2026, 3, 4, 15, 10, tzinfo=UTC)
    assert "\nlabels: leeds; forklift\n" in body and "\nsystem: Warehouse Management System; Fleet\n" in body
    assert body.index("comment: [2026-03-03T08:45:00+00:00 Bob Okafor] Liftec") < body.index("Hose replaced")
    # Any other CSV file is still records; a row with a date Jira never writes fails alone.
    (tmp_path / "sites.csv").write_text("code,name\nLDS,Leeds\n", encoding="utf-8")
    header = (TICKETS / "jira-export.csv").read_text("utf-8").splitlines()[0]
    (tmp_path / "jira.csv").write_text(
        header + "\nBroken,OPS-1,1,Task,Open,Low,,,someday,,,,,,,,,\nFine,OPS-2,2,Task,Open,Low,,,,,,,,,,,,\n",
        encoding="utf-8",
    )
    items = list(iter_folder(tmp_path))
    assert {i.doc_id for i in items if isinstance(i, SourceDocument)} == {"record-sites-LDS", "ticket-jira-OPS-2"}
    [bad] = [i for i in items if isinstance(i, ConnectorFailure)]
    assert bad.code is ErrorCode.MALFORMED_EVENT and bad.uri.endswith("jira.csv#L2") and "Created" in bad.message
