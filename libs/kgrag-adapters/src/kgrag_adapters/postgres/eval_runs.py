"""The EvalRunStore port on PostgreSQL (table eval_runs, migration 0015)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.evaluation.runs import SUCCEEDED, EvalRun

Row = tuple[Any, ...]
_COLUMNS = "run_id, suite, config, status, started_at, finished_at, report, error, is_baseline"


class PostgresEvalRuns:
    """Runs on its store's connection lease (one connection per thread in a call)."""

    def __init__(self, conn: Callable[[], psycopg.Connection[Row]], lock: AbstractContextManager[object]) -> None:
        self._conn = conn
        self._lock = lock

    def create_eval_run(self, run_id: str, suite: str, config: Mapping[str, object]) -> EvalRun:
        with self._lock:
            row = (
                self._conn()
                .execute(
                    "INSERT INTO eval_runs (run_id, suite, config, status) VALUES (%s, %s, %s, 'running')"
                    f" RETURNING {_COLUMNS}",
                    (run_id, suite, Jsonb(dict(config))),
                )
                .fetchone()
            )
        if row is None:  # INSERT ... RETURNING returns the row or raises
            raise KgragError(ErrorCode.INTERNAL, f"eval run {run_id!r} was not stored")
        return _run(row)

    def finish_eval_run(
        self,
        run_id: str,
        *,
        status: str,
        report: Mapping[str, object] | None = None,
        error: Mapping[str, object] | None = None,
    ) -> None:
        with self._lock:
            self._conn().execute(
                "UPDATE eval_runs SET status = %s, report = %s, error = %s, finished_at = now() WHERE run_id = %s",
                (
                    status,
                    Jsonb(dict(report)) if report is not None else None,
                    Jsonb(dict(error)) if error is not None else None,
                    run_id,
                ),
            )

    def eval_run(self, run_id: str) -> EvalRun | None:
        with self._lock:
            row = self._conn().execute(f"SELECT {_COLUMNS} FROM eval_runs WHERE run_id = %s", (run_id,)).fetchone()
        return _run(row) if row else None

    def eval_runs(self, limit: int = 50) -> list[EvalRun]:
        with self._lock:
            rows = (
                self._conn()
                .execute(f"SELECT {_COLUMNS} FROM eval_runs ORDER BY started_at DESC, run_id LIMIT %s", (limit,))
                .fetchall()
            )
        return [_run(r) for r in rows]

    def mark_eval_baseline(self, run_id: str) -> None:
        with self._lock:
            conn = self._conn()
            with conn.transaction():
                row = conn.execute(
                    "SELECT suite, status FROM eval_runs WHERE run_id = %s FOR UPDATE", (run_id,)
                ).fetchone()
                if row is None:
                    raise KgragError(ErrorCode.RUN_NOT_FOUND, f"No eval run {run_id!r}.", hint=_LIST_HINT)
                if row[1] != SUCCEEDED:
                    raise KgragError(
                        ErrorCode.INVALID_QUERY,
                        f"Eval run {run_id!r} is {row[1]}; only a succeeded run can be a baseline.",
                        hint="Wait for it to finish, or pick another run.",
                    )
                conn.execute("UPDATE eval_runs SET is_baseline = false WHERE suite = %s AND is_baseline", (row[0],))
                conn.execute("UPDATE eval_runs SET is_baseline = true WHERE run_id = %s", (run_id,))

    def eval_baseline(self, suite: str) -> EvalRun | None:
        with self._lock:
            row = (
                self._conn()
                .execute(f"SELECT {_COLUMNS} FROM eval_runs WHERE suite = %s AND is_baseline", (suite,))
                .fetchone()
            )
        return _run(row) if row else None


_LIST_HINT = "List the runs with GET /v1/admin/eval or `kgrag eval-runs list`."


def _run(row: Row) -> EvalRun:
    return EvalRun(
        run_id=row[0],
        suite=row[1],
        config=row[2],
        status=row[3],
        started_at=row[4],
        finished_at=row[5],
        report=row[6],
        error=row[7],
        is_baseline=bool(row[8]),
    )
