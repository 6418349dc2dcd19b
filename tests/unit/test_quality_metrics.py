"""The quality metrics' own rules: bounded labels, scrape-time backlogs that fail soft, spend at the prices."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kgrag_core.extraction.pipeline import ExtractionReport
from kgrag_runtime.extraction import usage_observer
from kgrag_runtime.quality_metrics import QualityMetrics, graph_fallback_reason, record_feedback
from kgrag_runtime.settings import KgragSettings


def samples(metrics: QualityMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(metrics.registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_fallback_reasons_are_a_bounded_set() -> None:
    assert graph_fallback_reason("lookup", None) == "lookup"
    assert graph_fallback_reason("no entity linked", None) == "no_entity_linked"
    assert graph_fallback_reason("nothing readable", None) == "nothing_readable"
    assert graph_fallback_reason(None, "timeout: graph layer took 1200 ms (limit 1000 ms)") == "timeout"
    assert graph_fallback_reason(None, "OperationalError: connection refused") == "error"
    assert graph_fallback_reason("something new", None) == "error"
    assert graph_fallback_reason(None, None) is None


def test_feedback_issue_labels_cannot_be_grown_by_callers() -> None:
    metrics = QualityMetrics()
    record_feedback(metrics, "outdated")
    record_feedback(metrics, "a" * 200)
    record_feedback(metrics, "Upper Case")
    got = samples(metrics)
    assert got[("kgrag_feedback_total", (("issue", "outdated"),))] == 1.0
    assert got[("kgrag_feedback_total", (("issue", "other"),))] == 2.0
    assert not any(name == "kgrag_feedback_total" and dict(labels)["issue"].startswith("aaa") for name, labels in got)


def test_backlog_is_read_at_scrape_time_and_a_failing_store_is_reported() -> None:
    counts = {"pending_llm_chunks": 3, "review_pending": 7}
    metrics = QualityMetrics(backlog=lambda: counts)
    got = samples(metrics)
    assert got[("kgrag_backlog_up", ())] == 1.0
    assert got[("kgrag_extraction_pending_llm_chunks", ())] == 3.0
    assert got[("kgrag_review_backlog", ())] == 7.0
    counts["review_pending"] = 2  # the next scrape sees the store as it is now
    assert samples(metrics)[("kgrag_review_backlog", ())] == 2.0

    def down() -> dict[str, int]:
        raise ConnectionError("PostgreSQL is down")

    metrics.backlog = down
    got = samples(metrics)  # the rest of the scrape still works
    assert got[("kgrag_backlog_up", ())] == 0.0
    assert ("kgrag_review_backlog", ()) not in got
    assert ("kgrag_answer_sentences_removed_total", ()) in got


def test_extraction_spend_follows_the_configured_prices() -> None:
    settings = KgragSettings(llm_price_input_per_mtok=2.0, llm_price_output_per_mtok=10.0, llm_price_currency="EUR")
    metrics = QualityMetrics()
    observe = usage_observer(settings, metrics.extraction)
    observe(ExtractionReport(llm_calls=2, input_tokens=500_000, output_tokens=100_000))
    observe(ExtractionReport(llm_calls=1, input_tokens=250_000, output_tokens=0))
    got = samples(metrics)
    assert got[("kgrag_extraction_llm_calls_total", ())] == 3.0
    assert got[("kgrag_extraction_llm_tokens_total", (("direction", "input"),))] == 750_000.0
    assert got[("kgrag_extraction_llm_tokens_total", (("direction", "output"),))] == 100_000.0
    # 0.75 M input tokens at 2.0 + 0.1 M output tokens at 10.0
    assert abs(got[("kgrag_extraction_spend_total", (("currency", "EUR"),))] - 2.5) < 1e-9
