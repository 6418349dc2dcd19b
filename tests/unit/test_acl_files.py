"""Every file type can be restricted: sidecars (`NAME.acl.yaml`) and folder ACL files (`.kgrag-acl.yaml`),
inherited down the tree, nearest wins, front matter overrides; a malformed ACL file means private with a warning.
Real files in a temporary folder, read by the folder connector as `kgrag ingest` reads them."""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

import pytest

from kgrag_adapters.connectors import iter_folder, iter_path
from kgrag_core.acl import PRIVATE_ACL, PUBLIC_ACL, acl_from_source
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument

FINANCE = acl_from_source({"groups": ["finance"]})
HR = acl_from_source({"groups": ["hr"], "users": ["grace.oneill"]})


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def email_text(subject: str) -> str:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "ann@example.org", "bob@example.org", subject
    message.set_content("The budget moves to Q3.")
    return message.as_string()


def docs(items: list[ConnectorItem]) -> dict[str, SourceDocument]:
    out = {i.doc_id: i for i in items if isinstance(i, SourceDocument)}
    failures = [i for i in items if not isinstance(i, SourceDocument)]
    assert not failures, failures  # an ACL file is configuration: never a document, never a failure
    return out


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "share"
    write(root / "open.txt", "Everyone may read this.")
    write(root / "open.eml", email_text("Open news"))
    write(root / "finance" / ".kgrag-acl.yaml", "groups: [finance]\n")
    write(root / "finance" / "budget.txt", "Budget 2025.")
    write(root / "finance" / "mail.eml", email_text("Budget"))
    write(root / "finance" / "spend.csv", "name,record_type,amount\nCobalt Cloud,vendor,141000\nFerro,vendor,9000\n")
    write(root / "finance" / "deep" / "er" / "forecast.txt", "Forecast.")  # two levels below: inherited
    write(root / "finance" / "hr" / ".kgrag-acl.yaml", "groups: [hr]\nusers: [grace.oneill]\n")
    write(root / "finance" / "hr" / "salaries.txt", "Salaries.")  # nearest folder wins
    write(root / "finance" / "press" / ".kgrag-acl.yaml", "public: true\n")
    write(root / "finance" / "press" / "release.txt", "Press release.")  # public again under finance
    write(root / "finance" / "sidecar.txt", "One file for HR only.")
    write(root / "finance" / "sidecar.txt.acl.yaml", "groups: [hr]\nusers: [grace.oneill]\n")  # beats the folder
    write(root / "finance" / "note.md", "---\nacl:\n  groups: [hr]\n  users: [grace.oneill]\n---\nNote.\n")
    write(root / "finance" / "plain.md", "# Plain\n\nNo front matter: the folder's ACL.\n")
    write(root / "public.md.acl.yaml", "groups: [finance]\n")
    write(root / "public.md", "---\ntitle: Front matter wins\n---\nNo acl key here: the sidecar's.\n")
    return root


def test_every_file_type_takes_the_nearest_acl_file(tree: Path) -> None:
    found = docs(list(iter_folder(tree)))
    acl = {doc_id: d.acl for doc_id, d in found.items()}
    # positive controls: without an ACL file a file is public, as before
    assert acl["open.txt"] == acl["open.eml"] == PUBLIC_ACL
    assert acl["finance/budget.txt"] == acl["finance/mail.eml"] == FINANCE
    rows = [d for d in found.values() if "spend.csv" in d.uri]
    assert len(rows) == 2 and {r.acl for r in rows} == {FINANCE}  # every CSV row
    assert acl["finance/deep/er/forecast.txt"] == FINANCE
    assert acl["finance/hr/salaries.txt"] == HR
    assert acl["finance/press/release.txt"] == PUBLIC_ACL
    assert acl["finance/sidecar.txt"] == HR
    assert acl["finance/note.md"] == HR  # front matter overrides the folder
    assert acl["finance/plain.md"] == FINANCE  # no acl key: the folder's
    assert acl["public.md"] == FINANCE  # a sidecar works for Markdown too
    assert not any(d.warnings for d in found.values())
    assert not any(doc_id.endswith(".acl.yaml") for doc_id in found)


@pytest.mark.parametrize(
    "body",
    [
        "groups: finance\n",  # not a list
        "group: [finance]\n",  # a misspelt key
        "groups: []\n",  # nobody
        "- finance\n",  # not a mapping
        "groups: [finance\n",  # not YAML
        "public: yes please\n",  # not true
        "",  # empty
    ],
)
def test_a_malformed_acl_file_makes_what_it_covers_private_with_a_warning(tmp_path: Path, body: str) -> None:
    root = tmp_path / "share"
    write(root / "secret" / ".kgrag-acl.yaml", body)
    write(root / "secret" / "a.txt", "A.")
    write(root / "secret" / "b.eml", email_text("B"))
    write(root / "secret" / "sub" / "c.csv", "name,record_type\nFerro,vendor\n")
    write(root / "open.txt", "Open.")
    found = docs(list(iter_folder(root)))
    covered = [d for doc_id, d in found.items() if doc_id != "open.txt"]
    assert len(covered) == 3
    for d in covered:
        assert d.acl == PRIVATE_ACL, d.doc_id
        assert len(d.warnings) == 1 and ".kgrag-acl.yaml" in d.warnings[0] and "private" in d.warnings[0]
    assert found["open.txt"].acl == PUBLIC_ACL and found["open.txt"].warnings == ()  # positive control


def test_a_malformed_sidecar_makes_its_file_private_and_leaves_its_neighbours_alone(tmp_path: Path) -> None:
    write(tmp_path / "a.txt", "A.")
    write(tmp_path / "a.txt.acl.yaml", "users: [grace.oneill, 7]\n")
    write(tmp_path / "b.txt", "B.")
    found = docs(list(iter_folder(tmp_path)))
    assert found["a.txt"].acl == PRIVATE_ACL and "a.txt.acl.yaml" in found["a.txt"].warnings[0]
    assert found["b.txt"].acl == PUBLIC_ACL and found["b.txt"].warnings == ()


def test_an_acl_file_that_cannot_be_read_means_private(tmp_path: Path) -> None:
    (tmp_path / ".kgrag-acl.yaml").mkdir()  # there, but not a file anyone can read as one
    write(tmp_path / "a.txt", "A.")
    [doc] = list(iter_folder(tmp_path))
    assert isinstance(doc, SourceDocument) and doc.acl == PRIVATE_ACL
    assert "cannot be read" in doc.warnings[0]


def test_one_file_ingested_alone_keeps_its_sidecar_or_folder_acl(tree: Path) -> None:
    [budget] = list(iter_path(tree / "finance" / "budget.txt"))
    [sidecar] = list(iter_path(tree / "finance" / "sidecar.txt"))
    rows = list(iter_path(tree / "finance" / "spend.csv"))
    [opened] = list(iter_path(tree / "open.txt"))
    assert isinstance(budget, SourceDocument) and budget.acl == FINANCE
    assert isinstance(sidecar, SourceDocument) and sidecar.acl == HR
    assert len(rows) == 2 and all(isinstance(r, SourceDocument) and r.acl == FINANCE for r in rows)
    assert isinstance(opened, SourceDocument) and opened.acl == PUBLIC_ACL


def test_acl_files_above_the_ingested_root_do_not_count(tree: Path) -> None:
    """The root is what the operator named: a folder ACL file above it belongs to another ingest."""
    found = docs(list(iter_folder(tree / "finance" / "press")))
    assert found["release.txt"].acl == PUBLIC_ACL
    found = docs(list(iter_folder(tree / "finance" / "deep")))
    assert found["er/forecast.txt"].acl == PUBLIC_ACL
