"""Stored evaluation runs and the regressions of one run against a baseline run of the same suite.

A run is started (over HTTP or the CLI), finishes with a report (metrics per configuration and question type,
latency and cost per query) or an error, and may be marked the suite's baseline. Later runs of that suite
are compared with it metric by metric: a score that fell by more than the tolerance, or a p95 latency that
grew by more than half (and by more than a few milliseconds), is a regression.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

# Scores where lower is better; and numbers that describe a run rather than grade it.
LOWER_IS_BETTER = frozenset({"degraded"})
NOT_SCORES = frozenset({"n", "lines_read"})
SCORE_TOLERANCE = 0.02  # an absolute drop in a [0, 1] score larger than this is a regression
LATENCY_GROWTH = 0.5  # p95 more than 50 % slower ...
LATENCY_FLOOR_MS = 5.0  # ... and slower by more than this (noise on a fast path is not a regression)

RUNNING, SUCCEEDED, FAILED = "running", "succeeded", "failed"


@dataclass(frozen=True, slots=True)
class EvalRun:
    run_id: str
    suite: str
    config: Mapping[str, object]
    status: str
    started_at: datetime
    finished_at: datetime | None = None
    report: Mapping[str, object] | None = None
    error: Mapping[str, object] | None = None
    is_baseline: bool = False

    def as_dict(self) -> dict[str, object]:
        return {
            "run_id": self.run_id,
            "suite": self.suite,
            "config": dict(self.config),
            "status": self.status,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "baseline": self.is_baseline,
            "report": dict(self.report) if self.report is not None else None,
            "error": dict(self.error) if self.error is not None else None,
        }


class EvalRunStore(Protocol):
    """Where evaluation runs are kept (PostgreSQL: table eval_runs)."""

    def create_eval_run(self, run_id: str, suite: str, config: Mapping[str, object]) -> EvalRun: ...

    def finish_eval_run(
        self,
        run_id: str,
        *,
        status: str,
        report: Mapping[str, object] | None = None,
        error: Mapping[str, object] | None = None,
    ) -> None: ...

    def eval_run(self, run_id: str) -> EvalRun | None: ...

    def eval_runs(self, limit: int = 50) -> list[EvalRun]: ...

    def mark_eval_baseline(self, run_id: str) -> None:
        """Make this (succeeded) run its suite's one baseline; the previous baseline stops being one."""
        ...

    def eval_baseline(self, suite: str) -> EvalRun | None: ...


@dataclass(frozen=True, slots=True)
class Regression:
    config: str
    question_type: str
    metric: str
    baseline: float
    value: float

    def as_dict(self) -> dict[str, object]:
        return {
            "config": self.config,
            "type": self.question_type,
            "metric": self.metric,
            "baseline": self.baseline,
            "value": self.value,
            "delta": round(self.value - self.baseline, 4),
        }


def regressions(report: Mapping[str, object], baseline: Mapping[str, object]) -> list[Regression]:
    """Where `report` is worse than `baseline`: scores per configuration and type, then p95 latencies
    (question type "ALL"). Metrics or types only one of the two has are not compared."""
    out: list[Regression] = []
    now, then = _table(report.get("per_type")), _table(baseline.get("per_type"))
    for config in sorted(now.keys() & then.keys()):
        for qtype in sorted(now[config].keys() & then[config].keys()):
            a, b = now[config][qtype], then[config][qtype]
            for metric in sorted((a.keys() & b.keys()) - NOT_SCORES):
                drop = (a[metric] - b[metric]) if metric in LOWER_IS_BETTER else (b[metric] - a[metric])
                if drop > SCORE_TOLERANCE:
                    out.append(Regression(config, qtype, metric, b[metric], a[metric]))
    lat_now, lat_then = _latency(report.get("latency_ms")), _latency(baseline.get("latency_ms"))
    for config in sorted(lat_now.keys() & lat_then.keys()):
        slow, fast = lat_now[config], lat_then[config]
        if slow > fast * (1 + LATENCY_GROWTH) and slow - fast > LATENCY_FLOOR_MS:
            out.append(Regression(config, "ALL", "p95_ms", fast, slow))
    return out


def _table(value: object) -> dict[str, dict[str, dict[str, float]]]:
    """per_type as numbers only: {config: {type: {metric: value}}}; anything else is left out."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    if not isinstance(value, Mapping):
        return out
    for config, types in value.items():
        if not isinstance(types, Mapping):
            continue
        for qtype, metrics in types.items():
            if isinstance(metrics, Mapping):
                out.setdefault(str(config), {})[str(qtype)] = {
                    str(k): float(v) for k, v in metrics.items() if isinstance(v, int | float)
                }
    return out


def _latency(value: object) -> dict[str, float]:
    if not isinstance(value, Mapping):
        return {}
    return {
        str(config): float(row["p95"])
        for config, row in value.items()
        if isinstance(row, Mapping) and isinstance(row.get("p95"), int | float)
    }
