"""Regressions of an eval run against its suite's baseline: which drops count, which do not."""

from __future__ import annotations

from kgrag_core.evaluation.runs import regressions


def report(ndcg: float, degraded: float, p95: float, *, n: int = 9) -> dict[str, object]:
    return {
        "per_type": {
            "hybrid": {"lookup": {"n": n, "ndcg@10": ndcg, "lines_read": 1.0}, "ALL": {"n": n, "ndcg@10": ndcg}},
            "hybrid+graph": {"ALL": {"n": n, "degraded": degraded}},
        },
        "latency_ms": {"hybrid": {"p50": 5.0, "p95": p95}},
    }


def test_same_report_has_no_regression() -> None:
    assert regressions(report(0.9, 0.0, 20.0), report(0.9, 0.0, 20.0)) == []


def test_a_score_drop_beyond_the_tolerance_is_a_regression() -> None:
    found = [r.as_dict() for r in regressions(report(0.85, 0.0, 20.0), report(0.9, 0.0, 20.0))]
    assert {(r["config"], r["type"], r["metric"]) for r in found} == {
        ("hybrid", "lookup", "ndcg@10"),
        ("hybrid", "ALL", "ndcg@10"),
    }
    assert found[0]["baseline"] == 0.9 and found[0]["value"] == 0.85 and found[0]["delta"] == -0.05


def test_small_drops_gains_and_descriptive_numbers_are_not_regressions() -> None:
    assert regressions(report(0.89, 0.0, 20.0, n=5), report(0.9, 0.0, 20.0)) == []  # within 0.02; n changed
    assert regressions(report(0.99, 0.0, 20.0), report(0.9, 0.0, 20.0)) == []


def test_lower_is_better_metrics_regress_upwards() -> None:
    (found,) = regressions(report(0.9, 0.2, 20.0), report(0.9, 0.0, 20.0))
    assert (found.config, found.metric, found.value) == ("hybrid+graph", "degraded", 0.2)
    assert regressions(report(0.9, 0.0, 20.0), report(0.9, 0.2, 20.0)) == []


def test_latency_must_grow_by_half_and_by_more_than_the_floor() -> None:
    (slow,) = regressions(report(0.9, 0.0, 40.0), report(0.9, 0.0, 20.0))
    assert (slow.metric, slow.baseline, slow.value) == ("p95_ms", 20.0, 40.0)
    assert regressions(report(0.9, 0.0, 4.0), report(0.9, 0.0, 2.0)) == []  # doubled, but 2 ms is noise
    assert regressions(report(0.9, 0.0, 28.0), report(0.9, 0.0, 20.0)) == []  # +40 %


def test_configs_or_types_only_one_side_has_are_not_compared() -> None:
    base = report(0.9, 0.0, 20.0)
    assert regressions({"per_type": {"dense": {"ALL": {"ndcg@10": 0.1}}}}, base) == []
    assert regressions({}, base) == []
