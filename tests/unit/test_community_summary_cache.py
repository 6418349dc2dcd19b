"""Abstractive community summaries served from the cache: the second ask of one caller makes no model call,
another scope never gets the first's text, and a new corpus-and-ACL generation (a deletion, an ACL change)
drops the entry. The model is the FAKE scripted chat model (labelled so in kgrag_testing)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from kgrag_core.acl import Caller, readable_classes
from kgrag_core.answering.model import AnswerMode
from kgrag_core.communities.model import Community
from kgrag_core.communities.summary import SummaryCache
from kgrag_core.communities.view import CommunityView, community_view
from kgrag_core.retrieval.fusion import FusedCandidate
from kgrag_core.search import SearchHit
from kgrag_testing.scripted_llm import ScriptedChatModel
from tests.unit.test_community_view_security import FINANCE, OUTSIDER, _world
from tests.unit.test_graph_retrieval_doubles import FakeStore, InMemoryGraph, hybrid_over


def _seen(graph: InMemoryGraph, store: FakeStore, community: Community, caller: Caller):  # type: ignore[no-untyped-def]
    """The caller's view of the community and their ACL-rechecked chunk loader."""
    hybrid = hybrid_over(store, [], [])
    allowed = readable_classes(store.acl_classes(), caller)

    def load(chunk_ids: Sequence[str]) -> Mapping[str, SearchHit]:
        loaded = hybrid.hydrate([FusedCandidate(c, 0.0) for c in chunk_ids], set(allowed), len(chunk_ids) or 1)
        return {h.chunk_id: h for _, h in loaded}

    view = community_view(community, graph, allowed, load)
    assert view is not None
    return view, load, allowed


def _reply(view: CommunityView, text: str, quote: str) -> str:
    """The summary the scripted model gives: one sentence citing the view's first chunk holding `quote`."""
    chunks = list(dict.fromkeys(c.chunk_id for c in view.citations))  # the sources, as the cache loads them
    source = next(chunks.index(c.chunk_id) + 1 for c in view.citations if quote in c.quote)
    sentence = {"text": text, "evidence": [{"source": source, "quote": quote}]}
    return json.dumps({"insufficient_evidence": False, "sentences": [sentence]})


def test_the_second_ask_is_served_from_the_cache_and_another_scope_never_gets_its_text() -> None:
    graph, store, communities = _world(with_secret=True)
    community = next(c for c in communities if "e_atlas" in c.member_ids)
    fin_view, fin_load, fin_classes = _seen(graph, store, community, FINANCE)
    out_view, out_load, out_classes = _seen(graph, store, community, OUTSIDER)
    fin_text = "Jordan Blake leads Project Quartz to replace Atlas after the delays."
    out_text = "The Routing team owns Atlas and runs it from Leipzig."
    model = ScriptedChatModel(
        [
            _reply(fin_view, fin_text, fin_text[:-1]),
            _reply(out_view, out_text, out_text[:-1]),
            _reply(fin_view, fin_text, fin_text[:-1]),
        ]
    )
    cache = SummaryCache()
    first = cache.summary(community, fin_view, fin_load, model, fin_classes, generation=1)
    assert first.mode is AnswerMode.LLM and [s.text for s in first.sentences] == [fin_text]
    again = cache.summary(community, fin_view, fin_load, model, fin_classes, generation=1)
    assert again == first and len(model.calls) == 1 == cache.model_calls  # no second model call
    # The outsider (another scope): their own summary, by a model call of its own; never the finance text.
    outsider = cache.summary(community, out_view, out_load, model, out_classes, generation=1)
    assert len(model.calls) == 2
    assert [s.text for s in outsider.sentences] == [out_text]
    assert "Jordan Blake" not in json.dumps(outsider.as_dict()) and "Quartz" not in json.dumps(outsider.as_dict())
    # A deletion or ACL change bumps the generation: the finance entry is dropped, the model asked again.
    cache.summary(community, fin_view, fin_load, model, fin_classes, generation=2)
    assert len(model.calls) == 3 and model.remaining == 0
