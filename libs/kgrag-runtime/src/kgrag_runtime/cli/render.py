"""Human-readable output for the CLI (JSON output is `emit_json`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kgrag_core.graph_retrieval.searcher import GraphSearchResponse
from kgrag_core.ingest import IngestOutcome
from kgrag_core.search import SearchResponse

_NARROWEST_COLUMN = 8  # below this a wrapped text column is unreadable: switch to one record per row


def id_table(
    console: Console,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    ids: Collection[str],
    title: str | None = None,
) -> None:
    """Rows whose `ids` columns are never cut: a reader copies them into the next command (delete, split,
    show). Other columns wrap; where even that does not fit the terminal, each row becomes a record with
    its ids on their own line. Cells are Rich markup (escape text before passing it)."""
    id_index = [i for i, h in enumerate(headers) if h in ids]
    id_widths = {i: max([len(headers[i]), *(_longest_word(r[i]) for r in rows)]) for i in id_index}
    others = len(headers) - len(id_index)
    needed = sum(w + 3 for w in id_widths.values()) + others * (_NARROWEST_COLUMN + 3) + 1
    if needed <= console.width:
        table = Table(title=title, title_justify="left")
        for i, header in enumerate(headers):
            if i in id_widths:
                table.add_column(header, no_wrap=True, min_width=id_widths[i])
            else:
                table.add_column(header, overflow="fold")
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    if title:
        console.print(f"[bold]{title}[/]")
    for row in rows:
        console.print(" ".join(f"[bold]{row[i]}[/]" for i in id_index))
        rest = [f"{headers[i]}: {row[i]}" for i in range(len(headers)) if i not in id_widths and row[i]]
        if rest:
            console.print("  " + " · ".join(rest))


def _longest_word(cell: str) -> int:
    # A cell of several ids ("ent_a, ent_b") may wrap between them, never inside one.
    return max((len(w) for w in cell.split()), default=0)


def emit_json(payload: object) -> None:
    print(json.dumps(payload, ensure_ascii=False, indent=2, default=str))


@contextmanager
def progress(state: Any, total: int, label: str) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr, or a silent counter when output is JSON."""
    if state.as_json:
        yield lambda _n: None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=state.console, transient=False) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def ingest_summary(console: Console, counts: Mapping[str, int], outcomes: Sequence[IngestOutcome]) -> None:
    parts = ", ".join(f"{n} {name.lower()}" for name, n in counts.items() if n)
    console.print(f"[bold]Done:[/] {parts or 'nothing to do'}.")
    rejected = [o for o in outcomes if o.error_code is not None]
    if rejected:
        id_table(
            console,
            ("document", "error", "message"),
            [(escape(o.doc_id), o.error_code.value if o.error_code else "", escape(o.message)) for o in rejected[:50]],
            ids={"document"},
            title="Rejected (the rest of the batch was indexed)",
        )
        if len(rejected) > 50:
            console.print(f"… and {len(rejected) - 50} more; `kgrag ingest --json` lists every outcome.")


def ingest_warnings(console: Console, warnings: Sequence[Mapping[str, str]]) -> None:
    """What was indexed but probably not as meant (front-matter typos): one line per file and problem."""
    for w in warnings:
        console.print(f"[yellow]warning[/] {escape(w['doc_id'])}: {escape(w['message'])}")


def search_results(console: Console, response: SearchResponse | GraphSearchResponse) -> None:
    if isinstance(response, GraphSearchResponse):
        route = response.route
        note = f" · degraded to hybrid: {response.degraded_reason}" if response.degraded else ""
        console.print(
            f"[dim]route: {route.kind.value} (confidence {route.confidence:.2f}) · mode {response.mode}{note}[/]"
        )
        for line in response.graph_lines:
            console.print(f"[magenta]graph[/] {escape(line.text)}")
        if response.graph_lines:
            console.print()
    graph_paths(console, [p.as_dict() for p in response.paths] if isinstance(response, GraphSearchResponse) else [])
    if response.entities:
        names = ", ".join(f"{e['name']} ({e['type']}, {e['score']})" for e in response.entities)
        console.print(f"[dim]linked entities: {escape(names)}[/]\n")
    if not response.hits:
        console.print("No results you are allowed to see. Try other words, or check --principal/--group.")
        return
    for i, hit in enumerate(response.hits, start=1):
        ranks = " ".join(f"{k}#{v}" for k, v in sorted(hit.ranks.items()))
        # The breadcrumb starts with the title; show only the sections below it.
        sections = hit.breadcrumb[1:] if hit.breadcrumb[:1] == (hit.title,) else hit.breadcrumb
        console.print(
            f"[bold]{i}. {escape(hit.title)}[/] [dim]{escape(' > '.join(sections))}[/]\n"
            f"   [cyan]{escape(hit.doc_id)}[/] bytes {hit.start_byte}–{hit.end_byte} · score {hit.score:.4f}"
            f" · {ranks}"
        )
        snippet = " ".join(hit.text.split())
        console.print(f"   {escape(snippet[:280])}{'…' if len(snippet) > 280 else ''}\n")
    if response.limits.get("truncated"):
        console.print(f"[dim]Showing the top {len(response.hits)}; raise --top-k (max 100) for more.[/]")


def answer(console: Console, result: Mapping[str, Any]) -> None:
    console.print(f"[bold]Q:[/] {escape(str(result['question']))}")
    if not result["answered"]:
        console.print(f"[bold]A:[/] {escape(str(result['notice']))}\n")
        return
    console.print(f"[bold]A:[/] {escape(str(result['answer']))}")
    for c in result["citations"]:
        start, end = c["span"]
        # Where the format has them: the page, or who said it and when.
        place = " ".join(str(c[k]) for k in ("time", "speaker") if c.get(k)) or (
            f"p. {c['page']}" if c.get("page") else ""
        )
        at = f", {escape(place)}" if place else ""
        console.print(f"  [{c['id']}] {escape(c['title'])} ([cyan]{escape(c['doc_id'])}[/] bytes {start}–{end}{at})")
    _fallback(console, result.get("fallback"))
    for conflict in result.get("conflicts") or []:
        console.print(
            f"[yellow]Sources disagree on {escape(conflict['subject'])} {escape(conflict['attribute'])}:[/] "
            + escape("; ".join(_conflict_side(v) for v in conflict["values"]))
        )
    console.print(f"[dim]{escape(str(result['notice']))} Confidence: {result['confidence']}.[/]\n")
    strategy = result.get("strategy_used")
    if isinstance(strategy, Mapping):
        ran = ", ".join(str(s) for s in strategy.get("strategies", []))
        fallback = (
            " · GLOBAL answered from hybrid search (no community summaries yet)"
            if strategy.get("global_fallback")
            else ""
        )
        console.print(f"[dim]strategy: {escape(str(strategy.get('route')))} ({escape(ran)}){escape(fallback)}[/]")
    graph_paths(console, result.get("graph_evidence") or [])


def graph_paths(console: Console, paths: Sequence[Mapping[str, Any]]) -> None:
    """Graph paths as `A -REL-> B` chains with their supporting chunks and confidence."""
    for path in paths:
        chain = " ".join(str(part) for part in path["path"])
        chunks = ", ".join(path["supporting_chunks"])
        console.print(f"[magenta]path[/] {escape(chain)} [dim](confidence {path['confidence']}; {escape(chunks)})[/]")
    if paths:
        console.print()


def answer_event(console: Console, event: tuple[str, Mapping[str, Any]], *, as_json: bool) -> None:
    """One event of a streamed answer: a JSON line, or for a reader the question's sentences as they come
    and, at the end, the citations, notice and confidence."""
    name, data = event
    if as_json:
        print(json.dumps({"event": name, "data": data}, ensure_ascii=False, default=str), flush=True)
        return
    if name == "sentence":
        markers = "".join(f" [{c['id']}]" for c in data["citations"])
        console.print(f"  {escape(str(data['text']))}{markers}")
    elif name == "done":
        console.print(f"[bold]Q:[/] {escape(str(data['question']))}")
        if not data["answered"]:
            console.print(f"[bold]A:[/] {escape(str(data['notice']))}")
        for c in data["citations"]:
            start, end = c["span"]
            console.print(f"  [{c['id']}] {escape(c['title'])} ([cyan]{escape(c['doc_id'])}[/] bytes {start}–{end})")
        _fallback(console, data.get("fallback"))
        console.print(f"[dim]{escape(str(data['notice']))} Confidence: {data['confidence']}.[/]\n")


def _fallback(console: Console, fallback: Any) -> None:
    if isinstance(fallback, Mapping):
        reason = escape(str(fallback.get("reason")))
        console.print(f"[yellow]The language model's answer could not be used ({reason}): extractive answer.[/]")


def _conflict_side(value: Mapping[str, Any]) -> str:
    sources = ", ".join(f"{s['doc_id']} {s['written_at'] or 'undated'}" for s in value["sources"])
    return f"{value['value']} ({sources})"


def status(console: Console, info: Mapping[str, Any]) -> None:
    counts = {k: v for k, v in info.items() if k not in ("recent_errors", "data_dir")}
    key_values(console, counts, f"kgrag index at {escape(str(info['data_dir']))}")
    errors: Sequence[Mapping[str, Any]] = info.get("recent_errors") or []
    if errors:
        total = info.get("ingest_errors", len(errors))
        id_table(
            console,
            ("document", "error", "message", "at"),
            [
                (escape(e["doc_id"]), str(e["error_code"]), escape(e["message"]), str(e.get("at") or "")[:19])
                for e in errors
            ],
            ids={"document"},
            title=f"The {len(errors)} most recent of {total} ingest errors, newest first",
        )


def document_status(console: Console, answer: Mapping[str, Any]) -> None:
    """`kgrag status --doc ID`: the latest outcome, then each recorded one, newest first."""
    console.print(f"[bold]{escape(str(answer['doc_id']))}[/]: {answer['status']}")
    id_table(
        console,
        ("at", "status", "error", "message", "chunks"),
        [
            (
                str(o.get("at") or "")[:19],
                o["status"],
                str(o["error_code"] or ""),
                escape(o["message"]),
                f"{o['chunks_total']} ({o['chunks_embedded']} embedded, {o['chunks_removed']} removed)",
            )
            for o in answer["outcomes"]
        ],
        ids={"at", "status", "error"},
        title="Outcomes, newest first",
    )


def key_values(console: Console, payload: Mapping[str, Any], title: str) -> None:
    """A mapping as a two-column table; nested mappings are flattened to dotted keys."""
    table = Table("what", "value", title=title, title_justify="left")
    for key, value in _flatten(payload):
        table.add_row(key, escape(_fmt(value)))
    console.print(table)


def _flatten(payload: Mapping[str, Any], prefix: str = "") -> list[tuple[str, object]]:
    rows: list[tuple[str, object]] = []
    for key, value in payload.items():
        if isinstance(value, Mapping) and value:
            rows.extend(_flatten(value, f"{prefix}{key}."))
        else:
            rows.append((f"{prefix}{key}", value))
    return rows


def documents(console: Console, rows: Sequence[Mapping[str, Any]]) -> None:
    if not rows:
        console.print("The index holds no documents yet: `kgrag ingest PATH` adds some.")
        return
    id_table(
        console,
        ("doc_id", "title", "source", "version", "status", "modified"),
        [
            (
                escape(r["doc_id"]),
                escape(r["title"]),
                escape(r["source"]),
                str(r["version"]),
                r["status"],
                (r["modified_at"] or "")[:10],
            )
            for r in rows
        ],
        ids={"doc_id"},
    )


# Column headers short enough that a metric table fits 80 columns (docs/evaluation.md names the types).
_SHORT_TYPES = {
    "lookup": "lookup",
    "entity": "entity",
    "multi_hop": "multi",
    "temporal": "temp",
    "modality": "modal",
    "global": "global",
    "unanswerable": "unans",
    "ALL": "ALL",
}


def eval_report(console: Console, report: Mapping[str, Any]) -> None:
    """One table per configuration: a row per metric, a column per question type."""
    for config, rows in report["per_type"].items():
        metrics = sorted({k for m in rows.values() for k in m}, key=lambda c: (c != "n", c))
        table = Table(
            title=f"{config}", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
        )
        # Metric names are what the reader looks up in docs/evaluation.md: never cut them, nor the (short)
        # type headers; the numbers fit in 4 characters.
        table.add_column("metric", no_wrap=True, min_width=max((len(m) for m in metrics), default=6))
        for qtype in rows:
            header = _SHORT_TYPES.get(qtype, qtype)
            table.add_column(header, justify="right", overflow="fold", min_width=max(4, len(header)))
        for metric in metrics:
            table.add_row(metric, *[_fmt(rows[t][metric]) if metric in rows[t] else "–" for t in rows])
        console.print(table)
    for name, test in report.get("sign_tests", {}).items():
        console.print(
            f"sign test {name}: {test['wins']} wins, {test['losses']} losses, {test['ties']} ties, "
            f"p = {test['p_value']:.3f}"
        )
    for config, lat in report.get("latency_ms", {}).items():
        console.print(f"latency {config}: p50 {lat['p50']} ms, p95 {lat['p95']} ms")
    graph = report.get("graph")
    if isinstance(graph, Mapping) and "router_accuracy" in graph:
        console.print(
            f"graph layer: router accuracy {graph['router_accuracy']}, used on {graph['graph_used']} of "
            f"{graph['questions']} questions, degraded {graph['degraded']}"
        )
    answers_report(console, report)


def answers_report(console: Console, report: Mapping[str, Any]) -> None:
    """The answer metrics: a table per split and answerer, the sign tests, and router accuracy per split."""
    answers = report.get("answers")
    if isinstance(answers, Mapping):
        for split, by_answerer in answers["per_split"].items():
            for answerer, rows in by_answerer.items():
                metrics = sorted({k for m in rows.values() for k in m}, key=lambda c: (c != "n", c))
                table = Table(
                    title=f"answers: {answerer}, split {split}",
                    title_justify="left",
                    box=box.SIMPLE_HEAD,
                    pad_edge=False,
                    collapse_padding=True,
                )
                table.add_column("metric", no_wrap=True, min_width=max((len(m) for m in metrics), default=6))
                for qtype in rows:
                    table.add_column(_SHORT_TYPES.get(qtype, qtype), justify="right")
                for metric in metrics:
                    table.add_row(metric, *[_fmt(rows[t][metric]) if metric in rows[t] else "–" for t in rows])
                console.print(table)
        for name, test in (answers.get("sign_tests") or {}).items():
            console.print(
                f"sign test {name}: {test['wins']} wins, {test['losses']} losses, {test['ties']} ties, "
                f"p = {test['p_value']:.3f}"
            )
        for answerer, failed in (answers.get("failures") or {}).items():
            console.print(f"[yellow]answerer {answerer} failed on {len(failed)} questions: {dict(failed)}[/]")
    for name, row in (report.get("router") or {}).items():
        splits = ", ".join(f"{s} {v['accuracy']:.3f} (n={v['n']})" for s, v in row.items() if isinstance(v, Mapping))
        console.print(f"router {name} ({row['version']}): {splits}")


def _fmt(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def extraction_report(console: Console, report: Any) -> None:
    console.print(
        f"[bold]Extraction[/] on {report['labelled_chunks']} labelled chunks "
        f"({report['corpus_chunks']} chunks in the corpus)"
    )
    console.print(report["markdown"])
    console.print("[bold]Tier 3 before validation[/] (the same replies, unchecked)")
    console.print(report["tier3_before_validation_markdown"])
    dedup = report["dedup"]
    console.print(
        f"dedup: {dedup['exact']} exact + {dedup['near']} near duplicates of {dedup['chunks']} chunks "
        f"(rate {dedup['rate']:.3f}); skipped by tier 0: {report['skipped']}"
    )
    console.print(f"tier 3 dropped by validation: {report['tier3_dropped_by_reason']}")
    console.print(f"[dim]{escape(str(report['note']))}[/]")
