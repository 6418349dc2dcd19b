"""Ingest with the whole default pipeline on, against the embedding model alone on the same chunks.

On the encyclopedic corpus of `prose.py` (one chunk per document), each row in a fresh embedded data
directory, after a 4-document warm-up outside the timing, `KgragApp.ingest` in calls of `--step` documents
(what `kgrag ingest` does, one call per step, so the rate of each step shows whether ingest slows down as the
store grows):

- *fast path only:* KGRAG_EXTRACTION_ENABLED=false (chunk, embed, index, commit);
- *fast path + text graph:* the same with KGRAG_TEXT_GRAPH=true (the passage graph built with ingest); its
  cost is given on top of the fast path, each row against its own model-alone runs;
- *+ extraction:* tiers 0-2 (no LLM configured), KGRAG_RESOLUTION_ENABLED=false;
- *everything:* the defaults: extraction and an entity-resolution pass after every bus batch.

The baseline is the model alone (`embed_documents` in batches of KGRAG_INGEST_BATCH_DOCUMENTS) on the
texts the pipeline embeds (`--model-sample` of them, evenly spaced: the chunks are alike), run before and
after every row; a row is compared with the mean of the two runs around it, so a machine whose load changes
during the benchmark does not favour any row. Each row's wall time is split into the model's calls inside
the pipeline, each handler's own time (model calls excluded) and the rest (the bus, the ingest log).

    uv run python -m kgrag_runtime.benchmarks.ingest --docs 2000 --out bench-results/ingest
    uv run python -m kgrag_runtime.benchmarks.ingest --docs 10000 --rows everything --step 1000
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from kgrag_core.documents import SourceDocument
from kgrag_core.handlers.composite import handler_parts
from kgrag_core.handlers.entity_resolver import EntityResolverHandler
from kgrag_core.handlers.protocol import Handler, HandlerResult
from kgrag_core.ports import Embedder, TokenCounter
from kgrag_runtime.benchmarks.prose import prose_documents
from kgrag_runtime.benchmarks.runner import _embedding_texts, _machine, _model_rate
from kgrag_runtime.ingest_gateway import EmbeddedIngest
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_embedder, open_embedded

ROWS: dict[str, dict[str, bool | str]] = {
    "fast path only": {"extraction_enabled": False},
    # The text graph (issue 13) on the fast path: what it costs on top of chunk, embed, index, commit.
    "fast path + text graph": {"extraction_enabled": False, "text_graph": True},
    # The same with each phrase extractor (KGRAG_TEXT_GRAPH_EXTRACTOR; the row above has the default, patterns):
    # spaCy's NER with the parser's or the tagger's noun phrases, and no model at all (names and links).
    "fast path + text graph (parser)": {
        "extraction_enabled": False,
        "text_graph": True,
        "text_graph_extractor": "parser",
    },
    "fast path + text graph (tagger)": {
        "extraction_enabled": False,
        "text_graph": True,
        "text_graph_extractor": "tagger",
    },
    "fast path + text graph (patterns)": {
        "extraction_enabled": False,
        "text_graph": True,
        "text_graph_extractor": "patterns",
    },
    "+ extraction": {"extraction_enabled": True, "resolution_enabled": False},
    "everything": {"extraction_enabled": True, "resolution_enabled": True},
}
ROW_KEYS = {
    "fast": "fast path only",
    "textgraph": "fast path + text graph",
    "textgraph-parser": "fast path + text graph (parser)",
    "textgraph-tagger": "fast path + text graph (tagger)",
    "textgraph-patterns": "fast path + text graph (patterns)",
    "extraction": "+ extraction",
    "everything": "everything",
}
MODEL = "model (in the pipeline)"


@dataclass
class _Clock:
    """Seconds per part of a row; a handler's time excludes the model calls made inside it."""

    parts: dict[str, float] = field(default_factory=dict)
    in_model: float = 0.0

    def add(self, part: str, seconds: float) -> None:
        self.parts[part] = self.parts.get(part, 0.0) + seconds


@dataclass
class _TimedModel:
    """The embedder, timed (it is also a TokenCounter when the model is, as the indexer expects)."""

    inner: Embedder
    clock: _Clock

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        started = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)
        finally:
            took = time.perf_counter() - started
            self.clock.add(MODEL, took)
            self.clock.in_model += took

    def embed_query(self, text: str) -> tuple[float, ...]:
        return self.inner.embed_query(text)

    def count_tokens(self, text: str) -> int:
        if isinstance(self.inner, TokenCounter):
            return self.inner.count_tokens(text)
        raise TypeError("the model has no tokenizer")


class _TimedHandler:
    def __init__(self, inner: Handler, clock: _Clock) -> None:
        self.inner, self.clock = inner, clock
        self.name, self.topics = inner.name, tuple(inner.topics)

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        started, model_before = time.perf_counter(), self.clock.in_model
        try:
            return self.inner.handle(topic, batch)
        finally:
            model_s = self.clock.in_model - model_before
            self.clock.add(self.inner.name, time.perf_counter() - started - model_s)


def run_ingest_benchmark(
    settings: KgragSettings,
    docs: int,
    rows: Sequence[str],
    step: int,
    model_sample: int,
    console: Console,
    step_model_sample: int = 0,
    on_progress: Callable[[dict[str, object]], None] | None = None,
) -> dict[str, object]:
    items = list(prose_documents(docs))
    embedder = build_embedder(settings)
    texts = _embedding_texts(items, settings, embedder)
    every = max(1, len(texts) // max(1, model_sample))
    sample = texts[::every][:model_sample]
    batch = settings.ingest_batch_documents
    embedder.embed_documents(texts[:batch])  # the model's first call pays for its session
    console.print(f"Ingest benchmark: {docs} documents, {len(texts)} chunks; model alone on {len(sample)}…")
    load_start = os.getloadavg()
    model_runs = [_model_rate(embedder, sample, batch)]
    measured: list[dict[str, object]] = []
    # A short model-alone run after every step gives each step a baseline of its own moment: on a machine
    # whose load swings, the step's ratio to it is what shows whether ingest slows down as the store grows.
    step_texts = sample[:: max(1, len(sample) // max(1, step_model_sample))][:step_model_sample]

    def result(partial: dict[str, object] | None = None) -> dict[str, object]:
        return {
            "machine": _machine(),
            "load_average_start": load_start,
            "load_average_end": os.getloadavg(),
            "documents": docs,
            "chunks": len(texts),
            "model_sample": len(sample),
            "model_chunks_per_s_runs": model_runs,
            "rows": measured,
            **({"in_progress": partial} if partial is not None else {}),
        }

    def step_model() -> float | None:
        return _model_rate(embedder, step_texts, batch) if step_texts else None

    def progress(partial: dict[str, object]) -> None:
        if on_progress is not None:
            on_progress(result(partial))

    for name in rows:
        row = _row(settings, name, items, step, embedder, console, step_model, progress)
        model_runs.append(_model_rate(embedder, sample, batch))
        model = (model_runs[-2] + model_runs[-1]) / 2
        row["model_chunks_per_s"] = model
        row["pipeline_over_model"] = float(row["chunks_per_s"]) / model  # type: ignore[arg-type]
        measured.append(row)
        progress({})
    return result()


def _row(
    settings: KgragSettings,
    name: str,
    items: list[SourceDocument],
    step: int,
    embedder: Embedder,
    console: Console,
    step_model: Callable[[], float | None] = lambda: None,
    progress: Callable[[dict[str, object]], None] = lambda partial: None,
) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = settings.model_copy(update={"data_dir": Path(tmp), "pg_dsn": None, **ROWS[name]})
        clock = _Clock()
        with open_embedded(cfg, embedder=_TimedModel(embedder, clock)) as kg:
            assert isinstance(kg.ingestion, EmbeddedIngest)
            kg.ingestion.handlers = [_TimedHandler(h, clock) for h in kg.ingestion.handlers]
            kg.ingest(list(prose_documents(4, seed=99)))  # loads spaCy and runs the first (full) pass
            clock.parts.clear()
            steps: list[dict[str, float]] = []
            chunks = 0
            started, outside = time.perf_counter(), 0.0  # outside: the per-step model runs, not the row's time
            for start in range(0, len(items), step):
                part = items[start : start + step]
                t0 = time.perf_counter()
                outcomes = kg.ingest(part)
                took = time.perf_counter() - t0
                n = sum(o.chunks_total for o in outcomes)
                chunks += n
                done: dict[str, float] = {
                    "documents": len(part),
                    "chunks": n,
                    "s": took,
                    "docs_per_s": len(part) / took,
                }
                t1 = time.perf_counter()
                model = step_model()
                outside += time.perf_counter() - t1
                if model is not None:
                    done |= {"model_chunks_per_s": model, "pipeline_over_model": n / took / model}
                steps.append(done)
                timed = handler_parts([h.inner for h in kg.ingestion.handlers if isinstance(h, _TimedHandler)])
                reports = [h.last_report for h in timed if isinstance(h, EntityResolverHandler) and h.last_report]
                last_pass = reports[0].as_dict() if reports else None
                progress({"row": name, "steps": steps, "parts_s": dict(clock.parts), "last_resolution_pass": last_pass})
                console.print(
                    f"  {name}: {start + len(part)} documents, {len(part) / took:.1f} docs/s this step"
                    + (f", model alone {model:.1f} chunks/s" if model is not None else "")
                )
            total_s = time.perf_counter() - started - outside
            status = kg.status()
            backlog = kg.graph.store.backlog_counts() if kg.graph is not None else {}
            resolvers = handler_parts([h.inner for h in kg.ingestion.handlers if isinstance(h, _TimedHandler)])
            last = [h.last_report for h in resolvers if isinstance(h, EntityResolverHandler)]
    extraction = status.get("extraction")
    parts = dict(sorted(clock.parts.items()))
    parts["other"] = total_s - sum(parts.values())
    return {
        "row": name,
        "documents": len(items),
        "chunks": chunks,
        "s": total_s,
        "docs_per_s": len(items) / total_s,
        "chunks_per_s": chunks / total_s,
        "steps": steps,
        "parts_s": parts,
        "extraction": extraction if isinstance(extraction, dict) else None,
        "review_pending": backlog.get("review_pending"),
        # The last incremental pass: how much of the graph one batch's pass reads and compares.
        "last_resolution_pass": last[0].as_dict() if last and last[0] is not None else None,
    }


def ingest_markdown(result: dict[str, object]) -> str:
    rows: list[dict[str, object]] = result["rows"]  # type: ignore[assignment]
    lines = [
        f"Machine: {result['machine']}; 1/5/15-minute load average {_load(result['load_average_start'])} at the"
        f" start, {_load(result['load_average_end'])} at the end",
        "",
        f"| {result['documents']} documents, {result['chunks']} chunks | docs/s | chunks/s"
        f" | model alone chunks/s (runs around the row, {result['model_sample']} chunks) | pipeline / model |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['row']} | {row['docs_per_s']:.1f} | {row['chunks_per_s']:.1f} | {row['model_chunks_per_s']:.1f}"
            f" | {row['pipeline_over_model']:.2f} |"
        )
    lines += _text_graph_cost(rows)
    names = sorted({p for row in rows for p in row["parts_s"]} - {MODEL, "other"})  # type: ignore[attr-defined]
    columns = [MODEL, *names, "other"]
    lines += ["", "| share of the row's wall time | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for row in rows:
        parts: dict[str, float] = row["parts_s"]  # type: ignore[assignment]
        total = float(row["s"])  # type: ignore[arg-type]
        cells = [f"{100 * parts.get(c, 0.0) / total:.0f} %" for c in columns]
        lines.append(f"| {row['row']} | " + " | ".join(cells) + " |")
    for row in rows:
        last = row.get("last_resolution_pass")
        if isinstance(last, dict):
            lines += ["", f"Last resolution pass of '{row['row']}': " + ", ".join(f"{k} {v}" for k, v in last.items())]
    lines += ["", "Per ingest call (documents ingested so far: docs/s of that call):", ""]
    for row in rows:
        done, cells = 0, []
        for step in row["steps"]:  # type: ignore[attr-defined]
            done += step["documents"]
            ratio = f" ({step['pipeline_over_model']:.2f} of the model)" if "pipeline_over_model" in step else ""
            cells.append(f"{done}: {step['docs_per_s']:.1f}{ratio}")
        lines.append(f"- {row['row']}: " + ", ".join(cells))
    return "\n".join(lines) + "\n"


def _text_graph_cost(rows: Sequence[dict[str, object]]) -> list[str]:
    """Each text-graph row's cost on top of the fast path; each row's rate is taken relative to the model-alone
    runs around it, so that a change of load between the two rows is not counted as cost."""
    by_name = {row["row"]: row for row in rows}
    fast = by_name.get("fast path only")
    if fast is None:
        return []
    out: list[str] = []
    for name, graph in by_name.items():
        if not str(name).startswith("fast path + text graph"):
            continue
        cost = float(fast["pipeline_over_model"]) / float(graph["pipeline_over_model"]) - 1  # type: ignore[arg-type]
        raw = float(fast["docs_per_s"]) / float(graph["docs_per_s"]) - 1  # type: ignore[arg-type]
        label = "Text graph" + str(name).removeprefix("fast path + text graph")
        out += ["", f"{label} on top of the fast path: {100 * cost:+.1f} % ingest time ({100 * raw:+.1f} % raw)."]
    return out


def _load(values: object) -> str:
    return " / ".join(f"{v:.1f}" for v in values)  # type: ignore[attr-defined]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--step", type=int, default=500, help="documents per ingest call")
    parser.add_argument(
        "--rows", default="fast,textgraph,extraction,everything", help="comma-separated: " + ",".join(ROW_KEYS)
    )
    parser.add_argument("--model-sample", type=int, default=500, help="chunks for each model-alone run")
    parser.add_argument(
        "--step-model-sample", type=int, default=0, help="chunks for a model-alone run after every step (0: none)"
    )
    parser.add_argument("--out", type=Path, default=Path("bench-results/ingest"))
    args = parser.parse_args(argv)
    rows = [ROW_KEYS[r.strip()] for r in args.rows.split(",") if r.strip()]
    console = Console(stderr=True)
    args.out.mkdir(parents=True, exist_ok=True)

    def save_progress(partial: dict[str, object]) -> None:  # a run cut short still leaves its steps
        (args.out / "ingest.partial.json").write_text(json.dumps(partial, indent=2))

    result = run_ingest_benchmark(
        KgragSettings(), args.docs, rows, args.step, args.model_sample, console, args.step_model_sample, save_progress
    )
    (args.out / "ingest.json").write_text(json.dumps(result, indent=2))
    markdown = ingest_markdown(result)
    (args.out / "ingest.md").write_text(markdown)
    console.print(markdown)


if __name__ == "__main__":
    main()
