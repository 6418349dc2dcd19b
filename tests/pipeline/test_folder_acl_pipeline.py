"""A folder ingested end to end with ACL files: what a folder or sidecar restricts is searchable only by its
readers (embedded runtime, real PostgreSQL, Qdrant engine and tantivy), every file type alike."""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

from kgrag_adapters.connectors import iter_path
from kgrag_core.acl import Caller
from kgrag_runtime.app import KgragApp

OUTSIDER = Caller(user="sam.ortiz", groups=("engineering",))
FINANCE = Caller(user="ida.berg", groups=("finance",))
ADMIN = Caller(admin=True)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_restricted_eml_txt_and_csv_are_found_only_by_their_readers(kg: KgragApp, tmp_path: Path) -> None:
    root = tmp_path / "share"
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "cfo@example.org", "board@example.org", "Quillmark acquisition"
    mail.set_content("We offer 40 million for Quillmark.")
    _write(root / "finance" / ".kgrag-acl.yaml", "groups: [finance]\n")
    _write(root / "finance" / "offer.eml", mail.as_string())
    _write(root / "finance" / "notes.txt", "Quillmark due diligence notes.")
    _write(root / "finance" / "targets.csv", "name,record_type,valuation\nQuillmark,company,40000000\n")
    _write(root / "lobby.txt", "The lobby coffee machine is fixed.")
    _write(root / "memo.txt", "Quillmark memo for finance.")
    _write(root / "memo.txt.acl.yaml", "groups: [finance\n")  # malformed: private, with a warning
    items = list(iter_path(root))
    outcomes = kg.ingest(items)
    assert all(o.error_code is None for o in outcomes), [o.as_dict() for o in outcomes]
    [warning] = [w for i in items for w in getattr(i, "warnings", ())]
    assert str(root / "memo.txt.acl.yaml") in warning and "private" in warning

    def found(caller: Caller, query: str) -> set[str]:
        return {h.doc_id for h in kg.search(query, caller, graph=False).hits}

    restricted = {"finance/offer.eml", "finance/notes.txt", "record-company-Quillmark"}
    assert found(OUTSIDER, "Quillmark") & (restricted | {"memo.txt"}) == set()
    assert restricted <= found(FINANCE, "Quillmark")  # positive control: the readers find all three
    assert "memo.txt" not in found(FINANCE, "Quillmark")  # a malformed ACL file: admins only
    assert "memo.txt" in found(ADMIN, "Quillmark")
    assert "lobby.txt" in found(OUTSIDER, "lobby coffee machine")  # no ACL file: public, as before


def test_changing_an_acl_file_changes_the_acl_at_the_next_ingest(kg: KgragApp, tmp_path: Path) -> None:
    root = tmp_path / "share"
    _write(root / "plans" / "roadmap.txt", "The Quillmark roadmap for next year.")
    kg.ingest(list(iter_path(root)))
    assert "plans/roadmap.txt" in {h.doc_id for h in kg.search("Quillmark roadmap", OUTSIDER, graph=False).hits}
    _write(root / "plans" / ".kgrag-acl.yaml", "groups: [finance]\n")
    [outcome] = kg.ingest(list(iter_path(root)))
    assert outcome.status.value == "UPDATED", outcome.as_dict()
    assert "plans/roadmap.txt" not in {h.doc_id for h in kg.search("Quillmark roadmap", OUTSIDER, graph=False).hits}
    assert "plans/roadmap.txt" in {h.doc_id for h in kg.search("Quillmark roadmap", FINANCE, graph=False).hits}
