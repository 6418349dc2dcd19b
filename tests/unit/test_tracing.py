"""Traces in the core: the body holds ids, hashes, ranks and timings, never text; stage timings; feedback
validation; who may read a trace."""

from __future__ import annotations

import json
import threading
from datetime import UTC, date, datetime

import pytest

from kgrag_core.acl import Caller
from kgrag_core.answering.generative import generative_answer
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.graph_retrieval.searcher import GraphAssistedSearcher
from kgrag_core.tracing.build import TraceVersions, answer_part, search_body, sha256_text
from kgrag_core.tracing.model import (
    FeedbackIssue,
    Trace,
    TraceKind,
    new_feedback,
    new_trace_id,
    owner_of,
    parse_comment,
    parse_issue,
    parse_rating,
)
from kgrag_core.tracing.timing import measuring, stage
from kgrag_testing.scripted_llm import ScriptedChatModel
from tests.unit.test_graph_retrieval_doubles import READER, FakeClock, FakeStore, chain_graph, hybrid_over

VERSIONS = TraceVersions("model-x", "1", "1", "rules-test", {"rrf_k": 60})
NOW = datetime(2026, 3, 1, tzinfo=UTC)
MULTI_HOP = "Which site manager runs the warehouse where Brightwater Foods' stock is stored?"
TEXTS = {
    "d_direct": "Brightwater Foods keeps its stock at LEJ-2, says the zyxquorbel memo.",
    "c_served": "Brightwater Foods is served at LEJ-2.",
    "c_leads": "Oliver Grant runs LEJ-2.",
    "c_member": "Oliver Grant is in Site Ops.",
    "d2": "Unrelated warehouse notes.",
}


def _store() -> FakeStore:
    store = FakeStore()
    for chunk_id, text in TEXTS.items():
        store.add(chunk_id, text)
    return store


def _no_text(body: object) -> None:
    dumped = json.dumps(body)
    for text in TEXTS.values():
        assert text not in dumped
    for word in ("zyxquorbel", "Brightwater", "Oliver", "LEJ-2", "Site Ops", "D_DIRECT", "Which site manager"):
        assert word not in dumped, word


def test_a_search_trace_holds_ranks_and_hashes_but_no_text() -> None:
    store = _store()
    hybrid = hybrid_over(store, ["d_direct", "d2", "c_served"], ["c_served", "d_direct"])
    response = hybrid.search("Brightwater Foods stock zyxquorbel", READER, top_k=3)
    body = search_body(response, READER, request={"top_k": 3}, versions=VERSIONS, timings_ms={"total": 1.0})
    _no_text(body)
    assert body["request"] == {
        "query_sha256": sha256_text(response.query),
        "query_chars": len(response.query),
        "top_k": 3,
    }
    assert [r["chunk_id"] for r in body["results"]] == [h.chunk_id for h in response.hits]  # type: ignore[attr-defined]
    # Candidates per route: each shown hit by its rank in that route, the route's own order.
    assert body["candidates"] == {
        "bm25": [{"chunk_id": "c_served", "rank": 1}, {"chunk_id": "d_direct", "rank": 2}],
        "dense": [
            {"chunk_id": "d_direct", "rank": 1},
            {"chunk_id": "d2", "rank": 2},
            {"chunk_id": "c_served", "rank": 3},
        ],
    }
    assert body["caller"] == {"user": "ann", "groups": [], "admin": False, "scope_key": READER.scope_key()}
    assert body["versions"]["embedding_model"] == "model-x"  # type: ignore[index]


def test_a_graph_trace_lists_entities_paths_and_facts_by_id_and_hash() -> None:
    store = _store()
    searcher = GraphAssistedSearcher(
        hybrid_over(store, ["d_direct", "c_served", "d2"], ["d_direct"]), chain_graph(), clock=FakeClock()
    )
    response = searcher.search(MULTI_HOP, READER, top_k=10)
    body = search_body(response, READER, request={}, versions=VERSIONS, timings_ms={})
    _no_text(body)
    graph = body["graph"]
    assert isinstance(graph, dict) and graph["used"] is True
    assert body["route"] == response.route.as_dict()
    assert graph["linked_entities"][0]["entities"][0][0] == "org_b"
    assert graph["linked_entities"][0]["mention_sha256"] == sha256_text("Brightwater Foods")
    assert {(p["subject_id"], p["relation"], p["object_id"]) for p in graph["paths"]} >= {
        ("org_b", "SERVED_AT", "site_lej"),
        ("p_og", "LEADS", "site_lej"),
    }
    assert {f["line_sha256"] for f in graph["facts"]} == {sha256_text(line.text) for line in response.graph_lines}
    assert graph["truncated"] == sorted({t.split(":")[0].strip() for t in response.traversal.truncated})  # type: ignore[union-attr]


def test_the_answer_part_keeps_citations_by_span_and_removed_sentences_by_hash() -> None:
    store = _store()
    hits = hybrid_over(store, ["c_leads"], []).search("who runs it", READER).hits
    invented = {"text": "Zyxquorbel runs LEJ-2.", "evidence": [{"source": 1, "quote": "not in the chunk"}]}
    answer = generative_answer(
        "who runs it", hits, ScriptedChatModel([json.dumps({"insufficient_evidence": False, "sentences": [invented]})])
    )
    part = answer_part(answer.as_dict(), cached=False, removed=answer.removed)
    assert part["mode"] == "refused" and part["citations"] == []
    assert part["removed_sentences"] == [
        {"text_sha256": sha256_text("Zyxquorbel runs LEJ-2."), "reason": "quote_not_found"}
    ]
    assert "Zyxquorbel" not in json.dumps(part)
    assert answer_part(answer.as_dict(), cached=True, removed=None)["removed_sentences"] is None


def test_stages_count_only_inside_a_measurement_and_per_thread() -> None:
    with stage("outside"):
        pass
    seen: dict[str, dict[str, float]] = {}

    def worker(name: str) -> None:
        with measuring() as timings:
            with stage(name):
                pass
            with stage(name):
                pass
        seen[name] = timings.rounded()

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(seen["a"]) == {"a", "total"} and set(seen["b"]) == {"b", "total"}
    assert seen["a"]["total"] >= seen["a"]["a"] >= 0.0


def test_feedback_fields_are_checked_with_one_code() -> None:
    for bad in (0, 6, 2.5, True, "3", None):
        with pytest.raises(KgragError) as err:
            parse_rating(bad)
        assert err.value.code is ErrorCode.INVALID_FEEDBACK
    assert parse_rating(1) == 1 and parse_rating(5) == 5
    assert parse_issue("OUTDATED") is FeedbackIssue.OUTDATED and parse_issue(None) is None
    for bad_issue in ("outdated", "NOPE", 3):
        with pytest.raises(KgragError) as err:
            parse_issue(bad_issue)
        assert err.value.code is ErrorCode.INVALID_FEEDBACK
    assert parse_comment("line one\nline two") == "line one\nline two"
    for bad_comment in ("x" * 2001, "nul\x00", "lone \ud800", 7):
        with pytest.raises(KgragError) as err:
            parse_comment(bad_comment)
        assert err.value.code is ErrorCode.INVALID_FEEDBACK


def test_a_trace_is_read_by_its_owner_and_admins_only() -> None:
    sam = Caller(user="sam", groups=("engineering",))
    trace = Trace(new_trace_id(), TraceKind.SEARCH, owner_of(sam), NOW, {})
    assert trace.readable_by(sam)
    assert trace.readable_by(Caller(user="sam"))  # the same principal, whatever its groups now
    assert trace.readable_by(Caller(user="root", admin=True))
    assert not trace.readable_by(Caller(user="eve", groups=("engineering",)))
    assert not trace.readable_by(Caller())  # anonymous is not sam
    with pytest.raises(KgragError) as err:
        new_feedback(trace, Caller(user="eve"), rating=1, issue=None, comment="", now=NOW)
    assert err.value.code is ErrorCode.TRACE_NOT_FOUND
    mine = new_feedback(trace, sam, rating=2, issue="WRONG_ENTITY", comment="wrong Atlas", now=NOW)
    assert (mine.author, mine.rating, mine.issue) == ("user:sam", 2, FeedbackIssue.WRONG_ENTITY)
    assert new_trace_id() != new_trace_id() and new_trace_id().startswith("tr_")


def test_the_answer_part_records_the_facts_and_conflicts_used_by_id_and_hash_never_their_text() -> None:
    from kgrag_core.answering.compose import composed_answer
    from kgrag_core.extraction.records import ClaimStatus
    from tests.unit.test_answer_composition import CURRENT, NEW, OLD, OUTDATED, _claim, _context, _doc

    day = date(2024, 9, 3)
    a, _ = _doc("ops-mail", "Ops e-mail", "LEJ-2 now holds 24,500 pallet positions.", day)
    b, _ = _doc("finance-sheet", "Finance sheet", "LEJ-2 holds 22,000 pallet positions.", day)
    sides = [
        _claim(a, "24,500", "LEJ-2 now holds 24,500 pallet positions.", status=ClaimStatus.CONFLICT, claim_id="c1"),
        _claim(b, "22,000", "LEJ-2 holds 22,000 pallet positions.", status=ClaimStatus.CONFLICT, claim_id="c2"),
    ]
    disputed = composed_answer(_context("What is the pallet capacity of LEJ-2?", [a, b], sides))
    part = answer_part(disputed.as_dict(), cached=False, removed=disputed.removed)
    assert {f["id"] for f in part["facts"]} == {"c1", "c2"}  # type: ignore[union-attr]
    (conflict,) = part["conflicts"]  # type: ignore[misc]
    assert {tuple(v["fact_ids"]) for v in conflict["values"]} == {("c1",), ("c2",)}
    assert {v["value_sha256"] for v in conflict["values"]} == {sha256_text("24,500"), sha256_text("22,000")}
    assert {c for v in conflict["values"] for c in v["chunk_ids"]} == {a.chunk_id, b.chunk_id}
    text = json.dumps(part)
    assert "24,500" not in text and "22,000" not in text and "LEJ-2" not in text and "capacity" not in text
    # The positive control's counterpart: an answer with a current value and its history records both facts,
    # and no conflict.
    timeline = composed_answer(_context("What is the pallet capacity of LEJ-2?", [OLD, NEW], [OUTDATED, CURRENT]))
    told = answer_part(timeline.as_dict(), cached=False, removed=())
    assert {(f["id"], f["status"]) for f in told["facts"]} == {  # type: ignore[union-attr]
        (CURRENT.claim_id, "current"),
        (OUTDATED.claim_id, "superseded"),
    }
    assert told["conflicts"] == []
