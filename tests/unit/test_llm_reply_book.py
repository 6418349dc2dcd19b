"""The reply book: tier-3 replies written ahead of time per document, served by quote to whichever chunks
a request carries (a stand-in for a model in the eval; no model is called)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgrag_adapters.llm.reply_book import ReplyBookChatModel
from kgrag_core.documents import Chunk
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.ontology import parse_ontology
from kgrag_core.extraction.tier3 import LlmExtractor, build_messages, parse_reply, rendered_chunks
from kgrag_core.ports import ChatMessage
from kgrag_runtime.extraction import DEFAULT_ONTOLOGY, read_yaml

ONTOLOGY = parse_ontology(read_yaml(DEFAULT_ONTOLOGY))
LEADS = {
    "subject": "Zoë Müller", "subject_type": "Person", "relation": "LEADS", "object": "Warehouse Systems",
    "object_type": "Team", "quote": "Zoë Müller leads the Warehouse Systems team", "polarity": "positive",
    "modality": "fact", "valid_from": None, "valid_to": None, "confidence": 0.9,
}  # fmt: skip
CAPACITY = {
    "entity": "LEJ-2", "entity_type": "Site", "attribute": "capacity_pallets", "value": "24,500",
    "quote": "LEJ-2 now holds 24,500 pallets", "polarity": "positive", "modality": "fact",
    "valid_from": "2024-06-14", "valid_to": None, "confidence": 0.9,
}  # fmt: skip


def _chunk(chunk_id: str, text: str, breadcrumb: tuple[str, ...] = ()) -> Chunk:
    return Chunk(chunk_id, "doc", 0, breadcrumb, 0, len(text), text, 10, "h-" + chunk_id, "acl")


def _book(tmp_path: Path, *lines: object) -> Path:
    path = tmp_path / "book.jsonl"
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n", encoding="utf-8")
    return path


def test_rendered_chunks_read_back_what_build_messages_wrote() -> None:
    batch = [_chunk("c1", 'Line one\n"quoted"', ("LEJ-2 profile", "Capacity")), _chunk("c2", "Two")]
    user = build_messages(batch, ONTOLOGY)[-1].content
    assert rendered_chunks(user) == [("c1", 'Line one\n"quoted"'), ("c2", "Two")]


def test_items_are_filed_under_the_chunks_holding_their_quotes(tmp_path: Path) -> None:
    book = _book(tmp_path, {"doc_id": "d", "reply": {"entities": [], "relations": [LEADS], "claims": [CAPACITY]}})
    model = ReplyBookChatModel(book)
    one = _chunk("c1", "Since 2022, Zoë Müller leads the Warehouse Systems team in Leipzig.")
    two = _chunk("c2", "After the mezzanine opened, LEJ-2 now holds 24,500 pallets.")
    reply = model.complete(build_messages([one, two], ONTOLOGY))
    parsed = parse_reply(reply, [one, two]).by_chunk
    assert [r.object for r in parsed["c1"][1]] == ["Warehouse Systems"] and parsed["c1"][2] == []
    assert [c.value for c in parsed["c2"][2]] == ["24,500"] and parsed["c2"][1] == []
    # Through tier 3 itself, as the pipeline calls it.
    result = LlmExtractor(model, ONTOLOGY).extract([one])
    assert result.items["c1"][1][0].relation == "LEADS"


def test_the_model_id_names_the_book_and_changes_with_its_content(tmp_path: Path) -> None:
    first = ReplyBookChatModel(_book(tmp_path, {"doc_id": "d", "reply": {"relations": [LEADS]}})).model_id
    second = ReplyBookChatModel(_book(tmp_path, {"doc_id": "d", "reply": {"claims": [CAPACITY]}})).model_id
    assert first.startswith("reply-book:") and second.startswith("reply-book:") and first != second


def test_it_answers_extraction_requests_only(tmp_path: Path) -> None:
    model = ReplyBookChatModel(_book(tmp_path, {"doc_id": "d", "reply": {"relations": [LEADS]}}))
    with pytest.raises(KgragError) as err:
        model.complete([ChatMessage("user", "Who leads Warehouse Systems?")])
    assert err.value.code is ErrorCode.LLM_UNAVAILABLE


@pytest.mark.parametrize("line", ['{"doc_id": "d"}', "not json", '{"doc_id": "d", "reply": {"claims": [{}]}}'])
def test_a_damaged_book_is_refused_with_its_line(tmp_path: Path, line: str) -> None:
    path = tmp_path / "book.jsonl"
    path.write_text('{"doc_id": "ok", "reply": {}}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(KgragError) as err:
        ReplyBookChatModel(path)
    assert err.value.code is ErrorCode.CONFIGURATION_INVALID and "line 2" in str(err.value)


def test_a_missing_book_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(KgragError) as err:
        ReplyBookChatModel(tmp_path / "absent.jsonl")
    assert err.value.code is ErrorCode.CONFIGURATION_INVALID


def test_the_bundled_corpus_book_parses_and_every_line_names_a_document() -> None:
    root = Path(__file__).resolve().parents[2] / "corpora" / "northwind"
    docs = {json.loads(line)["id"] for line in (root / "documents.jsonl").read_text(encoding="utf-8").splitlines()}
    lines = (root / "extraction" / "corpus_replies.jsonl").read_text(encoding="utf-8").splitlines()
    assert {json.loads(line)["doc_id"] for line in lines} == docs
    ReplyBookChatModel(root / "extraction" / "corpus_replies.jsonl")
