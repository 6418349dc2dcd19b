"""Contract suite for `EvalRunStore` adapters.

Subclass `EvalRunStoreContract` in a `Test*` class and provide an `eval_runs` fixture with a fresh, empty store.
"""

from __future__ import annotations

import pytest

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.evaluation.runs import FAILED, RUNNING, SUCCEEDED, EvalRunStore

REPORT = {"per_type": {"hybrid": {"ALL": {"n": 3, "ndcg@10": 0.8}}}, "latency_ms": {"hybrid": {"p95": 12.0}}}


class EvalRunStoreContract:
    def test_a_run_is_stored_running_then_finished(self, eval_runs: EvalRunStore) -> None:
        created = eval_runs.create_eval_run("eval-1", "smoke", {"budget_tokens": 2000, "graph": True})
        assert created.status == RUNNING and created.finished_at is None and created.report is None
        assert eval_runs.eval_run("eval-1") == created
        eval_runs.finish_eval_run("eval-1", status=SUCCEEDED, report=REPORT)
        done = eval_runs.eval_run("eval-1")
        assert done is not None
        assert done.status == SUCCEEDED and done.report == REPORT and done.error is None
        assert done.finished_at is not None and done.finished_at >= done.started_at
        assert dict(done.config) == {"budget_tokens": 2000, "graph": True}

    def test_unknown_run_is_none(self, eval_runs: EvalRunStore) -> None:
        assert eval_runs.eval_run("eval-missing") is None
        with pytest.raises(KgragError) as err:
            eval_runs.mark_eval_baseline("eval-missing")
        assert err.value.code is ErrorCode.RUN_NOT_FOUND

    def test_one_baseline_per_suite(self, eval_runs: EvalRunStore) -> None:
        for run_id, suite in (("a1", "smoke"), ("a2", "smoke"), ("b1", "full")):
            eval_runs.create_eval_run(run_id, suite, {})
            eval_runs.finish_eval_run(run_id, status=SUCCEEDED, report=REPORT)
        assert eval_runs.eval_baseline("smoke") is None
        eval_runs.mark_eval_baseline("a1")
        eval_runs.mark_eval_baseline("b1")
        baseline = eval_runs.eval_baseline("smoke")
        assert baseline is not None and baseline.run_id == "a1" and baseline.is_baseline
        eval_runs.mark_eval_baseline("a2")  # moves the suite's baseline; the other suite keeps its own
        assert {r.run_id for r in eval_runs.eval_runs() if r.is_baseline} == {"a2", "b1"}
        again = eval_runs.eval_baseline("smoke")
        assert again is not None and again.run_id == "a2"
        first = eval_runs.eval_run("a1")
        assert first is not None and not first.is_baseline

    def test_only_a_succeeded_run_can_be_a_baseline(self, eval_runs: EvalRunStore) -> None:
        eval_runs.create_eval_run("running", "smoke", {})
        eval_runs.create_eval_run("failed", "smoke", {})
        eval_runs.finish_eval_run("failed", status=FAILED, error={"code": "INTERNAL", "message": "boom"})
        for run_id in ("running", "failed"):
            with pytest.raises(KgragError) as err:
                eval_runs.mark_eval_baseline(run_id)
            assert err.value.code is ErrorCode.INVALID_QUERY
        failed = eval_runs.eval_run("failed")
        assert failed is not None and failed.error == {"code": "INTERNAL", "message": "boom"}
        assert eval_runs.eval_baseline("smoke") is None

    def test_listing_is_newest_first_and_bounded(self, eval_runs: EvalRunStore) -> None:
        for i in range(5):
            eval_runs.create_eval_run(f"r{i}", "smoke", {})
        listed = eval_runs.eval_runs(limit=3)
        assert len(listed) == 3
        stamps = [r.started_at for r in eval_runs.eval_runs()]
        assert stamps == sorted(stamps, reverse=True)
