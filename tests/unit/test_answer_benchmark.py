"""The answer benchmark's FAKE streaming model writes sentences that pass verification, so the benchmark
times verified sentences, and the table has every row."""

from __future__ import annotations

from kgrag_core.answering.extractive import extractive_answer
from kgrag_core.answering.model import Answer, AnswerMode
from kgrag_core.answering.streaming import StreamedSentence, stream_answer
from kgrag_core.search import SearchHit
from kgrag_runtime.benchmarks.answers import FakeStreamingChat, answers_markdown
from kgrag_runtime.benchmarks.synthetic import synthetic_texts


def test_the_fake_models_sentences_verify_and_arrive_one_by_one() -> None:
    texts = synthetic_texts(4)
    hits = [SearchHit(f"c{i}", f"d{i}", f"Doc {i}", "u", "bench", (), 0, len(t), t, 1.0) for i, t in enumerate(texts)]
    model = FakeStreamingChat(token_latency_s=0.0, token_chars=4)
    events = list(stream_answer("q?", hits, model, lambda: extractive_answer("q?", hits)))
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.mode is AnswerMode.LLM and answer.removed_sentences == 0
    assert [e.sentence.text for e in events[:-1] if isinstance(e, StreamedSentence)] == [
        s.text for s in answer.sentences
    ]
    assert len(answer.sentences) == 3 and {c.chunk_id for c in answer.citations} == {"c0", "c1", "c2"}


def test_the_table_has_a_row_per_measurement() -> None:
    row = {"p50": 1.0, "p95": 2.0, "n": 3}
    results = {
        "machine": "m",
        "chunks": 10,
        "queries": 3,
        "token_latency_ms": 20.0,
        "token_chars": 4,
        "answered": {},
        "latency_ms": {k: row for k in ("no_llm", "composed", "not_streamed", "first_sentence", "streamed_whole")},
    }
    table = answers_markdown(results)
    assert table.count("| 1.0 | 2.0 | 3 |") == 5 and "first verified sentence" in table and "composed" in table


def test_the_composed_row_answers_from_its_synthetic_claims_and_verifies() -> None:
    """The composed row times a real composition: its synthetic claims are about the question, so the answer
    leads with the current value and tells the superseded one as history, and verification keeps them."""
    from datetime import datetime

    from kgrag_core.answering.compose import composed_answer
    from kgrag_core.answering.context import build_context
    from kgrag_core.answering.verification import verify_answer
    from kgrag_core.graph_retrieval.searcher import EstimatedTokens
    from kgrag_core.search import SearchResponse
    from kgrag_runtime.answer_flow import supporting_facts
    from kgrag_runtime.benchmarks.answers import _synthetic_claims

    texts = synthetic_texts(4)
    hits = [
        SearchHit(f"c{i}", f"d{i}", f"Doc {i}", "u", "bench", (), 0, len(t), t, 1.0, doc_time=datetime(2024, 1, 1 + i))
        for i, t in enumerate(texts)
    ]
    question = "zeta capacity?"
    claims = _synthetic_claims(question, hits)
    context = build_context(question, hits, claims=claims, counter=EstimatedTokens())
    answer = verify_answer(
        composed_answer(context), supporting_facts(SearchResponse(question, tuple(hits), "hybrid"), context)
    )
    assert answer.answered and answer.removed_sentences == 0
    assert answer.sentences[0].text.startswith("zeta's capacity is"), answer.sentences[0].text
    assert any(s.text.startswith("Until") or s.text.startswith("Earlier") for s in answer.sentences)
