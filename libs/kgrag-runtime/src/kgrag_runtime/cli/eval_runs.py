"""`kgrag eval-runs …`: stored evaluation runs from the shell, the same ones `POST /v1/admin/eval/run` starts.

`start` runs a bundled suite in the foreground (this process is the worker) on an isolated temporary index
and stores the run; `list`, `show` and `baseline` read and mark runs, whoever started them (a run started
over HTTP by `kgrag serve` on this data dir, or by the distributed query API when KGRAG_PG_DSN points at its
PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_runtime.cli import render
from kgrag_runtime.cli.context import CliState, open_app
from kgrag_runtime.cli.options import DataDir, JsonOut

eval_runs_app = typer.Typer(
    help="Evaluation runs on isolated indexes: start a bundled suite, list runs, show one with its "
    "regressions against the suite's baseline, mark a baseline.",
    no_args_is_help=True,
)

RunId = Annotated[str, typer.Argument(help="A run id (eval-…), from `kgrag eval-runs list`.")]
SHOWN_METRICS = ("ndcg@10", "recall@10", "mrr", "answered", "cites_gold", "abstained")


@eval_runs_app.command("start")
def start(
    suite: Annotated[str, typer.Argument(help="A bundled suite: northwind or northwind-smoke.")],
    budget_tokens: Annotated[int, typer.Option(help="Token budget for key-fact recall.")] = 2000,
    graph: Annotated[bool, typer.Option("--graph/--no-graph", help="Also score hybrid+graph.")] = True,
    reply_book: Annotated[
        bool, typer.Option("--reply-book", help="Tier 3 reads every chunk from the suite's bundled reply book.")
    ] = False,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Run a suite now (on a temporary index; this index is only where the run is stored)."""
    from pydantic import ValidationError

    from kgrag_runtime.evaluation.suites import EvalConfig

    try:
        config = EvalConfig(budget_tokens=budget_tokens, graph=graph, reply_book=reply_book)
    except ValidationError as err:
        raise KgragError(ErrorCode.LIMIT_EXCEEDED, f"Invalid eval config: {err.errors()[0]['msg']}") from err
    state = CliState.from_options(data_dir, as_json, creates=True)
    with open_app(state, reads_only=True) as kg:  # this index only stores the run
        evals = kg.require_evaluation()
        if not state.as_json:
            state.console.print(f"Evaluating suite [bold]{escape(suite)}[/] on a temporary index…")
        out = evals.run_now(suite, config)
    _emit(state, out)
    if out["status"] != "succeeded":
        raise typer.Exit(1)


@eval_runs_app.command("list")
def list_runs(
    limit: Annotated[int, typer.Option(help="How many, newest first.")] = 20,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """The newest runs and the suites that can be run."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state, reads_only=True) as kg:
        evals = kg.require_evaluation()
        runs, suites = evals.runs(limit), evals.suites()
    if state.as_json:
        render.emit_json({"suites": suites, "runs": runs})
        return
    table = Table("run", "suite", "status", "started", "baseline", title="Eval runs", title_justify="left")
    for r in runs:
        table.add_row(
            str(r["run_id"]),
            str(r["suite"]),
            str(r["status"]),
            str(r["started_at"])[:19],
            "yes" if r["baseline"] else "",
        )
    state.out.print(table)
    state.out.print("Suites: " + ", ".join(f"{s['name']}" for s in suites))


@eval_runs_app.command("show")
def show(run_id: RunId, data_dir: DataDir = None, as_json: JsonOut = False) -> None:
    """A run: its status, metrics by question type, latency, cost, and regressions against the baseline."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state, reads_only=True) as kg:
        out = kg.require_evaluation().run(run_id)
    _emit(state, out)


@eval_runs_app.command("baseline")
def baseline(run_id: RunId, data_dir: DataDir = None, as_json: JsonOut = False) -> None:
    """Make a succeeded run its suite's baseline; later runs of the suite report regressions against it."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state, reads_only=True) as kg:
        out = kg.require_evaluation().mark_baseline(run_id)
    if state.as_json:
        render.emit_json(out)
        return
    state.out.print(f"[bold]{run_id}[/] is now the baseline of suite {escape(str(out['suite']))}.")


def _emit(state: CliState, run: Mapping[str, Any]) -> None:
    if state.as_json:
        render.emit_json(dict(run))
        return
    out = state.out
    out.print(f"[bold]{run['run_id']}[/]  suite {escape(run['suite'])}  {run['status']}")
    if run.get("error"):
        out.print(f"[red]{escape(run['error'].get('code', ''))}[/] {escape(str(run['error'].get('message', '')))}")
    report = run.get("report") or {}
    per_type: Mapping[str, Mapping[str, Mapping[str, float]]] = report.get("per_type") or {}
    for config, types in per_type.items():
        table = Table("type", "n", *SHOWN_METRICS, title=config, title_justify="left")
        for qtype, metrics in types.items():
            table.add_row(qtype, str(metrics.get("n", "")), *(_cell(metrics.get(m)) for m in SHOWN_METRICS))
        out.print(table)
    for config, lat in (report.get("latency_ms") or {}).items():
        out.print(f"latency {escape(config)}: p50 {lat['p50']} ms, p95 {lat['p95']} ms")
    cost = report.get("cost")
    if cost:
        out.print(f"cost: {cost['total']} {cost['currency']} ({cost['calls']} model calls; llm {cost['llm']})")
    regressions = run.get("regressions")
    if regressions is None:
        out.print("regressions: no baseline to compare with" if run["status"] == "succeeded" else "")
    elif not regressions:
        out.print(f"regressions: none against baseline {run['baseline_run_id']}")
    else:
        out.print(f"[red]regressions against baseline {run['baseline_run_id']}:[/]")
        for r in regressions:
            out.print(f"  {r['config']} {r['type']} {r['metric']}: {r['baseline']} -> {r['value']} ({r['delta']:+})")


def _cell(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else ("" if value is None else str(value))
