"""The learned router (kgrag_core/graph_retrieval/learned_router.py): training, confidence, the fused
low-confidence strategies, and `mode` overrides. The embedder here is a bag of words, so these tests pin the
classifier's logic; its accuracy with the real model is measured in tests/pipeline/test_learned_router_model.py."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.graph_retrieval.learned_router import (
    LearnedRouter,
    RouterExample,
    cue_vector,
    dump_fitted,
    parse_fitted,
    parse_router_examples,
)
from kgrag_core.graph_retrieval.router import QuestionKind, Route, RuleRouter
from kgrag_core.graph_retrieval.searcher import GraphAssistedSearcher
from tests.unit.test_graph_retrieval_doubles import READER, FakeClock, FakeStore, chain_graph, hybrid_over

DIM = 64


class BagOfWords:
    """A deterministic stand-in for the embedding port: each word hashed into one of DIM buckets."""

    model_id = "bag-of-words-64"
    dimension = DIM

    def embed_query(self, text: str) -> tuple[float, ...]:
        out = [0.0] * DIM
        for word in re.findall(r"[a-z]+", text.lower()):
            out[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIM] += 1.0
        return tuple(out)

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        return [self.embed_query(t) for t in texts]


K = QuestionKind
EXAMPLES = [
    RouterExample(q, kind)
    for kind, questions in {
        K.LOOKUP: ["What is the retention of logs?", "How many seats does room four hold?", "What port does it use?"],
        K.ENTITY: ["Who is Anna Berg?", "Tell me about Helix.", "Describe Orion."],
        K.MULTI_HOP: [
            "Who leads the team that owns Helix?",
            "Which vendor supplies the site that Anna runs?",
            "Who manages the person who owns Orion?",
        ],
        K.TEMPORAL: ["What is the current fee now?", "Who is the owner now?", "How has the bill changed since 2023?"],
        K.MODALITY: ["Did the migration actually happen?", "Was the plan carried out?", "Did they run the pilot?"],
        K.GLOBAL: ["Summarise the recurring themes.", "What patterns recur across incidents?", "Overall trends?"],
    }.items()
    for q in questions
]


def test_it_routes_unseen_wording_by_what_it_learned() -> None:
    router = LearnedRouter(BagOfWords(), EXAMPLES)
    assert router.route("Did the move to the new office actually happen?").kind is K.MODALITY
    assert router.route("Summarise the recurring complaints across customers.").kind is K.GLOBAL
    chosen = router.route("Who leads the team that owns Atlas?")
    assert chosen.kind is K.MULTI_HOP
    assert chosen.signals[0].startswith("learned:multi_hop=") and "cue:relative" in chosen.signals
    assert 0.0 < chosen.confidence <= 1.0


def test_training_is_deterministic_and_the_version_names_the_set_and_the_model() -> None:
    a, b = LearnedRouter(BagOfWords(), EXAMPLES), LearnedRouter(BagOfWords(), list(EXAMPLES))
    question = "Who is the current owner of Helix?"
    assert a.probabilities(question) == b.probabilities(question)
    assert a.version == b.version and a.version.startswith("learned-")
    changed = LearnedRouter(BagOfWords(), [*EXAMPLES, RouterExample("Who is Mei?", K.ENTITY)])
    assert changed.version != a.version
    assert RuleRouter().version.startswith("rules-")


def test_a_low_confidence_route_carries_its_runner_up_and_both_strategies() -> None:
    never_sure = LearnedRouter(BagOfWords(), EXAMPLES, low_confidence=1.01)
    unsure = never_sure.route("Who leads the team that owns Atlas?")
    ranked = sorted(never_sure.probabilities("Who leads the team that owns Atlas?").items(), key=lambda kv: -kv[1])
    assert unsure.alternative is ranked[1][0]
    assert unsure.strategies == (ranked[0][0], ranked[1][0])
    assert unsure.as_dict()["alternative"] == ranked[1][0].value
    sure = LearnedRouter(BagOfWords(), EXAMPLES, low_confidence=0.0).route("Who leads the team that owns Atlas?")
    assert sure.alternative is None and sure.strategies == (sure.kind,)
    assert "alternative" not in sure.as_dict()


def test_the_runner_up_strategy_runs_when_the_route_is_unsure() -> None:
    store = FakeStore()
    for chunk_id in ["d_direct", "c_served", "c_leads", "c_member", "c_customer", "c_hub_far"]:
        store.add(chunk_id, f"text of {chunk_id}")
    question = "Which site manager runs the warehouse where Brightwater Foods' stock is stored?"
    searcher = GraphAssistedSearcher(hybrid_over(store, ["d_direct"], ["d_direct"]), chain_graph(), clock=FakeClock())
    plain = searcher.search(question, READER, top_k=10, chosen=Route(K.LOOKUP, 0.9, ()))
    assert plain.mode == "hybrid" and "c_leads" not in [h.chunk_id for h in plain.hits]
    unsure = searcher.search(question, READER, top_k=10, chosen=Route(K.LOOKUP, 0.4, (), alternative=K.MULTI_HOP))
    assert unsure.mode == "hybrid+graph" and unsure.route.alternative is K.MULTI_HOP
    assert "c_leads" in [h.chunk_id for h in unsure.hits]  # the chain only the multi-hop walk reaches
    both = searcher.search(question, READER, top_k=10, chosen=Route(K.ENTITY, 0.4, (), alternative=K.MULTI_HOP))
    alone = searcher.search(question, READER, top_k=10, chosen=Route(K.ENTITY, 0.9, ()))
    assert both.mode == alone.mode == "hybrid+graph"
    assert {line.text for line in alone.graph_lines} <= {line.text for line in both.graph_lines}


@pytest.mark.parametrize(
    ("lines", "code", "message"),
    [
        (["{not json"], ErrorCode.MALFORMED_JSON, "line 1"),
        ([json.dumps({"question": "q?", "kind": "gossip"})], ErrorCode.MISSING_FIELD, "line 1"),
        ([json.dumps({"kind": "lookup"})], ErrorCode.MISSING_FIELD, "line 1"),
        ([json.dumps({"question": "q?", "kind": "lookup"})], ErrorCode.MISSING_FIELD, "no example of"),
    ],
)
def test_a_bad_router_set_is_rejected_with_the_line(lines: list[str], code: ErrorCode, message: str) -> None:
    with pytest.raises(KgragError) as caught:
        parse_router_examples(lines)
    assert caught.value.code is code and message in str(caught.value)


def test_the_configured_router_is_built_and_a_missing_set_is_a_clear_error(tmp_path: Path) -> None:
    from kgrag_runtime.graph import build_router
    from kgrag_runtime.settings import KgragSettings

    assert isinstance(build_router(KgragSettings(router="rules"), BagOfWords()), RuleRouter)
    learned_set = tmp_path / "router.jsonl"
    learned_set.write_text("\n".join(json.dumps({"question": e.question, "kind": e.kind.value}) for e in EXAMPLES))
    built = build_router(KgragSettings(router="learned", router_questions_file=learned_set), BagOfWords())
    assert isinstance(built, LearnedRouter) and built.version == LearnedRouter(BagOfWords(), EXAMPLES).version
    with pytest.raises(KgragError) as caught:
        build_router(KgragSettings(router="learned", router_questions_file=tmp_path / "none.jsonl"), BagOfWords())
    assert caught.value.code is ErrorCode.SOURCE_UNREADABLE and "KGRAG_ROUTER" in (caught.value.hint or "")


def test_a_shipped_fit_is_used_only_by_the_router_it_was_fitted_for() -> None:
    fitted = LearnedRouter(BagOfWords(), EXAMPLES).fit()
    loaded = parse_fitted(dump_fitted(fitted))
    assert loaded.version == fitted.version
    shipped = LearnedRouter(BagOfWords(), EXAMPLES, fitted=loaded)
    assert shipped.fitted is loaded
    question = "Did they run the pilot in the end?"
    trained = LearnedRouter(BagOfWords(), EXAMPLES).probabilities(question)
    assert shipped.probabilities(question) == pytest.approx(trained, abs=1e-9)
    # A fit of another set (one more example) is not this router's: it is ignored and the router trains.
    other = LearnedRouter(BagOfWords(), [*EXAMPLES, RouterExample("Who is Mei?", K.ENTITY)], fitted=loaded)
    assert other.fitted is None and other.version != loaded.version


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda body: {**body, "kinds": list(reversed(body["kinds"]))}, "not the routed kinds"),
        (lambda body: {**body, "scale": body["scale"][:-1]}, "shapes disagree"),
        (lambda body: {key: value for key, value in body.items() if key != "weights"}, "weights"),
    ],
)
def test_a_fitted_file_that_does_not_fit_is_refused(edit: object, message: str) -> None:
    body = json.loads(dump_fitted(LearnedRouter(BagOfWords(), EXAMPLES).fit()))
    with pytest.raises(KgragError) as caught:
        parse_fitted(json.dumps(edit(body)))  # type: ignore[operator]
    assert message in str(caught.value)


def test_the_cues_read_time_plans_themes_and_names() -> None:
    names = [
        "now", "change", "year", "month", "yes/no", "plan", "global", "relative", "chained", "describe", "names",
    ]  # fmt: skip
    fired = dict(
        zip(names, cue_vector("Did Kestrel Pharma actually sign the plan in March 2024, and who owns it?"), strict=True)
    )
    assert fired["yes/no"] == fired["plan"] == fired["year"] == fired["month"] == fired["chained"] == 1.0
    assert fired["now"] == fired["global"] == fired["describe"] == 0.0
    assert fired["names"] == 1.0  # Kestrel, Pharma, March: three names after the opening word, the cap
    assert cue_vector("Who is Mei?")[-1] == pytest.approx(1 / 3)
    assert dict(zip(names, cue_vector("What is the current fee?"), strict=True))["now"] == 1.0
