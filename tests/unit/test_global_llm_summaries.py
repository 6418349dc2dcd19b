"""LLM summaries in the app: `GlobalAnswerer` with a chat model serves the caller's community summary
(`GET /v1/communities/{id}`) and maps GLOBAL themes from it, verified like answers and cached per scope.

The model is the FAKE scripted chat model (labelled so in kgrag_testing): it restates each numbered source's
first sentence as "A recurring theme: ..." (supported by its quote) and adds one fluent sentence no quote
supports, which verification must remove. The world is the adversarial one of test_community_view_security:
the community's strongest facts are finance-only; the outsider reads half of it."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from kgrag_core.acl import readable_classes
from kgrag_core.answering.generative import SYSTEM_PROMPT
from kgrag_core.communities.model import Community
from kgrag_core.communities.summary import summary_cost_preview, summary_request_tokens
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.rerun import CostModel
from kgrag_core.ports import ChatMessage, TokenCounter
from kgrag_core.retrieval.fusion import FusedCandidate
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_core.retrieval.query_vectors import SearchScopedEmbedder, one_embedding_per_search
from kgrag_runtime.global_answers import GlobalAnswerer
from kgrag_testing.scripted_llm import ScriptedChatModel
from tests.unit.test_community_view_security import FINANCE, OUTSIDER, _world
from tests.unit.test_graph_retrieval_doubles import FakeEmbedder, FakeRoute, FakeStore, InMemoryGraph

PREFIX = "A recurring theme: "
UNFAITHFUL = "Atlas is run from Berlin."  # fluent, cites a real quote, and no quote says it
SECRET_WORDS = ("Jordan", "Quartz", "customer", "c_quartz", "Vault", "Orion")
QUESTION = "What are the recurring causes of delays?"
SOURCE = re.compile(r"^\[(\d+)\] [^\n]*\n([^\n]+)$", re.MULTILINE)


def summariser(messages: Sequence[ChatMessage]) -> str:
    """FAKE model reply: one supported sentence per source, then the unfaithful one."""
    sentences: list[dict[str, Any]] = []
    for number, text in SOURCE.findall(messages[-1].content):
        quote = text.split(". ")[0].rstrip(".")
        sentences.append({"text": f"{PREFIX}{quote}.", "evidence": [{"source": int(number), "quote": quote}]})
    if sentences:
        sentences.append({"text": UNFAITHFUL, "evidence": sentences[0]["evidence"]})
    return json.dumps({"insufficient_evidence": False, "sentences": sentences})


class _Communities:
    """The part of a CommunityStore the GLOBAL route reads, in memory."""

    def __init__(self, communities: Sequence[Community]) -> None:
        self.all = list(communities)

    def communities(self, level: int | None = None) -> list[Community]:
        return [c for c in self.all if level is None or c.level == level]

    def communities_of(self, entity_ids: Sequence[str], level: int | None = None) -> list[Community]:
        return [c for c in self.communities(level) if set(entity_ids) & set(c.member_ids)]


class _Embedder(FakeEmbedder):
    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        return [self.embed_query(t) for t in texts]


def _answerer(
    graph: InMemoryGraph, store: FakeStore, communities: Sequence[Community], model: ScriptedChatModel, gen: list[int]
) -> GlobalAnswerer:
    hybrid = HybridSearcher(store, store, FakeRoute(store, []), FakeRoute(store, []), _Embedder())  # type: ignore[arg-type]
    return GlobalAnswerer(
        _Communities(communities),  # type: ignore[arg-type]
        graph,
        hybrid,
        level=1,
        generation=lambda: gen[0],
        chat=model,
    )


def _mixed(communities: Sequence[Community]) -> Community:
    return next(c for c in communities if "e_atlas" in c.member_ids)


def test_a_community_summary_is_the_models_verified_cached_and_never_another_scopes() -> None:
    graph, store, communities = _world(with_secret=True)
    model, gen = ScriptedChatModel(summariser), [1]
    answers = _answerer(graph, store, communities, model, gen)
    mixed = _mixed(communities)

    insider = answers.summary_of(mixed, FINANCE)
    assert insider is not None and insider["mode"] == "llm" and "fallback" not in insider
    sentences = [s["text"] for s in insider["summary"]]  # type: ignore[attr-defined]
    assert sentences and all(s.startswith(PREFIX) for s in sentences)
    assert any("Project Quartz" in s for s in sentences)  # positive control: the insider's summary has it
    assert UNFAITHFUL not in json.dumps(insider)  # the model wrote it; verification removed it
    for c in insider["citations"]:  # type: ignore[attr-defined]
        assert c["quote"] in store.chunks[c["chunk_id"]].text
    assert len(model.calls) == 1
    assert answers.summary_of(mixed, FINANCE) == insider and len(model.calls) == 1  # the second ask: no call

    outsider = answers.summary_of(mixed, OUTSIDER)
    assert outsider is not None and outsider["mode"] == "llm" and outsider["summary"]
    assert len(model.calls) == 2  # a summary of its own: the insider's is never served to it
    for word in SECRET_WORDS:
        assert word not in json.dumps(outsider), word
        assert word not in model.calls[1].messages[-1].content, word  # nor was it in the outsider's prompt
    assert {c["doc_id"] for c in outsider["citations"]} <= {"doc_c_owns", "doc_c_delay"}  # type: ignore[attr-defined]

    gen[0] += 1  # a deletion or ACL change: the cached summaries are dropped, the model asked again
    assert answers.summary_of(mixed, FINANCE) == insider and len(model.calls) == 3


def test_a_model_error_or_an_unsupported_summary_falls_back_to_the_extractive_one_flagged() -> None:
    graph, store, communities = _world(with_secret=True)
    down = ScriptedChatModel(
        [KgragError(ErrorCode.LLM_UNAVAILABLE, "endpoint down"), KgragError(ErrorCode.LLM_UNAVAILABLE, "still down")]
    )
    answers = _answerer(graph, store, communities, down, [1])
    mixed = _mixed(communities)
    failed = answers.summary_of(mixed, FINANCE)
    assert failed is not None and failed["fallback"] == {"reason": "llm_unavailable"}
    assert failed["mode"] == "extractive" and failed["summary"]
    quotes = {c["id"]: c["quote"] for c in failed["citations"]}  # type: ignore[attr-defined]
    for point in failed["summary"]:  # type: ignore[attr-defined]
        assert point["text"] == quotes[point["citations"][0]]  # its key sentences, quoted as written
    answers.summary_of(mixed, FINANCE)  # a failure is not cached: the model is tried again
    assert len(down.calls) == 2 and down.remaining == 0

    # Every sentence the model writes is unsupported: nothing is left, so the extractive summary, flagged.
    unfaithful = json.dumps(
        {
            "insufficient_evidence": False,
            "sentences": [{"text": UNFAITHFUL, "evidence": [{"source": 1, "quote": "Atlas"}]}],
        }
    )
    answers = _answerer(graph, store, communities, ScriptedChatModel([unfaithful]), [1])
    empty = answers.summary_of(mixed, FINANCE)
    assert empty is not None and empty["fallback"] == {"reason": "summary_unsupported"} and empty["summary"]
    assert UNFAITHFUL not in json.dumps(empty)

    # A stale community's summaries are neither served nor written (no model call) until it is rebuilt.
    stale = replace(mixed, stale=True)
    never = ScriptedChatModel([])
    answers = _answerer(graph, store, [stale], never, [1])
    shown = answers.summary_of(stale, FINANCE)
    assert shown is not None and shown["fallback"] == {"reason": "community_stale"} and not never.calls


def _themes_text(result: Any) -> str:
    return json.dumps({**result.as_dict(), "citations": [c.as_dict() for c in result.citations]})


def test_global_themes_are_mapped_from_the_callers_abstractive_summaries() -> None:
    graph, store, communities = _world(with_secret=True)
    model, gen = ScriptedChatModel(summariser), [1]
    answers = _answerer(graph, store, communities, model, gen)

    insider = answers.themes(QUESTION, FINANCE, [])
    assert insider.themes and insider.summaries.get("abstractive", 0) >= 1 and insider.fallback is None
    points = [p.text for t in insider.themes for p in t.points]
    assert all(p.startswith(PREFIX) for p in points) and UNFAITHFUL not in points
    assert any(w in _themes_text(insider) for w in ("Quartz", "Vault"))  # positive control
    by_id = {c.id: c for c in insider.citations}
    for theme in insider.themes:
        for point in theme.points:
            assert point.citation_ids and all(by_id[i].quote in point.text for i in point.citation_ids)
    calls = len(model.calls)
    assert answers.themes(QUESTION, FINANCE, []) == insider and len(model.calls) == calls  # served from the cache

    outsider = answers.themes(QUESTION, OUTSIDER, [])
    assert outsider.themes and all(p.text.startswith(PREFIX) for t in outsider.themes for p in t.points)
    for word in SECRET_WORDS:
        assert word not in _themes_text(outsider), word

    # The model down: the themes are the extractive ones, and the result carries the failure (not cached).
    down = _answerer(
        graph, store, communities, ScriptedChatModel([KgragError(ErrorCode.LLM_UNAVAILABLE, "down")] * 8), gen
    )
    flagged = down.themes(QUESTION, FINANCE, [])
    assert flagged.themes and flagged.fallback == "llm_unavailable" and flagged.answer().fallback == "llm_unavailable"
    assert not any(p.text.startswith(PREFIX) for t in flagged.themes for p in t.points)


class _CountingStore(FakeStore):
    """FakeStore that records every chunk id the loader hydrates."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[str] = []

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, Any]:
        self.read.extend(chunk_ids)
        return super().get_chunks(chunk_ids)


def test_the_global_route_reuses_the_asks_hits_and_this_generations_chunks_with_the_same_themes() -> None:
    graph, plain, communities = _world(with_secret=True)
    store = _CountingStore()
    store.chunks, store.docs = plain.chunks, plain.docs
    gen = [1]
    answers = replace(_answerer(graph, store, communities, ScriptedChatModel([]), gen), chat=None)
    baseline = replace(answers, reuse=False)
    public = set(readable_classes(store.acl_classes(), OUTSIDER))
    hits = [h for _, h in answers.hybrid.hydrate([FusedCandidate("c_delay", 0.0)], public, 1)]
    assert [h.chunk_id for h in hits] == ["c_delay"]
    store.read.clear()

    expected = baseline.themes(QUESTION, OUTSIDER, hits)
    assert "c_delay" in store.read  # the baseline reads the ask's own hit again
    store.read.clear()
    first = answers.themes(QUESTION, OUTSIDER, hits)
    assert _themes_text(first) == _themes_text(expected)  # the same themes, quotes and citations
    assert store.read and "c_delay" not in store.read  # taken from the ask's hits
    store.read.clear()
    assert _themes_text(answers.themes(QUESTION, OUTSIDER, hits)) == _themes_text(expected)
    assert store.read == []  # the rest was read in this generation already
    answers.themes(QUESTION, OUTSIDER, [])
    assert store.read == ["c_delay"]  # an ask's hits serve that ask only
    store.read.clear()
    # Another scope never reads the outsider's entries; a new generation (a deletion, an ACL change) reads again.
    answers.themes(QUESTION, FINANCE, [])
    assert "c_quartz" in store.read
    store.read.clear()
    gen[0] += 1
    answers.themes(QUESTION, OUTSIDER, [])
    assert "c_owns" in store.read


def test_the_scoped_embedder_embeds_a_question_once_per_ask_and_answers_as_its_model_does() -> None:
    class Counting(_Embedder):
        def __init__(self) -> None:
            self.queries: list[str] = []

        def embed_query(self, text: str) -> tuple[float, ...]:
            self.queries.append(text)
            return super().embed_query(text)

        def count_tokens(self, text: str) -> int:
            return len(text.split())

    inner = Counting()
    scoped = SearchScopedEmbedder(inner)  # type: ignore[arg-type]
    with one_embedding_per_search():  # one ask: hybrid, the router and the GLOBAL route's relevance
        assert scoped.embed_query("why delays") == scoped.embed_query("why delays") == inner.embed_query("why delays")
    assert inner.queries == ["why delays", "why delays"]  # the model once through the scope, once directly
    scoped.embed_query("why delays")  # the next ask embeds again: nothing outlives its scope
    assert inner.queries.count("why delays") == 3
    assert isinstance(scoped, TokenCounter) and scoped.count_tokens("two words") == 2
    assert not isinstance(SearchScopedEmbedder(_Embedder()), TokenCounter)  # type: ignore[arg-type]


def test_the_rebuild_preview_counts_a_summary_request_as_re_extraction_counts_its_requests() -> None:
    counted: list[str] = []

    def words(text: str) -> int:
        counted.append(text)
        return len(text.split())

    priced = CostModel(input_price_per_mtok=1.0, output_price_per_mtok=2.0, tokens_counted=True)
    out = summary_cost_preview(3, priced, llm=True, count_tokens=words)["summaries"]
    assert isinstance(out, dict) and out["tokens_counted"] is True
    # Every message of the answer prompt and the reply schema, by the counter re-extraction counts with.
    assert any(SYSTEM_PROMPT in t for t in counted) and any('"sentences"' in t for t in counted)
    assert out["input_tokens"] == 3 * summary_request_tokens(words) != 3 * summary_request_tokens()
    assert out["cost"] == priced.cost(out["input_tokens"], out["output_tokens"]) > 0


def test_a_theme_says_when_a_community_behind_it_is_stale() -> None:
    graph, store, communities = _world(with_secret=True)
    model = ScriptedChatModel([])  # a stale community is never summarised by the model
    fresh = replace(_answerer(graph, store, communities, model, [1]), chat=None).themes(QUESTION, FINANCE, [])
    assert fresh.themes and not any(t.as_dict()["stale"] for t in fresh.themes)
    marked = [replace(c, stale=True) for c in communities]
    stale = _answerer(graph, store, marked, model, [1]).themes(QUESTION, FINANCE, [])
    assert stale.themes and all(t.as_dict()["stale"] is True for t in stale.themes)
    assert set(stale.summaries) == {"community_stale"} and not model.calls
