"""The BM25 fast-fields benchmark compares the two schemas on the same chunks, and both answer alike."""

from __future__ import annotations

import json
from pathlib import Path

from kgrag_adapters.tantivy.keyword_index import TantivyKeywordIndex
from kgrag_core.search import KeywordDoc
from kgrag_runtime.benchmarks.bm25_fast_fields import _schema_with_fast_fields, markdown, run


def _fast(path: Path) -> dict[str, bool]:
    fields = json.loads((path / "meta.json").read_text(encoding="utf-8"))["schema"]
    return {f["name"]: bool(f["options"].get("fast")) for f in fields if f["name"] in ("chunk_id", "acl_class_id")}


def test_only_the_after_index_has_the_fast_fields(tmp_path: Path) -> None:
    before = TantivyKeywordIndex(tmp_path / "before")
    with _schema_with_fast_fields():
        after = TantivyKeywordIndex(tmp_path / "after")
    for index in (before, after):
        index.upsert([KeywordDoc("c1", "d1", "acl_public", "t", "b", "invoice", "s")])
    assert _fast(tmp_path / "before") == {"chunk_id": False, "acl_class_id": False}
    assert _fast(tmp_path / "after") == {"chunk_id": True, "acl_class_id": True}
    later = TantivyKeywordIndex(tmp_path / "later")  # opened after the block: the shipped schema again
    assert _fast(tmp_path / "later") == {"chunk_id": False, "acl_class_id": False}
    later.close()
    before.close()
    after.close()


def test_a_small_run_answers_alike_on_both_schemas() -> None:
    result = run(400, 20)
    rows = result["rows"]
    assert isinstance(rows, dict)
    assert rows["before"]["chunks"] == rows["after"]["chunks"] == 400
    queries = result["queries"]
    assert isinstance(queries, int) and queries > 0
    assert result["same_top10"] == queries
    assert "chunk_id, acl_class_id fast" in markdown(result)
