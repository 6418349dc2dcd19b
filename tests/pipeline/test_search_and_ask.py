"""Search and answers on the embedded runtime: ACL inside the search, exact citations, abstention."""

from __future__ import annotations

import json

import pytest

from kgrag_core.acl import Caller
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.retrieval.hybrid import SearchMode
from kgrag_runtime.app import KgragApp
from kgrag_testing.scripted_llm import ScriptedChatModel
from tests.pipeline.corpus import corpus

QUERIES = [
    "compensation band senior engineer",
    "142,000 euros",
    "Harbor outage certificate",
    "Atlas owner",
    "warehouse management Rotterdam",
    "confidential figure",
    "routes per night",
    "salary",
]


def test_a_caller_never_sees_a_chunk_it_cannot_read(kg: KgragApp) -> None:
    kg.ingest(corpus())
    anonymous, engineer, hr = Caller(), Caller(user="sam", groups=("engineering",)), Caller(groups=("hr",))
    for mode in SearchMode:
        for query in QUERIES:
            assert {h.doc_id for h in kg.search(query, anonymous, mode=mode).hits} <= {"atlas"}
            assert {h.doc_id for h in kg.search(query, engineer, mode=mode).hits} <= {"atlas", "harbor"}
            assert "harbor" not in {h.doc_id for h in kg.search(query, hr, mode=mode).hits}
    assert "salary" in {h.doc_id for h in kg.search("142,000 euros", hr).hits}
    answer = kg.ask("What does the senior engineer band top out at?", engineer)
    assert "142,000" not in json.dumps(answer)


def test_filtered_search_fills_top_k_with_readable_chunks(kg: KgragApp) -> None:
    kg.ingest(corpus())
    engineer = Caller(groups=("engineering",))
    hits = kg.search("confidential compensation band", engineer, top_k=5).hits
    # The hr-only chunk would rank first; the filter runs inside both searches, so the readable
    # chunks still fill the result instead of leaving a hole.
    assert hits and all(h.doc_id in {"atlas", "harbor"} for h in hits)


def test_search_hits_carry_spans_ranks_and_scores(kg: KgragApp) -> None:
    kg.ingest(corpus())
    response = kg.search("Harbor certificate expired", Caller(admin=True), top_k=3)
    top = response.hits[0]
    assert top.doc_id == "harbor"
    assert set(top.ranks) == {"dense", "bm25"}
    assert top.score == pytest.approx(sum(1 / (60 + r) for r in top.ranks.values()))
    body = next(d.body for d in corpus() if d.doc_id == "harbor")
    assert body[top.start_byte : top.end_byte].decode() == top.text
    assert response.limits["top_k"] == 3
    assert [h.chunk_id for h in kg.search("Harbor certificate expired", Caller(admin=True), top_k=3).hits] == [
        h.chunk_id for h in response.hits
    ]


def test_bad_queries_get_stable_codes(kg: KgragApp) -> None:
    with pytest.raises(KgragError) as empty:
        kg.search("   ", Caller())
    assert empty.value.code is ErrorCode.INVALID_QUERY
    with pytest.raises(KgragError) as big:
        kg.search("atlas", Caller(), top_k=1000)
    assert big.value.code is ErrorCode.LIMIT_EXCEEDED


def test_extractive_answer_cites_exact_document_bytes(kg: KgragApp) -> None:
    kg.ingest(corpus())
    answer = kg.ask("Who is the on-call owner of Atlas?", Caller())
    assert answer["answered"] is True and answer["mode"] == "extractive"
    assert "Priya Raman" in str(answer["answer"])
    bodies = {d.doc_id: d.body for d in corpus()}
    for citation in answer["citations"]:  # type: ignore[union-attr]
        start, end = citation["span"]
        assert bodies[citation["doc_id"]][start:end].decode() == citation["quote"]
    assert kg.ask("Who is the on-call owner of Atlas?", Caller())["cached"] is True


def test_abstains_when_the_documents_do_not_answer(kg: KgragApp) -> None:
    kg.ingest(corpus())
    answer = kg.ask("What is the parking policy at the Lisbon office?", Caller(admin=True))
    assert answer["answered"] is False
    assert answer["citations"] == []
    assert "don't answer" in str(answer["notice"])


def test_llm_answer_with_verified_quotes(open_kg) -> None:  # type: ignore[no-untyped-def]
    reply = {
        "insufficient_evidence": False,
        "sentences": [
            {
                "text": "Priya Raman is the on-call owner.",
                "evidence": [{"source": 1, "quote": "The on-call owner of Atlas is Priya Raman since March 2024."}],
            }
        ],
    }
    model = ScriptedChatModel([json.dumps(reply)])
    with open_kg(llm=model) as kg:
        kg.ingest(corpus())
        answer = kg.ask("Who is the on-call owner of Atlas?", Caller())
    assert answer["mode"] == "llm" and answer["answered"] is True
    (citation,) = answer["citations"]  # type: ignore[misc]
    body = next(d.body for d in corpus() if d.doc_id == "atlas")
    start, end = citation["span"]
    assert body[start:end].decode() == "The on-call owner of Atlas is Priya Raman since March 2024."
    prompt = model.calls[0].messages[-1].content
    assert "Compensation" not in prompt  # the model only ever sees what the caller may read


def test_llm_answer_with_an_invented_quote_is_refused(open_kg) -> None:  # type: ignore[no-untyped-def]
    reply = {
        "insufficient_evidence": False,
        "sentences": [
            {"text": "Atlas is owned by Bob.", "evidence": [{"source": 1, "quote": "Atlas is owned by Bob"}]}
        ],
    }
    with open_kg(llm=ScriptedChatModel([json.dumps(reply), "not json"])) as kg:
        kg.ingest(corpus())
        refused = kg.ask("Who owns Atlas?", Caller())
        garbled = kg.ask("Who runs Atlas?", Caller())
    assert refused["mode"] == "refused" and refused["error_code"] == "INSUFFICIENT_EVIDENCE"
    assert refused["citations"] == []
    assert refused["removed"] == {"count": 1, "reasons": {"quote_not_found": 1}}
    # A reply that is no answer at all gives way to the extractive answer, flagged (not a refusal, not a 5xx).
    assert garbled["mode"] == "extractive" and garbled["answered"] is True
    assert garbled["fallback"] == {"reason": "llm_invalid_reply"}


def test_acl_change_moves_every_projection_and_fails_closed(kg: KgragApp) -> None:
    from kgrag_core.acl import acl_from_source
    from kgrag_core.ingest import IngestStatus

    kg.ingest(corpus())
    engineer, hr = Caller(groups=("engineering",)), Caller(groups=("hr",))
    query = "Harbor warehouse outage certificate"
    assert kg.search(query, engineer).hits[0].doc_id == "harbor"
    assert kg.ask("How long was Harbor down in May 2024?", engineer)["answered"] is True

    outcome = kg.change_acl("harbor", acl_from_source({"groups": ["hr"]}))

    assert outcome.status is IngestStatus.ACL_UPDATED
    assert all(h.doc_id != "harbor" for h in kg.search(query, engineer).hits)
    assert kg.search(query, hr).hits[0].doc_id == "harbor"
    assert kg.ask("How long was Harbor down in May 2024?", engineer)["answered"] is False
    hr_class = acl_from_source({"groups": ["hr"]}).acl_class_id
    # Both projections carry the new class, not only PostgreSQL.
    assert kg.searcher.vectors.search(kg.searcher.embedder.embed_query(query), [hr_class], 5)
    assert kg.searcher.keywords.search(query, [hr_class], 5)
    assert kg.change_acl("missing", acl_from_source(None)).error_code is not None


def test_stale_projection_is_caught_by_the_final_recheck(kg: KgragApp) -> None:
    """Fail closed: with only PostgreSQL updated (a propagation still in flight), the old readers see nothing."""
    from kgrag_core.acl import acl_from_source

    kg.ingest(corpus())
    engineer = Caller(groups=("engineering",))
    assert kg.searcher.documents.update_acl("harbor", acl_from_source({"groups": ["hr"]}))
    kg.cache.invalidate_all()
    assert all(h.doc_id != "harbor" for h in kg.search("Harbor certificate outage", engineer).hits)
