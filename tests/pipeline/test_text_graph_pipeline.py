"""The text graph end to end on the embedded runtime: built with ingest, walked by search, lifting a second
hop of a bundled bridge question, and never reaching a passage through a chunk the caller cannot read.

Part of the bundled Northwind corpus (a dev-split bridge question's gold documents and some distractors)
plus a small hand-written bridge whose middle document is restricted; extraction is off (the text graph
needs no model, and tiers 0-2 would only add ingest time).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from kgrag_adapters.connectors import iter_path
from kgrag_core.acl import Caller
from kgrag_core.documents import SourceDocument
from kgrag_core.evaluation.questions import parse_questions
from kgrag_core.ingest import IngestStatus
from kgrag_core.search import SearchResponse
from kgrag_runtime.app import KgragApp
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from tests.pipeline.corpus import doc

CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "northwind"
BRIDGE_QUESTION = "q18"  # dev split: Kestrel's blocked EDI orders -> the system involved -> its owning team
DISTRACTORS = 10

OUTSIDER = Caller(user="t1-outsider", groups=("t1-staff",))
INSIDER = Caller(user="t1-insider", groups=("t1-staff", "t1-secret"))
STAFF = {"groups": ["t1-staff"]}
QUESTION = "Who leads the team that owns the Quillon scheduler?"

# The bridge: the question names Quillon; only the restricted memo says Quillon belongs to the Zephyr team;
# the Zephyr page (readable by both) never names Quillon.
SECURITY_DOCS = [
    doc("t1-quillon", "# Quillon scheduler\n\nThe Quillon scheduler plans nightly batch jobs.\n", acl=STAFF),
    doc(
        "t1-zephyr",
        "# Zephyr team\n\nMarta Vell leads the Zephyr team. The Zephyr team meets on Tuesdays in Leipzig.\n",
        acl=STAFF,
    ),
    doc("t1-orion", "# Orion team\n\nJonas Brandt leads the Orion team, which owns the billing exports.\n", acl=STAFF),
    doc("t1-vega", "# Vega team\n\nAnna Kohl leads the Vega team; it owns the label printers.\n", acl=STAFF),
    doc("t1-lyra", "# Lyra team\n\nPeter Sand leads the Lyra team and owns the customer portal.\n", acl=STAFF),
]
MEMO = doc(
    "t1-memo",
    "# Reorganisation memo\n\nFrom June the Quillon scheduler is owned by the Zephyr team.\n",
    acl={"groups": ["t1-secret"]},
)


def _northwind_subset() -> list[SourceDocument]:
    question = next(q for q in _questions() if q.id == BRIDGE_QUESTION)
    docs = [d for d in iter_path(CORPUS / "documents.jsonl") if isinstance(d, SourceDocument)]
    gold = [d for d in docs if d.doc_id in question.gold]
    others = [d for d in docs if d.doc_id not in question.gold][:DISTRACTORS]
    return gold + others


def _questions():  # type: ignore[no-untyped-def]
    return parse_questions((CORPUS / "questions.jsonl").read_text(encoding="utf-8").splitlines())


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, pg_server_dsn: str, embedder) -> Iterator[KgragApp]:  # type: ignore[no-untyped-def]
    import psycopg
    from psycopg.conninfo import make_conninfo

    name = "kgrag_t1_text_graph"
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    settings = KgragSettings(
        data_dir=tmp_path_factory.mktemp("text-graph"),
        pg_dsn=make_conninfo(pg_server_dsn, dbname=name),
        text_graph=True,
        extraction_enabled=False,
        text_graph_timeout_s=60.0,  # a loaded CI machine must not turn the walk into a degraded answer
    )
    with open_embedded(settings, embedder=embedder) as kg:
        outcomes = kg.ingest([*_northwind_subset(), *SECURITY_DOCS])
        assert {o.status for o in outcomes} == {IngestStatus.INDEXED}
        yield kg


def _docs(response: SearchResponse) -> list[str]:
    out: list[str] = []
    for hit in response.hits:
        if hit.doc_id not in out:
            out.append(hit.doc_id)
    return out


def _walked(response: SearchResponse) -> dict[str, object]:
    info = response.limits["text_graph"]
    assert isinstance(info, dict)
    return info


def test_the_text_graph_lifts_the_second_hop_of_a_bridge_question(app: KgragApp) -> None:
    question = next(q for q in _questions() if q.id == BRIDGE_QUESTION)
    hybrid = app.search(question.question, question.caller, top_k=10, text_graph=False)
    walked = app.search(question.question, question.caller, top_k=10, text_graph=True)
    info = _walked(walked)
    assert info["used"] is True and info["degraded"] is False, info
    assert walked.mode == "hybrid+text_graph"
    gold = set(question.gold)
    recall = {name: len(gold & set(_docs(r)[:5])) / len(gold) for name, r in (("hybrid", hybrid), ("tg", walked))}
    assert recall["tg"] > recall["hybrid"], (recall, _docs(hybrid), _docs(walked))
    assert any("text_graph" in h.ranks or "bridge" in h.ranks for h in walked.hits)


def test_a_lookup_stays_hybrid(app: KgragApp) -> None:
    lookup = next(q for q in _questions() if q.type == "lookup")
    hybrid = app.search(lookup.question, lookup.caller, text_graph=False)
    routed = app.search(lookup.question, lookup.caller, text_graph=True)
    assert _walked(routed) == {"used": False, "degraded": False, "reason": "lookup"}
    assert [h.chunk_id for h in routed.hits] == [h.chunk_id for h in hybrid.hits]


def test_a_walk_never_reaches_a_passage_through_a_chunk_the_caller_cannot_read(app: KgragApp) -> None:
    before = app.search(QUESTION, OUTSIDER, top_k=3, text_graph=True)
    assert _walked(before)["used"] is True
    app.ingest([MEMO])
    try:
        outsider = app.search(QUESTION, OUTSIDER, top_k=3, text_graph=True)
        insider = app.search(QUESTION, INSIDER, top_k=3, text_graph=True)
    finally:
        app.delete(MEMO.doc_id)
    # The outsider's ranking is the one they had while the memo did not exist: same passages, same order.
    assert [(h.chunk_id, h.ranks) for h in outsider.hits] == [(h.chunk_id, h.ranks) for h in before.hits]
    assert "t1-zephyr" not in _docs(outsider) and "t1-memo" not in _docs(outsider)
    # Positive control: the reader of the memo gets the bridged passage (the team page) through it.
    assert "t1-memo" in _docs(insider)
    assert "t1-zephyr" in _docs(insider), [(h.doc_id, h.ranks) for h in insider.hits]
    after = app.search(QUESTION, INSIDER, top_k=3, text_graph=True)  # deleted: its edges went with its chunks
    assert "t1-memo" not in _docs(after) and "t1-zephyr" not in _docs(after)


# A three-passage chain: Odile's page names her mentor; only the mentor's page (restricted) names his employer;
# the employer's page names neither Odile nor her mentor.
CHAIN_QUESTION = "In which city is the organisation that employed the mentor of Odile Frant based?"
CHAIN_DOCS = [
    doc("t1-odile", "# Odile Frant\n\nOdile Frant studied under Bastien Roux, who taught her glass work.\n", acl=STAFF),
    doc(
        "t1-bastien",
        "# Bastien Roux\n\nBastien Roux spent twenty years at the Corvel Foundation, leading its glass workshop.\n",
        acl={"groups": ["t1-secret"]},
    ),
    doc("t1-corvel", "# Corvel Foundation\n\nThe Corvel Foundation has its head office in Tarnow.\n", acl=STAFF),
]


def test_a_further_hop_follows_only_passages_the_caller_can_read(app: KgragApp) -> None:
    searcher = app.text_graph_searcher
    assert searcher is not None
    default = searcher.settings
    searcher.settings = replace(default, max_hops=3)
    open_docs, secret = [d for d in CHAIN_DOCS if d.doc_id != "t1-bastien"], CHAIN_DOCS[1]
    app.ingest(open_docs)
    try:
        before = app.search(CHAIN_QUESTION, OUTSIDER, top_k=5, text_graph=True)
        app.ingest([secret])
        outsider = app.search(CHAIN_QUESTION, OUTSIDER, top_k=5, text_graph=True)
        insider = app.search(CHAIN_QUESTION, INSIDER, top_k=5, text_graph=True)
    finally:
        searcher.settings = default
        for d in CHAIN_DOCS:
            app.delete(d.doc_id)
    # The outsider's ranking is the one they had while the mentor's page did not exist.
    assert [(h.chunk_id, h.ranks) for h in outsider.hits] == [(h.chunk_id, h.ranks) for h in before.hits]
    assert "t1-bastien" not in _docs(outsider)
    # Positive control: the reader of the mentor's page reaches the employer's page by a third hop.
    assert _walked(insider)["further_hops"] == 1, _walked(insider)
    assert "t1-bastien" in _docs(insider)
    corvel = [h for h in insider.hits if h.doc_id == "t1-corvel"]
    assert corvel and "bridge" in corvel[0].ranks, [(h.doc_id, h.ranks) for h in insider.hits]


class _CountingQueries:
    """The real embedding model, counting the query texts it embeds (not a fake: it delegates)."""

    def __init__(self, model) -> None:  # type: ignore[no-untyped-def]
        self.model = model
        self.queries: list[str] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.model, name)

    def embed_query(self, text: str) -> tuple[float, ...]:
        self.queries.append(text)
        return tuple(self.model.embed_query(text))


def test_a_walk_embeds_its_question_once_and_overlaps_its_read_on_the_apps_executor(app: KgragApp) -> None:
    from kgrag_core.retrieval.query_vectors import SearchScopedEmbedder

    searcher = app.text_graph_searcher
    assert searcher is not None and searcher.executor is not None  # the runtime's threads, not the core's
    scoped = app.searcher.embedder
    assert isinstance(scoped, SearchScopedEmbedder)
    question = next(q for q in _questions() if q.id == BRIDGE_QUESTION)
    counting = _CountingQueries(scoped.inner)
    scoped.inner = counting  # type: ignore[assignment]
    submitted: list[object] = []
    executor = searcher.executor

    class _Recording:  # the app's executor, recording what the walk hands it
        def submit(self, fn, /, *args):  # type: ignore[no-untyped-def]
            submitted.append(fn)
            return executor.submit(fn, *args)

    searcher.executor = _Recording()  # type: ignore[assignment]
    try:
        overlapped = app.search(question.question, question.caller, top_k=10, text_graph=True)
        walks = len(submitted)
        searcher.executor = None  # the core on its own: the walk reads the neighbourhood after hydration
        inline = app.search(question.question, question.caller, top_k=10, text_graph=True)
    finally:
        searcher.executor = executor
        scoped.inner = counting.model
    assert _walked(overlapped)["used"] is True and walks == 1 and len(submitted) == 1
    # The router and the dense route asked for one vector: one model call per search, two searches.
    assert counting.queries == [question.question, question.question]
    assert [(h.chunk_id, h.score, h.ranks) for h in inline.hits] == [
        (h.chunk_id, h.score, h.ranks) for h in overlapped.hits
    ]


def test_a_chain_starts_only_where_a_name_of_the_question_pins_its_first_passage(app: KgragApp) -> None:
    # chain_max_df=1 (the default): a second readable page on Odile Frant (every node of her name, "frant" of
    # the title line too, now in two passages) makes her first passage a guess.
    fair = doc("t1-fair", "# Odile Frant\n\nOdile Frant showed bowls at the Leipzig glass fair.\n", acl=STAFF)
    app.ingest(CHAIN_DOCS)
    try:
        pinned = app.search(CHAIN_QUESTION, INSIDER, top_k=5, text_graph=True)
        app.ingest([fair])
        guessed = app.search(CHAIN_QUESTION, INSIDER, top_k=5, text_graph=True)
    finally:
        for d in [*CHAIN_DOCS, fair]:
            app.delete(d.doc_id)
    assert _walked(pinned)["further_hops"] == 1, _walked(pinned)  # positive control: the same chain, one page
    assert "t1-corvel" in _docs(pinned)
    assert _walked(guessed)["used"] is True and _walked(guessed)["further_hops"] == 0, _walked(guessed)


class _CountingEmbedder:
    """The real embedding model, counting the names it is asked to embed (not a fake: it delegates)."""

    def __init__(self, model) -> None:  # type: ignore[no-untyped-def]
        self.model = model
        self.names: list[str] = []

    @property
    def dimension(self) -> int:
        return int(self.model.dimension)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.names += texts
        return list(self.model.embed_documents(texts))

    def embed_query(self, text: str) -> list[float]:
        return list(self.model.embed_query(text))


def test_a_new_name_is_embedded_once_and_joins_its_near_identical_name(app: KgragApp, embedder) -> None:  # type: ignore[no-untyped-def]
    # Last in this module: it rebuilds one distractor's edges by hand.
    from kgrag_adapters.postgres.text_graph import PostgresTextGraph
    from kgrag_core.text_graph.builder import TextGraphBuilder
    from kgrag_core.text_graph.model import Passage
    from kgrag_core.text_graph.patterns import PatternPhraseExtractor

    store = app.ingest_log  # the embedded app's PostgreSQL store
    graph = PostgresTextGraph(store.pool, store.installation_key, store.cipher)  # type: ignore[attr-defined]
    counting = _CountingEmbedder(embedder)
    builder = TextGraphBuilder(graph, PatternPhraseExtractor(), embedder=counting)  # type: ignore[arg-type]
    [chunk] = app.searcher.documents.chunks_of("t1-orion")
    passage = Passage(
        chunk.chunk_id, "t1-orion", chunk.acl_class_id, "Orion team", "Orion serves Kestrel Pharmaceuticals."
    )
    first = builder.build("t1-orion", "Orion team", [passage])
    assert "kestrel pharmaceuticals" in counting.names
    # The bundled corpus names "Kestrel Pharma"; the new name is near-identical (MiniLM cosine ~0.90).
    assert first.synonyms >= 1
    embedded = len(counting.names)
    again = builder.build("t1-orion", "Orion team", [passage])
    assert again.new_nodes == 0 and len(counting.names) == embedded  # nothing new: nothing embedded again
