"""`kgrag trace`, `kgrag feedback` and `kgrag curation`: traces and feedback from the shell.

A trace is read as --principal/--group/--admin say, like the search that made it (a trace belongs to its
principal; anyone else gets TRACE_NOT_FOUND). `kgrag curation` is an operator view of the whole index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from kgrag_core.tracing.curation import DEFAULT_EDGE_CONFIDENCE
from kgrag_core.tracing.model import FeedbackIssue
from kgrag_runtime.cli import render
from kgrag_runtime.cli.context import CliState, open_app
from kgrag_runtime.cli.options import Admin, DataDir, Groups, JsonOut, Principal, caller_from

ISSUES = ", ".join(i.value for i in FeedbackIssue)
TraceId = Annotated[str, typer.Argument(help="A trace id (tr_…) from a search or ask (`--json` shows it).")]


def trace(
    trace_id: TraceId,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
    principal: Principal = None,
    group: Groups = None,
    admin: Admin = False,
) -> None:
    """What produced a search or an answer: route, candidates per route, graph paths, citations, timings
    per stage and every version involved (ids and hashes, no document text)."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state, reads_only=True) as kg:
        found = kg.require_traces().get(trace_id, caller_from(principal, group, admin)).as_dict()
    if state.as_json:
        render.emit_json(found)
        return
    _trace(state.out, found)


def feedback(
    trace_id: TraceId,
    rating: Annotated[int, typer.Option("--rating", "-r", help="1 (worst) to 5 (best).")],
    issue: Annotated[
        str | None, typer.Option("--issue", help=f"What was wrong, if one thing was: {ISSUES}.", show_default=False)
    ] = None,
    comment: Annotated[str, typer.Option("--comment", "-m", help="Say what should have come back.")] = "",
    data_dir: DataDir = None,
    as_json: JsonOut = False,
    principal: Principal = None,
    group: Groups = None,
    admin: Admin = False,
) -> None:
    """Rate a search or an answer by its trace id; the feedback joins the curation queue."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state, reads_only=True) as kg:
        item = kg.require_traces().feedback(
            trace_id,
            caller_from(principal, group, admin),
            rating=rating,
            issue=issue.upper() if issue else None,
            comment=comment,
        )
    if state.as_json:
        render.emit_json(item.as_dict())
        return
    state.out.print(f"Feedback [bold]{item.feedback_id}[/] on {item.trace_id} is in the curation queue.")


curation_app = typer.Typer(
    help="The curation queue: open feedback, merge candidates, conflicting claims and low-confidence edges; "
    "`kgrag curation resolve ID` closes a piece of feedback.\n\n"
    "Operator view: shows every document's data, restricted ones included, to whoever can open this index on "
    "this machine (no --principal/--group filter applies). Over HTTP the same queue is admin-only.",
    invoke_without_command=True,
)


@curation_app.callback()
def curation(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Items per list at most (1-1000).")] = 50,
    max_edge_confidence: Annotated[
        float, typer.Option("--max-edge-confidence", help="List edges whose best evidence is below this.")
    ] = DEFAULT_EDGE_CONFIDENCE,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """The curation queue (see `kgrag curation --help`)."""
    if ctx.invoked_subcommand is not None:
        return
    from kgrag_runtime.curation import curation_queue

    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        queue = curation_queue(kg, limit=limit, max_edge_confidence=max_edge_confidence)
    if state.as_json:
        render.emit_json(queue)
        return
    _queue(state.out, queue)


@curation_app.command("resolve")
def resolve(
    feedback_id: Annotated[str, typer.Argument(help="A feedback id (fb_…) from `kgrag curation`.")],
    resolution: Annotated[str, typer.Option("--resolution", "-m", help="What was done about it.")] = "",
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Mark feedback dealt with; it leaves the queue (and its trace may then expire)."""
    from kgrag_core.acl import Caller

    state = CliState.from_options(data_dir, as_json)
    with open_app(state, reads_only=True) as kg:
        done = kg.require_traces().resolve(feedback_id, Caller(user="operator", admin=True), resolution)
    if state.as_json:
        render.emit_json(done.as_dict())
        return
    state.out.print(f"Resolved [bold]{done.feedback_id}[/].")


def _trace(out: Console, t: Mapping[str, Any]) -> None:
    route = t.get("route") or {}
    out.print(f"[bold]{t['trace_id']}[/] {t['kind']} by {escape(str(t['owner']))} at {t['created_at']}")
    if route:
        out.print(f"route: {route['kind']} (confidence {route['confidence']}) {', '.join(route['signals'])}")
    out.print(f"mode: {t.get('mode')}  route counts: {t.get('route_counts')}  fused: {t.get('fused_candidates')}")
    rows = [[str(r["rank"]), r["chunk_id"], str(r["score"])] for r in t.get("results", [])]
    render.id_table(out, ("rank", "chunk", "score"), rows, ids={"chunk"}, title="Results")
    answer = t.get("answer")
    if answer:
        cited = ", ".join(sorted({c["chunk_id"] for c in answer["citations"]}))
        out.print(f"answer: {answer['mode']} ({answer['confidence']}), cached {answer['cached']}, cites {cited}")
    out.print("timings (ms): " + ", ".join(f"{k} {v}" for k, v in t.get("timings_ms", {}).items()))
    out.print("versions: " + ", ".join(f"{k} {v}" for k, v in t.get("versions", {}).items() if k != "fusion"))


def _queue(out: Console, q: Mapping[str, Any]) -> None:
    lists: Sequence[str] = ("feedback", "merge_candidates", "conflicts", "low_confidence_edges")
    out.print(", ".join(f"{len(q[name])} {name.replace('_', ' ')}" for name in lists))
    rows = [
        [f["feedback_id"], f["trace_id"], str(f["rating"]), f["issue"] or "", escape(f["comment"])]
        for f in q["feedback"]
    ]
    if rows:
        render.id_table(out, ("feedback", "trace", "rating", "issue", "comment"), rows, ids={"feedback", "trace"})
    pairs = [[p["a"], p["b"], str(p["score"])] for p in q["merge_candidates"]]
    if pairs:
        render.id_table(out, ("a", "b", "score"), pairs, ids={"a", "b"}, title="Merge candidates")
    conflicts = [
        [c["entity_id"], escape(c["entity_name"]), c["attribute"], str(c["written_at"]), escape(" | ".join(vs))]
        for c in q["conflicts"]
        for vs in [c["values"]]
    ]
    if conflicts:
        headers = ("entity", "name", "attribute", "written", "values")
        render.id_table(out, headers, conflicts, ids={"entity"}, title="Conflicts")
    edges = [
        [e["relation_id"], escape(e["subject"]["name"]), e["relation"], escape(e["object"]["name"]), str(conf)]
        for e in q["low_confidence_edges"]
        for conf in [e["confidence"]]
    ]
    if edges:
        headers = ("relation_id", "subject", "relation", "object", "confidence")
        render.id_table(out, headers, edges, ids={"relation_id"}, title="Low-confidence edges")
    if q["limits"]["truncated"]:
        out.print(f"[yellow]truncated[/]: {', '.join(q['limits']['truncated'])} (raise --limit)")
