"""Front-matter mistakes that are valid YAML: warned about with the file's line numbers, never rejected."""

from __future__ import annotations

from pathlib import Path

from kgrag_adapters.connectors import iter_folder
from kgrag_core.acl import PUBLIC_ACL, acl_from_source
from kgrag_core.connectors import ConnectorFailure, ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode


def _load(tmp_path: Path, text: str) -> ConnectorItem:
    (tmp_path / "note.md").write_text(text, encoding="utf-8")
    [item] = list(iter_folder(tmp_path))
    return item


def test_misspelt_keys_are_warned_about_with_their_file_line(tmp_path: Path) -> None:
    doc = _load(
        tmp_path, "---\nid: notes-atlas\ntitel: Atlas notes\nacl: {group: [engineering]}\n---\n# Atlas\n\nBody.\n"
    )
    assert isinstance(doc, SourceDocument)
    assert doc.doc_id == "notes-atlas"  # what is valid still applies
    assert doc.title == "Atlas"  # `titel` is ignored, as before: the H1 wins
    assert doc.acl.malformed  # and the misspelt ACL still fails closed
    assert doc.warnings == (
        "line 3: front matter key 'titel' is not one kgrag reads, so it is ignored (did you mean 'title'?).",
        "line 4: ACL key 'group' is not `groups` or `users` (did you mean 'groups'?), so the document is readable "
        "by administrators only.",
    )


def test_block_style_acl_key_is_located_on_its_own_line(tmp_path: Path) -> None:
    doc = _load(tmp_path, "---\ntitle: T\nacl:\n  users: [maria.chen]\n  group: [engineering]\n---\nBody.\n")
    assert isinstance(doc, SourceDocument)
    assert [w.split(":")[0] for w in doc.warnings] == ["line 5"]
    assert "'group'" in doc.warnings[0]


def test_unclosed_front_matter_is_warned_about(tmp_path: Path) -> None:
    doc = _load(tmp_path, "---\ntitle: Atlas\ndate: 2024-01-01\n\n# Atlas\n\nBody.\n")
    assert isinstance(doc, SourceDocument)
    assert doc.title == "Atlas"  # indexed as before, the block as body text
    assert doc.warnings == (
        "line 1: front matter opened with `---` is never closed, so it is indexed as body text; "
        "add a `---` line after it.",
    )


def test_valid_front_matter_and_a_leading_rule_give_no_warning(tmp_path: Path) -> None:
    doc = _load(tmp_path, "---\nid: a\ntitle: A\ndate: 2024-01-01\nacl:\n  groups: [engineering]\n---\nBody.\n")
    assert isinstance(doc, SourceDocument) and doc.warnings == ()
    assert doc.acl == acl_from_source({"groups": ["engineering"]})
    rule = _load(tmp_path, "---\n\nA plain note that starts with a horizontal rule.\n")
    assert isinstance(rule, SourceDocument) and rule.warnings == () and rule.acl == PUBLIC_ACL


def test_yaml_error_names_the_line_of_the_file(tmp_path: Path) -> None:
    failure = _load(tmp_path, "---\ntitle: A\ndate: 2024-01-01\nbad: key: here\n---\nBody.\n")
    assert isinstance(failure, ConnectorFailure)
    assert failure.code is ErrorCode.MALFORMED_EVENT
    assert "(line 4 of the file)" in failure.message  # the `bad: key: here` line, counted from the file's top


def test_warnings_do_not_change_the_document_identity(tmp_path: Path) -> None:
    a = _load(tmp_path, "---\ntitle: A\ntags: [x]\n---\nBody.\n")
    assert isinstance(a, SourceDocument) and a.warnings
    assert a == SourceDocument(
        a.doc_id, a.source, a.uri, a.title, a.body, a.acl, a.modified_at, a.media_type, a.metadata
    )
