"""Background runs: start answers at once, one run per kind at a time, results and failures reported."""

from __future__ import annotations

import threading

import pytest

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_runtime.background import BackgroundRuns


def test_a_run_reports_running_then_its_result_and_one_runs_per_kind() -> None:
    runs = BackgroundRuns()
    release = threading.Event()
    first = runs.start("resolution", lambda: release.wait(10) and {"merges": 3})
    assert runs.get(first.run_id).status == "running"
    again = runs.start("resolution", lambda: {"merges": 99})
    assert again.run_id == first.run_id  # no second pass over the same data while one runs
    other = runs.start("other", lambda: "done")  # another kind is independent
    assert other.done.wait(10) and runs.get(other.run_id).as_dict()["result"] == "done"
    release.set()
    assert first.done.wait(10)
    finished = runs.get(first.run_id).as_dict()
    assert finished["status"] == "succeeded" and finished["result"] == {"merges": 3}
    assert finished["finished_at"] is not None and finished["error"] is None
    assert runs.start("resolution", lambda: None).run_id != first.run_id  # a new one once the first is done


def test_failures_are_reported_with_their_code_and_unknown_runs_are_404() -> None:
    runs = BackgroundRuns()

    def refuse() -> None:
        raise KgragError(ErrorCode.CONFIGURATION_INVALID, "graph is off")

    def crash() -> None:
        raise RuntimeError("boom")

    refused, crashed = runs.start("a", refuse), runs.start("b", crash)
    assert refused.done.wait(10) and crashed.done.wait(10)
    assert runs.get(refused.run_id).as_dict()["error"] == {"code": "CONFIGURATION_INVALID", "message": "graph is off"}
    assert runs.get(crashed.run_id).as_dict()["error"] == {"code": "INTERNAL", "message": "RuntimeError"}
    assert runs.get(crashed.run_id).status == "failed"
    with pytest.raises(KgragError) as err:
        runs.get("resolution-nope")
    assert err.value.code is ErrorCode.RUN_NOT_FOUND
