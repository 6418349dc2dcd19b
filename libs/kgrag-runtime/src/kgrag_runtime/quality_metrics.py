"""Answer-quality metrics of one serving process (Prometheus, its own registry: no process-global state).

What the routes and the answerer did, counted as they do it: the route each search took, why the graph
layer was not used or degraded, abstentions and withheld sentences, answer confidence, feedback by issue,
the latency of each stage, and what extraction spent. Backlogs that live in PostgreSQL (chunks still owed
a tier-3 call, entity pairs waiting for review) are read when Prometheus scrapes, so they are never stale.

Label values are bounded sets (routes, modes, reasons mapped to a few words): a metric label never carries
a query, a document id or an error message. The dashboard (helm/kgrag/dashboards/kgrag.json) and the alert
rules (helm/kgrag/templates/prometheus-rules.yaml) use exactly the names registered here; the deploy tests
check that.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kgrag_core.answering.fallback import FALLBACK_REASONS

log = logging.getLogger(__name__)

# Where a search went: the router's question kind when the graph layer is on, else the plain mode.
GRAPH_FALLBACK_REASONS = ("lookup", "nothing_readable", "no_entity_linked", "timeout", "error")
LLM_FALLBACK_REASONS = (*FALLBACK_REASONS, "other")  # kgrag_core.answering.fallback
# What a caller may report about an answer (the feedback endpoint validates against this set).
FEEDBACK_ISSUES = ("wrong", "incomplete", "outdated", "not_cited", "forbidden_content", "other")
_ISSUE_LABEL = re.compile(r"[a-z][a-z0-9_]{0,31}")
STAGES = ("retrieval", "graph", "answer", "ask", "text_graph")
_STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

BacklogSource = Callable[[], Mapping[str, int]]


class ExtractionUsageMetrics:
    """What tier 3 asked of its model: on the query API (embedded extraction) and the extractor service."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.calls = Counter("kgrag_extraction_llm_calls", "Tier-3 model requests answered.", registry=registry)
        self.tokens = Counter(
            "kgrag_extraction_llm_tokens", "Tokens tier 3 sent and received.", ["direction"], registry=registry
        )
        self.spend = Counter(
            "kgrag_extraction_spend",
            "What tier 3 cost at the configured prices (KGRAG_LLM_PRICE_*; 0 when none is set).",
            ["currency"],
            registry=registry,
        )
        for direction in ("input", "output"):
            self.tokens.labels(direction)

    def record(self, *, calls: int, input_tokens: int, output_tokens: int, cost: float, currency: str) -> None:
        self.calls.inc(calls)
        self.tokens.labels("input").inc(input_tokens)
        self.tokens.labels("output").inc(output_tokens)
        self.spend.labels(currency).inc(cost)


class TextGraphMetrics:
    """How long the text graph's ingest handler took per batch: on the query API (embedded ingest) and the
    extractor service (distributed). Walk latency is the `text_graph` stage of `kgrag_stage_seconds`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.build_seconds = Histogram(
            "kgrag_text_graph_build_seconds",
            "Text-graph build time of one ingest batch.",
            buckets=_STAGE_BUCKETS,
            registry=registry,
        )


@dataclass
class QualityMetrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    # Scrape-time backlogs: {"pending_llm_chunks": n, "review_pending": n}; None when the graph is off.
    backlog: BacklogSource | None = None

    def __post_init__(self) -> None:
        r = self.registry
        self.routes = Counter("kgrag_search_routes", "Searches by the route taken.", ["route"], registry=r)
        self.graph_fallbacks = Counter(
            "kgrag_graph_fallbacks",
            "Graph-layer searches answered by plain hybrid search, by reason (timeout and error are degraded).",
            ["reason"],
            registry=r,
        )
        self.graph_degraded = Counter(
            "kgrag_graph_degraded", "Graph-layer searches that failed or overran and fell back degraded.", registry=r
        )
        self.text_graph_degraded = Counter(
            "kgrag_text_graph_degraded", "Text-graph searches that failed or overran, answered by hybrid.", registry=r
        )
        self.answers = Counter("kgrag_answers", "Answers by mode and confidence.", ["mode", "confidence"], registry=r)
        self.abstentions = Counter(
            "kgrag_answer_abstentions", "Answers withheld: abstained (no evidence) or refused.", ["mode"], registry=r
        )
        self.removed_sentences = Counter(
            "kgrag_answer_sentences_removed",
            "Sentences removed from an answer as unsupported by their quotes.",
            registry=r,
        )
        self.llm_fallbacks = Counter(
            "kgrag_answer_llm_fallbacks",
            "LLM answers replaced by the extractive one, by reason.",
            ["reason"],
            registry=r,
        )
        self.feedback = Counter("kgrag_feedback", "Answer feedback received, by issue.", ["issue"], registry=r)
        self.stage_seconds = Histogram(
            "kgrag_stage_seconds", "Latency of one stage of a query.", ["stage"], buckets=_STAGE_BUCKETS, registry=r
        )
        self.extraction = ExtractionUsageMetrics(r)
        self.text_graph = TextGraphMetrics(r)
        # Every labelled series exists from the start, so a rate() or an alert sees 0 rather than no data.
        for reason in GRAPH_FALLBACK_REASONS:
            self.graph_fallbacks.labels(reason)
        for issue in FEEDBACK_ISSUES:
            self.feedback.labels(issue)
        for stage in STAGES:
            self.stage_seconds.labels(stage)
        for mode in ("abstained", "refused"):
            self.abstentions.labels(mode)
        for reason in LLM_FALLBACK_REASONS:
            self.llm_fallbacks.labels(reason)
        r.register(_BacklogCollector(self))

    # --- what the app reports --------------------------------------------------------------------------

    def record_search(self, route: str, *, graph_reason: str | None = None, degraded: bool = False) -> None:
        self.routes.labels(route).inc()
        if graph_reason is not None:
            self.graph_fallbacks.labels(graph_reason).inc()
        if degraded:
            self.graph_degraded.inc()

    def record_answer(
        self, mode: str, confidence: str, *, removed_sentences: int = 0, fallback: str | None = None
    ) -> None:
        self.answers.labels(mode, confidence).inc()
        if fallback is not None:
            self.llm_fallbacks.labels(fallback if fallback in LLM_FALLBACK_REASONS else "other").inc()
        if mode in ("abstained", "refused"):
            self.abstentions.labels(mode).inc()
        if removed_sentences:
            self.removed_sentences.inc(removed_sentences)

    def record_text_graph_search(self, info: Mapping[str, object]) -> None:
        """A text-graph search's `limits["text_graph"]`: its walk latency, or that it degraded."""
        if info.get("degraded"):
            self.text_graph_degraded.inc()
        walk_ms = info.get("walk_ms")
        if isinstance(walk_ms, int | float):
            self.record_stage("text_graph", walk_ms / 1000)

    def record_stage(self, stage: str, seconds: float) -> None:
        self.stage_seconds.labels(stage).observe(seconds)


def record_feedback(metrics: QualityMetrics, issue: str) -> None:
    """Count one piece of answer feedback (`kgrag_feedback_total{issue}`). The feedback endpoint validates
    the issue; here anything that is not a short lower-case word counts as `other`, so no caller-supplied
    text can grow the label set."""
    metrics.feedback.labels(issue if _ISSUE_LABEL.fullmatch(issue) else "other").inc()


def graph_fallback_reason(why_not: object, degraded_reason: str | None) -> str | None:
    """The bounded label for why a graph-layer search was answered by hybrid alone (None: it was not)."""
    if degraded_reason is not None:
        return "timeout" if degraded_reason.startswith("timeout") else "error"
    if not isinstance(why_not, str):
        return None
    label = why_not.replace(" ", "_")
    return label if label in GRAPH_FALLBACK_REASONS else "error"


class _BacklogCollector(Collector):
    """Reads the backlogs from the authoritative store at scrape time; a store that does not answer is
    reported (`kgrag_backlog_up 0`, and the warning logged), never a failed scrape of everything else.
    A process without a knowledge graph (extraction off) reports none of the three."""

    def __init__(self, metrics: QualityMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        source = self._metrics.backlog
        up = GaugeMetricFamily("kgrag_backlog_up", "1 when the backlog counts below were read from the store.")
        pending = GaugeMetricFamily("kgrag_extraction_pending_llm_chunks", "Chunks tier 3 still owes a model call.")
        review = GaugeMetricFamily("kgrag_review_backlog", "Entity pairs waiting for a person's review decision.")
        if source is None:  # no knowledge graph in this process: no backlog to report, and no outage
            return
        try:
            counts = source()
        except Exception as err:  # noqa: BLE001 - a store outage is a value on the scrape, and logged
            log.warning("backlog counts unavailable: %s: %s", type(err).__name__, err)
            up.add_metric([], 0.0)
            yield up
            return
        up.add_metric([], 1.0)
        pending.add_metric([], float(counts.get("pending_llm_chunks", 0)))
        review.add_metric([], float(counts.get("review_pending", 0)))
        yield from (up, pending, review)

    def describe(self) -> Iterator[Metric]:
        return iter(())
