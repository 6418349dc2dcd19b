"""Ask latency at 10k chunks (issue 11): without an LLM, and the time to the first verified sentence
with a FAKE streaming model, next to the same model not streamed (the same-run baseline).

The index is the search benchmark's (`runner._load`: synthetic chunks, bag-of-words vectors, a quarter of
the documents unreadable to the caller), on embedded PostgreSQL, Qdrant Edge and tantivy. Each query is
answered four ways, in turn, so a machine whose load changes favours none of them:

- *no LLM:* search, extractive answer, sentence verification (the `sentences` style);
- *composed, no LLM:* search, the structured context over synthetic claims (two per top hit about the
  question's first word: a current value and the one it superseded, quoting the hit), the composed answer
  and its verification against the context's support facts (the embedded default's path after the graph
  reads; those are measured in the graph benchmark, not here);
- *fake model, not streamed:* search, then the whole reply at once, verified (`answer_or_fallback`);
- *fake model, streamed:* search, then the reply piece by piece (`streaming.stream_answer`): the time to
  the first verified sentence and to the whole answer.

The FAKE model is not a model: it replies with the top hits' own opening words as quoted sentences (so
every one verifies), `--token-chars` characters per piece, sleeping `--token-latency-ms` before each,
like a remote model generating tokens.

    uv run python -m kgrag_runtime.benchmarks.answers --chunks 10000 --queries 30 --out bench-results/answers
"""

from __future__ import annotations

import argparse
import json
import random
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from rich.console import Console

from kgrag_adapters.postgres.embedded import EmbeddedPostgres
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_adapters.qdrant_edge.vector_index import EdgeVectorIndex
from kgrag_adapters.tantivy.keyword_index import TantivyKeywordIndex
from kgrag_core.acl import PUBLIC_ACL, Caller, acl_from_source
from kgrag_core.answering.compose import composed_answer
from kgrag_core.answering.context import build_context
from kgrag_core.answering.extractive import extractive_answer
from kgrag_core.answering.fallback import answer_or_fallback
from kgrag_core.answering.model import Answer
from kgrag_core.answering.streaming import StreamedSentence, stream_answer
from kgrag_core.answering.verification import verify_answer
from kgrag_core.extraction.model import Modality, Polarity, Tier
from kgrag_core.extraction.records import ClaimRecord, ClaimStatus
from kgrag_core.graph_retrieval.searcher import EstimatedTokens
from kgrag_core.ports import ChatMessage
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_core.search import SearchHit
from kgrag_runtime.answer_flow import supporting_facts
from kgrag_runtime.benchmarks.runner import CHUNKS_PER_DOC, _load, _machine
from kgrag_runtime.benchmarks.synthetic import WORDS, bag_of_words_vectors, synthetic_texts
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_embedder

EVIDENCE = 8
# A source in the prompt (`generative.build_messages`): "[n] title — breadcrumb", then its text.
_SOURCE = re.compile(r"^\[(\d+)\] [^\n]*\n([^\n]+)", re.MULTILINE)


class FakeStreamingChat:
    """FAKE chat model for the benchmark: quotes the first words of its first sources, token by token."""

    def __init__(self, token_latency_s: float, token_chars: int, sentences: int = 3, words: int = 12) -> None:
        self._latency_s = token_latency_s
        self._chars = token_chars
        self._sentences = sentences
        self._words = words

    @property
    def model_id(self) -> str:
        return "fake-streaming-llm"

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, object] | None = None) -> str:
        return "".join(self.stream(messages, json_schema=json_schema))

    def stream(
        self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, object] | None = None
    ) -> Iterator[str]:
        reply = self._reply(messages[-1].content)
        for start in range(0, len(reply), self._chars):
            time.sleep(self._latency_s)
            yield reply[start : start + self._chars]

    def _reply(self, prompt: str) -> str:
        items = []
        for match in list(_SOURCE.finditer(prompt))[: self._sentences]:
            quote = " ".join(match.group(2).split()[: self._words])
            items.append({"text": quote + ".", "evidence": [{"source": int(match.group(1)), "quote": quote}]})
        return json.dumps({"insufficient_evidence": not items, "sentences": items})


def run_answer_benchmarks(
    settings: KgragSettings, console: Console, *, chunks: int, queries: int, token_latency_s: float, token_chars: int
) -> dict[str, object]:
    console.print(f"Answer benchmark at {chunks} chunks: building the index…")
    texts = synthetic_texts(chunks)
    embedder = build_embedder(settings)
    vectors = bag_of_words_vectors(texts, embedder.dimension)
    finance = acl_from_source({"groups": ["finance"]})
    acl_of = [finance if (i // CHUNKS_PER_DOC) % 4 == 3 else PUBLIC_ACL for i in range(chunks)]
    rng = random.Random(17)
    questions = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6))) + "?" for _ in range(queries)]
    caller = Caller(user="bench", groups=("engineering",))
    model = FakeStreamingChat(token_latency_s, token_chars)
    rows: dict[str, list[float]] = {
        "no_llm": [],
        "composed": [],
        "not_streamed": [],
        "first_sentence": [],
        "streamed_whole": [],
    }
    answered = {"no_llm": 0, "composed": 0, "not_streamed": 0, "streamed": 0}
    with (
        tempfile.TemporaryDirectory() as tmp,
        EmbeddedPostgres(Path(tmp) / "pg") as pg,
        PostgresStore.connect(pg.dsn) as store,
    ):
        vindex = EdgeVectorIndex(Path(tmp) / "qdrant", embedder.dimension)
        kindex = TantivyKeywordIndex(Path(tmp) / "bm25")
        _load(store, vindex, kindex, texts, vectors, acl_of)
        searcher = HybridSearcher(store, store, vindex, kindex, embedder)
        searcher.search(questions[0], caller)  # warm-up
        for i, question in enumerate(questions):
            console.print(f"  question {i + 1}/{len(questions)}", end="\r")

            started = time.perf_counter()
            hits = searcher.search(question, caller, top_k=EVIDENCE).hits
            plain = verify_answer(extractive_answer(question, hits))
            rows["no_llm"].append(_ms(started))
            answered["no_llm"] += plain.answered

            started = time.perf_counter()
            response = searcher.search(question, caller, top_k=EVIDENCE)
            context = build_context(
                question, response.hits, claims=_synthetic_claims(question, response.hits), counter=EstimatedTokens()
            )
            composed = verify_answer(composed_answer(context), supporting_facts(response, context))
            rows["composed"].append(_ms(started))
            answered["composed"] += composed.answered

            started = time.perf_counter()
            hits = searcher.search(question, caller, top_k=EVIDENCE).hits
            whole = answer_or_fallback(question, hits, model, _extractive(question, hits))
            rows["not_streamed"].append(_ms(started))
            answered["not_streamed"] += whole.answered and whole.fallback is None

            started = time.perf_counter()
            hits = searcher.search(question, caller, top_k=EVIDENCE).hits
            first: float | None = None
            final: Answer | None = None
            for event in stream_answer(question, hits, model, _extractive(question, hits)):
                if isinstance(event, StreamedSentence) and first is None:
                    first = _ms(started)
                elif isinstance(event, Answer):
                    final = event
            rows["streamed_whole"].append(_ms(started))
            if first is not None and final is not None and final.fallback is None:
                rows["first_sentence"].append(first)
                answered["streamed"] += 1
        vindex.close()
        kindex.close()
    return {
        "machine": _machine(),
        "chunks": chunks,
        "queries": queries,
        "token_latency_ms": token_latency_s * 1000,
        "token_chars": token_chars,
        "answered": answered,
        "latency_ms": {name: _percentiles(values) for name, values in rows.items()},
    }


def _synthetic_claims(question: str, hits: Sequence[SearchHit], per_question: int = 4) -> list[ClaimRecord]:
    """Two claims per top hit about the question's first word: the hit's opening words as the quote, its
    third word as a current value and its second as the value that one superseded."""
    entity, attribute = [*question.rstrip("?").split(), "entity", "attribute"][:2]
    out: list[ClaimRecord] = []
    for i, hit in enumerate(hits[:per_question]):
        words = hit.text.split()
        if len(words) < 3:
            continue
        quote = " ".join(words[:6])
        for status, value in ((ClaimStatus.CURRENT, words[2]), (ClaimStatus.SUPERSEDED, words[1])):
            out.append(
                ClaimRecord(
                    claim_id=f"clm_{i}_{status.value}",
                    entity_id=f"ent_{entity}",
                    entity_name=entity,
                    entity_type="Thing",
                    attribute=attribute,
                    value=value,
                    quote=quote,
                    modality=Modality.FACT,
                    polarity=Polarity.POSITIVE,
                    valid_from=None,
                    valid_to=None,
                    written_at=hit.doc_time.date() if hit.doc_time else None,
                    chunk_id=hit.chunk_id,
                    doc_id=hit.doc_id,
                    acl_class_id="acl_bench",
                    tier=Tier.LLM,
                    confidence=0.9,
                    status=status,
                    superseded_by=f"clm_{i}_current" if status is ClaimStatus.SUPERSEDED else None,
                )
            )
    return out


def _extractive(question: str, hits: Sequence[SearchHit]) -> Callable[[], Answer]:
    return lambda: extractive_answer(question, hits)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": float("nan"), "p95": float("nan"), "n": 0}
    ordered = sorted(values)
    return {
        "p50": ordered[len(ordered) // 2],
        "p95": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
        "n": len(ordered),
    }


def answers_markdown(results: Mapping[str, object]) -> str:
    latency = results["latency_ms"]
    assert isinstance(latency, dict)
    labels = [
        ("no_llm", "ask, no LLM (extractive + verification)"),
        ("composed", "ask, no LLM, composed (context over synthetic claims + compose + verification)"),
        ("not_streamed", "ask, fake model not streamed: the whole answer (baseline)"),
        ("first_sentence", "ask, fake model streamed: first verified sentence"),
        ("streamed_whole", "ask, fake model streamed: the whole answer"),
    ]
    lines = [
        f"Machine: {results['machine']}",
        "",
        f"{results['chunks']} chunks, {results['queries']} questions, fake model: "
        f"{results['token_latency_ms']:g} ms per {results['token_chars']}-character piece; answered: "
        f"{results['answered']}",
        "",
        "| ask | p50 ms | p95 ms | n |",
        "|---|---|---|---|",
    ]
    for key, label in labels:
        row = latency[key]
        lines.append(f"| {label} | {row['p50']:.1f} | {row['p95']:.1f} | {row['n']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--token-latency-ms", type=float, default=20.0)
    parser.add_argument("--token-chars", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("bench-results/answers"))
    args = parser.parse_args()
    console = Console(stderr=True)
    results = run_answer_benchmarks(
        KgragSettings(),
        console,
        chunks=args.chunks,
        queries=args.queries,
        token_latency_s=args.token_latency_ms / 1000,
        token_chars=args.token_chars,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=2))
    markdown = answers_markdown(results)
    (args.out / "results.md").write_text(markdown)
    console.print(markdown)


if __name__ == "__main__":
    main()
