"""Abstractive community summaries: keyed by evidence scope, served only to callers who cover it, never from
a stale community, and verified like answers (a FAKE scripted model stands in for the LLM)."""

from __future__ import annotations

import json
from dataclasses import replace

from kgrag_core.answering.model import AnswerMode
from kgrag_core.communities.model import Community
from kgrag_core.communities.summary import (
    abstractive_summary,
    extractive_summary,
    may_serve,
    summary_cost_preview,
    summary_key,
)
from kgrag_core.communities.view import CommunityView
from kgrag_core.extraction.rerun import CostModel
from kgrag_core.search import SearchHit
from kgrag_testing.scripted_llm import BAD_JSON, ScriptedChatModel
from tests.unit.test_community_view_security import FINANCE, _view_fn, _world
from tests.unit.test_graph_retrieval_doubles import FakeStore


def _finance_view() -> tuple[Community, CommunityView, list[SearchHit], FakeStore]:
    graph, store, communities = _world(with_secret=True)
    community = next(c for c in communities if "e_atlas" in c.member_ids)
    view = _view_fn(graph, store, FINANCE)(community)
    assert view is not None
    hits = [_hit(store, c.chunk_id) for c in view.citations]
    return community, view, hits, store


def _hit(store: FakeStore, chunk_id: str) -> SearchHit:
    chunk = store.chunks[chunk_id]
    return SearchHit(chunk_id, chunk.doc_id, chunk_id.upper(), "", "test", (), 0, chunk.end_byte, chunk.text, 1.0)


def test_a_summary_is_served_only_to_callers_covering_its_scope_and_never_from_a_stale_community() -> None:
    community, _, _, _ = _finance_view()
    key = summary_key(community, ["acl_fin", "acl_pub", "acl_pub"], "model-a")
    assert key.scope == ("acl_fin", "acl_pub")
    assert may_serve(key, community, ["acl_pub", "acl_fin", "acl_hr"])
    assert not may_serve(key, community, ["acl_pub"])  # the outsider: half the scope
    assert may_serve(key, community, None)  # an administrator
    assert not may_serve(key, replace(community, stale=True), None)  # stale fails closed
    assert not may_serve(key, replace(community, content_hash="changed"), None)
    keys = {
        key.cache_key(),
        summary_key(community, ["acl_pub"], "model-a").cache_key(),
        summary_key(community, ["acl_fin", "acl_pub"], "model-b").cache_key(),
        replace(key, prompt_version="other").cache_key(),
    }
    assert len(keys) == 4


def test_the_models_summary_keeps_only_sentences_its_quotes_support() -> None:
    _, view, hits, _ = _finance_view()
    quartz = next(i for i, h in enumerate(hits, start=1) if "Project Quartz" in h.text)
    reply = {
        "insufficient_evidence": False,
        "sentences": [
            {
                "text": "Jordan Blake leads Project Quartz to replace Atlas after the delays.",
                "evidence": [{"source": quartz, "quote": "Jordan Blake leads Project Quartz to replace Atlas"}],
            },
            {
                "text": "Atlas was shut down in 2019.",
                "evidence": [{"source": quartz, "quote": "Atlas was shut down in 2019"}],
            },
        ],
    }
    summary = abstractive_summary(view, hits, ScriptedChatModel([json.dumps(reply)]))
    assert summary.mode is AnswerMode.LLM
    kept = [s.text for s in summary.sentences]
    assert kept == ["Jordan Blake leads Project Quartz to replace Atlas after the delays."]
    assert all(c.doc_id == "doc_c_quartz" or c.doc_id == "doc_c_quartz2" for c in summary.citations)


def test_a_model_that_fails_gives_the_extractive_summary_flagged() -> None:
    _, view, hits, _ = _finance_view()
    summary = abstractive_summary(view, hits, ScriptedChatModel([BAD_JSON]))
    assert summary.fallback == "llm_invalid_reply"
    assert [s.text for s in summary.sentences] == [s.text for s in extractive_summary(view).sentences]
    assert summary.sentences


def test_the_rebuild_preview_prices_one_summary_per_community_and_scope_and_nothing_without_a_model() -> None:
    priced = CostModel(input_price_per_mtok=1.0, output_price_per_mtok=2.0, seconds_per_call=2.0)
    out = summary_cost_preview(10, priced, llm=True)["summaries"]
    assert isinstance(out, dict)
    assert out["calls"] == 10 and out["priced"] is True and out["per_scope"] is True
    assert out["cost"] == priced.cost(out["input_tokens"], out["output_tokens"]) > 0
    assert out["seconds"] == 20.0
    none = summary_cost_preview(10, priced, llm=False)["summaries"]
    assert isinstance(none, dict) and none["calls"] == 0 and none["cost"] == 0
    unpriced = summary_cost_preview(3, CostModel(None, None), llm=True)["summaries"]
    assert isinstance(unpriced, dict) and unpriced["priced"] is False and unpriced["cost"] == 0
