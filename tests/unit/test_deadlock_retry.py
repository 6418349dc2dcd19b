"""A deadlock's victim is run once more (the query API's deletion); any other error, or a second deadlock, is not."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from psycopg import errors

from kgrag_runtime.deadlocks import deadlocked, once_more_on_deadlock


def _failing(*failures: Exception) -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    def fn() -> str:
        calls.append(1)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        return "done"

    return calls, fn


def test_a_deadlock_victim_runs_once_more() -> None:
    calls, fn = _failing(errors.DeadlockDetected("deadlock detected"))
    assert once_more_on_deadlock(fn) == "done"
    assert len(calls) == 2


def test_a_deadlock_raised_from_inside_a_handler_counts() -> None:
    outer = RuntimeError("the batch failed")
    outer.__cause__ = errors.DeadlockDetected("deadlock detected")
    assert deadlocked(outer)
    assert not deadlocked(RuntimeError("other"))


def test_other_errors_and_a_second_deadlock_are_raised() -> None:
    calls, fn = _failing(errors.UniqueViolation("duplicate"))
    with pytest.raises(errors.UniqueViolation):
        once_more_on_deadlock(fn)
    assert len(calls) == 1
    calls, fn = _failing(errors.DeadlockDetected("one"), errors.DeadlockDetected("two"))
    with pytest.raises(errors.DeadlockDetected):
        once_more_on_deadlock(fn)
    assert len(calls) == 2
