"""Long administrative work (a full resolution pass) as a background run with a status to poll.

An HTTP request must answer within seconds; a pass over a large graph takes longer. `BackgroundRuns.start`
returns at once with a run id, a worker thread does the work, and `get` reports `running`, `succeeded`
(with the work's result) or `failed` (with the error's stable code). One run per kind at a time: starting
a kind that is already running returns that run instead of queueing a second pass over the same data.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kgrag_core.errors import ErrorCode, KgragError

MAX_KEPT_RUNS = 100  # finished runs kept for polling, oldest forgotten first


@dataclass(slots=True)
class BackgroundRun:
    run_id: str
    kind: str
    started_at: datetime
    status: str = "running"
    finished_at: datetime | None = None
    result: Any = None
    error: dict[str, str] | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "status": self.status,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "result": self.result,
            "error": self.error,
        }


class BackgroundRuns:
    def __init__(self, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, BackgroundRun] = OrderedDict()

    def start(self, kind: str, work: Callable[[], Any], *, run_id: str | None = None) -> BackgroundRun:
        """`run_id`: the id the caller already recorded the run under (eval runs are stored first)."""
        with self._lock:
            for run in self._runs.values():
                if run.kind == kind and run.status == "running":
                    return run
            run = BackgroundRun(run_id or f"{kind}-{uuid.uuid4().hex[:12]}", kind, self._clock())
            self._runs[run.run_id] = run
            while len(self._runs) > MAX_KEPT_RUNS:
                self._runs.popitem(last=False)
        threading.Thread(target=self._work, args=(run, work), name=run.run_id, daemon=True).start()
        return run

    def get(self, run_id: str) -> BackgroundRun:
        with self._lock:
            run = self._runs.get(run_id)
        if run is None:
            raise KgragError(
                ErrorCode.RUN_NOT_FOUND,
                f"No background run {run_id!r}.",
                hint="Runs are kept in memory by the serving process, the last 100 of them.",
            )
        return run

    def _work(self, run: BackgroundRun, work: Callable[[], Any]) -> None:
        try:
            result = work()
        except KgragError as err:
            self._finish(run, "failed", error=err.as_dict())
        except Exception as err:  # noqa: BLE001 - a failed run is a status to report, not a dead thread
            self._finish(run, "failed", error={"code": ErrorCode.INTERNAL.value, "message": type(err).__name__})
        else:
            self._finish(run, "succeeded", result=result)

    def _finish(
        self, run: BackgroundRun, status: str, *, result: Any = None, error: dict[str, str] | None = None
    ) -> None:
        with self._lock:
            run.result, run.error, run.finished_at, run.status = result, error, self._clock(), status
        run.done.set()
