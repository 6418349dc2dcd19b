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
        "latency_ms": {k: row for k in ("no_llm", "not_streamed", "first_sentence", "streamed_whole")},
    }
    table = answers_markdown(results)
    assert table.count("| 1.0 | 2.0 | 3 |") == 4 and "first verified sentence" in table
