"""Evaluation as a service: run a bundled suite in the background, keep the report, compare with a baseline.

Isolation: a run never touches the serving index. It builds a fresh embedded index of the suite's corpus in a
temporary folder (its own PostgreSQL, vector and BM25 indexes, key ring), scores it with the harness of
`kgrag eval`, and deletes the folder. What it shares with the serving process is read-only: the embedding
model, the answering model (when one is configured, so the run measures its answers and their cost) and the
settings (chunking, graph budgets, prices). Tier 3 extraction in the run reads the suite's reply book or
nothing: a run never calls the extraction model. Only the report is written, to the serving PostgreSQL's
`eval_runs` table.

One run at a time per process: starting a suite while a run is in progress returns that run.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgrag_core.chunking import estimate_tokens
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.evaluation.runs import FAILED, RUNNING, SUCCEEDED, EvalRun, EvalRunStore, regressions
from kgrag_core.ports import ChatMessage, ChatModel, Embedder
from kgrag_runtime.background import BackgroundRuns
from kgrag_runtime.evaluation.suites import BUNDLED_SUITES_DIR, SUITES, EvalConfig, EvalSuite, suite_named
from kgrag_runtime.settings import KgragSettings

if TYPE_CHECKING:  # the extraction package is never imported by a search (tests/pipeline/test_cli_imports.py)
    from kgrag_core.extraction.rerun import CostModel

log = logging.getLogger(__name__)
KIND = "eval"
MAX_LISTED = 200


class MeteredChatModel:
    """The answering model, counting what it is sent and replies (estimated tokens) to price each answer."""

    def __init__(self, inner: ChatModel, prices: CostModel) -> None:
        self._inner = inner
        self._prices = prices
        self._lock = threading.Lock()
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    def complete(self, messages: Sequence[ChatMessage], *, json_schema: Mapping[str, object] | None = None) -> str:
        reply = self._inner.complete(messages, json_schema=json_schema)
        sent = sum(estimate_tokens(m.content) for m in messages)
        with self._lock:
            self.calls += 1
            self.input_tokens += sent
            self.output_tokens += estimate_tokens(reply)
        return reply

    def spent(self) -> float:
        with self._lock:
            return self._prices.cost(self.input_tokens, self.output_tokens)


def isolated_settings(
    settings: KgragSettings, data_dir: Path, reply_book: Path | None, *, graph: bool = True
) -> KgragSettings:
    """The serving settings, pointed at a throwaway embedded index with no model of its own. Without the
    graph configuration nothing reads a graph, so none is extracted (no NER model, a faster run)."""
    update: dict[str, Any] = {
        "extraction_enabled": settings.extraction_enabled and graph,
        "data_dir": data_dir,
        "runtime": "embedded",
        "pg_dsn": None,
        "pg_idle_shutdown_s": 0,
        "kek": None,
        "kek_previous": None,
        "kek_dir": None,
        # The run's app gets the serving answer model itself (metered); its extraction gets none.
        "llm_base_url": None,
        "llm_model": None,
        "llm_api_key": None,
        "llm_replay_dir": None,
        "llm_record_dir": None,
        "extraction_reply_book": reply_book,
        "answer_cache_ttl_s": 0,  # every question is answered, not served from a cache
        "graph_retrieval": False,  # the harness asks for the graph per configuration
    }
    if reply_book is not None:
        update["extraction_priority_sources"] = ["*"]  # a full tier-3 pass, as `kgrag eval --reply-book`
    return settings.model_copy(update=update)


def evaluate_suite(
    settings: KgragSettings, suite: EvalSuite, config: EvalConfig, *, embedder: Embedder, llm: ChatModel | None
) -> dict[str, object]:
    """Index the suite's corpus in a temporary folder, score it, and return the report to store."""
    from kgrag_adapters.connectors import iter_path
    from kgrag_runtime.evaluation.runner import run_evaluation
    from kgrag_runtime.extraction import cost_model
    from kgrag_runtime.wiring import open_embedded

    questions, corpus, book = suite.paths(settings.eval_suites_dir or BUNDLED_SUITES_DIR)
    if config.reply_book and book is None:
        raise KgragError(ErrorCode.INVALID_QUERY, f"Suite {suite.name!r} has no reply book.")
    prices = cost_model(settings)
    metered = MeteredChatModel(llm, prices) if llm is not None else None
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kgrag-eval-") as tmp:
        book_used = book if config.reply_book else None
        run_settings = isolated_settings(settings, Path(tmp) / "index", book_used, graph=config.graph)
        with open_embedded(run_settings, embedder=embedder) as app:
            app.llm = metered
            wanted = set(suite.doc_ids) if suite.doc_ids is not None else None
            items = [i for path in corpus for i in iter_path(path) if wanted is None or i.doc_id in wanted]
            app.ingest(items)
            index = app.status()
            report = run_evaluation(
                app,
                questions,
                budget_tokens=config.budget_tokens,
                progress_console=None,
                graph=config.graph,
                only=suite.question_ids,
                meter=metered.spent if metered is not None else None,
            )
    queries = report["queries"]
    answers = _answers(queries)
    total = metered.spent() if metered is not None else 0.0
    graph = report.get("graph")
    return {
        "suite": suite.name,
        "questions": report["questions"],
        "budget_tokens": report["budget_tokens"],
        "per_type": report["per_type"],
        "sign_tests": report["sign_tests"],
        "latency_ms": report["latency_ms"],
        "graph": graph,  # router accuracy and confusion, degraded and graph-used counts, wins/losses per type
        "per_split": report.get("per_split"),
        "answers": _without_per_question(report.get("answers")),  # answer metrics per answerer, split, type
        "router": report.get("router"),  # rules against the learned router, per split
        "queries": queries,
        "cost": {
            "llm": metered.model_id if metered is not None else None,
            "currency": prices.currency,
            "priced": prices.input_price_per_mtok is not None or prices.output_price_per_mtok is not None,
            "tokens_estimated": True,
            "calls": metered.calls if metered is not None else 0,
            "input_tokens": metered.input_tokens if metered is not None else 0,
            "output_tokens": metered.output_tokens if metered is not None else 0,
            "total": round(total, 6),
            "per_answer_mean": round(total / answers, 6) if answers else 0.0,
        },
        "index": {"documents": index["documents"], "chunks": index["chunks"], "isolated": True},
        "seconds": round(time.perf_counter() - started, 1),
    }


@dataclass
class EvalService:
    settings: KgragSettings
    store: EvalRunStore
    embedder: Embedder
    llm: ChatModel | None = None
    background: BackgroundRuns = field(default_factory=BackgroundRuns)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _current: str | None = None

    def suites(self) -> list[dict[str, object]]:
        return [SUITES[name].as_dict() for name in sorted(SUITES)]

    def start(self, suite_name: str, config: EvalConfig) -> EvalRun:
        """Start a run in the background (or return the one in progress); poll `run(run_id)`."""
        suite = self._checked(suite_name, config)
        with self._lock:
            if self._current is not None and self.background.get(self._current).status == RUNNING:
                current = self.store.eval_run(self._current)
                if current is not None:
                    return current
            run = self.store.create_eval_run(_new_id(), suite.name, config.model_dump())
            self._current = run.run_id
            self.background.start(KIND, lambda: self._work(run.run_id, suite, config), run_id=run.run_id)
        return run

    def run_now(self, suite_name: str, config: EvalConfig) -> dict[str, object]:
        """Run in the calling thread (the CLI) and return the finished run, stored like any other."""
        suite = self._checked(suite_name, config)
        run = self.store.create_eval_run(_new_id(), suite.name, config.model_dump())
        try:
            self._work(run.run_id, suite, config)
        except KgragError as err:  # handled: stored as the run's error, which the returned run carries
            log.warning("eval run %s failed: %s", run.run_id, err.code.value)
        return self.run(run.run_id)

    def run(self, run_id: str) -> dict[str, object]:
        """A run with its report, and its regressions against the suite's baseline when both exist."""
        found = self.store.eval_run(run_id)
        if found is None:
            raise KgragError(
                ErrorCode.RUN_NOT_FOUND,
                f"No eval run {run_id!r}.",
                hint="List the runs with GET /v1/admin/eval or `kgrag eval-runs list`.",
            )
        out = found.as_dict()
        baseline = self.store.eval_baseline(found.suite)
        out["baseline_run_id"] = baseline.run_id if baseline is not None else None
        out["regressions"] = None
        if found.status == SUCCEEDED and found.report is not None and baseline is not None and baseline.report:
            out["regressions"] = [r.as_dict() for r in regressions(found.report, baseline.report)]
        return out

    def runs(self, limit: int = 50) -> list[dict[str, object]]:
        """The newest runs, without their reports."""
        listed = []
        for run in self.store.eval_runs(min(limit, MAX_LISTED)):
            row = run.as_dict()
            del row["report"]
            listed.append(row)
        return listed

    def mark_baseline(self, run_id: str) -> dict[str, object]:
        self.store.mark_eval_baseline(run_id)
        return self.run(run_id)

    def _checked(self, suite_name: str, config: EvalConfig) -> EvalSuite:
        suite = suite_named(suite_name)
        _, _, book = suite.paths(self.settings.eval_suites_dir or BUNDLED_SUITES_DIR)  # fail now, not in a thread
        if config.reply_book and book is None:
            raise KgragError(ErrorCode.INVALID_QUERY, f"Suite {suite.name!r} has no reply book.")
        return suite

    def _work(self, run_id: str, suite: EvalSuite, config: EvalConfig) -> dict[str, object]:
        try:
            report = evaluate_suite(self.settings, suite, config, embedder=self.embedder, llm=self.llm)
        except KgragError as err:
            self.store.finish_eval_run(run_id, status=FAILED, error=err.as_dict())
            raise
        except Exception as err:
            error = {"code": ErrorCode.INTERNAL.value, "message": f"{type(err).__name__}: {err}"[:500]}
            self.store.finish_eval_run(run_id, status=FAILED, error=error)
            raise
        self.store.finish_eval_run(run_id, status=SUCCEEDED, report=report)
        return {"run_id": run_id, "questions": report["questions"]}


def _answers(queries: object) -> int:
    """How many answers the run asked for (one per configuration that answers, per question)."""
    if not isinstance(queries, list):
        return 0
    return sum(len(q["ask_ms"]) for q in queries if isinstance(q, dict) and isinstance(q.get("ask_ms"), dict))


def _without_per_question(answers: object) -> object:
    if not isinstance(answers, Mapping):
        return answers
    return {k: v for k, v in answers.items() if k != "per_question"}


def _new_id() -> str:
    return f"eval-{uuid.uuid4().hex[:12]}"
