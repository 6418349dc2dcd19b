"""`kgrag`: ingest documents, search them and get cited answers, on the embedded default."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console

from kgrag_core.ask_modes import AskMode
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ingest import IngestStatus
from kgrag_core.retrieval.hybrid import SearchMode
from kgrag_runtime.cli import render
from kgrag_runtime.cli.communities import communities_app
from kgrag_runtime.cli.context import CliState, open_app, open_ingest_log
from kgrag_runtime.cli.entities import entities_app
from kgrag_runtime.cli.eval_runs import eval_runs_app
from kgrag_runtime.cli.extraction import claims, extract_app, ontology_app
from kgrag_runtime.cli.help_text import hide_flag_types
from kgrag_runtime.cli.mcp import mcp
from kgrag_runtime.cli.options import Admin, DataDir, Groups, JsonOut, Principal, caller_from
from kgrag_runtime.cli.query_options import (
    AsOf,
    DateFrom,
    DateTo,
    GraphPaths,
    MaxHops,
    Mode,
    Sources,
    filters_from,
)
from kgrag_runtime.cli.traces import curation_app, feedback, trace
from kgrag_runtime.cli.watch import watch

RECENT_ERRORS = 20  # how many of the newest ingest errors `kgrag status` lists
DELETE_HINT = "List documents with `kgrag documents`."

app = typer.Typer(
    name="kgrag",
    help="Knowledge-graph + RAG hybrid search. Ingest a folder or JSONL file, then search it or ask "
    "questions and get answers that cite the exact source text.\n\n"
    "Everything runs in this process on the embedded default (PostgreSQL, Qdrant's engine and a BM25 "
    "index under --data-dir); no servers are needed.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)


@app.command()
def ingest(
    path: Annotated[Path, typer.Argument(help="A folder (Markdown, text, .eml, PDF, Word, HTML, …) or a .jsonl file.")],
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Index documents. Unchanged ones are skipped; changed ones re-embed only the chunks that changed."""
    from kgrag_adapters.connectors import iter_path

    if not path.exists():
        raise KgragError(
            ErrorCode.DOCUMENT_NOT_FOUND, f"{path} does not exist.", hint="Pass a folder or a .jsonl file."
        )
    state = CliState.from_options(data_dir, as_json, creates=True)
    items = list(iter_path(path))
    with open_app(state) as kg, _progress(state, len(items), f"Ingesting {path.name}") as advance:
        outcomes = kg.ingest(items, progress=advance)
    counts = {s.value: sum(1 for o in outcomes if o.status is s) for s in IngestStatus}
    warnings = [
        {"doc_id": item.doc_id, "uri": item.uri, "message": message}
        for item in items
        if isinstance(item, SourceDocument)
        for message in item.warnings
    ]
    if state.as_json:
        render.emit_json({"counts": counts, "outcomes": [o.as_dict() for o in outcomes], "warnings": warnings})
        return
    render.ingest_summary(state.out, counts, outcomes)
    render.ingest_warnings(state.console, warnings)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="Results to return (max 100).")] = 10,
    mode: Annotated[SearchMode, typer.Option(help="hybrid (default), dense or bm25.")] = SearchMode.HYBRID,
    graph: Annotated[
        bool | None, typer.Option("--graph/--no-graph", help="Route the question and add graph evidence (hybrid only).")
    ] = None,
    source: Sources = None,
    date_from: DateFrom = None,
    date_to: DateTo = None,
    as_of: AsOf = None,
    max_hops: MaxHops = None,
    graph_paths: GraphPaths = False,
    entities: Annotated[bool, typer.Option("--entities", help="List the entities the query links to.")] = False,
    text_graph: Annotated[
        bool | None,
        typer.Option("--text-graph/--no-text-graph", help="Walk the text graph on top of hybrid search."),
    ] = None,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
    principal: Principal = None,
    group: Groups = None,
    admin: Admin = False,
) -> None:
    """Hybrid search (dense + BM25, fused by reciprocal rank fusion) over the chunks you may read."""
    filters = filters_from(source, date_from, date_to, as_of)
    state = CliState.from_options(data_dir, as_json)
    with open_app(state, reads_only=True) as kg:
        response = kg.search(
            query,
            caller_from(principal, group, admin),
            top_k=top_k,
            mode=mode,
            graph=graph,
            filters=filters,
            include_entities=entities,
            max_hops=max_hops,
            include_graph_paths=graph_paths,
            text_graph=text_graph,
        )
    if state.as_json:
        render.emit_json(response.as_dict())
        return
    render.search_results(state.out, response)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="A question in plain words.")],
    graph: Annotated[
        bool | None, typer.Option("--graph/--no-graph", help="Route the question and add graph evidence.")
    ] = None,
    mode: Mode = AskMode.AUTO,
    source: Sources = None,
    date_from: DateFrom = None,
    date_to: DateTo = None,
    as_of: AsOf = None,
    max_hops: MaxHops = None,
    graph_paths: GraphPaths = False,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
    principal: Principal = None,
    group: Groups = None,
    admin: Admin = False,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream", help="Print each verified sentence as soon as it is ready (with --json: one event a line)."
        ),
    ] = False,
) -> None:
    """Answer a question from your documents; every sentence cites the exact source span."""
    filters = filters_from(source, date_from, date_to, as_of)
    state = CliState.from_options(data_dir, as_json)
    if stream:
        with open_app(state, reads_only=True) as kg:
            for event in kg.ask_stream(question, caller_from(principal, group, admin), graph=graph):
                render.answer_event(state.out, event, as_json=state.as_json)
        return
    with open_app(state, reads_only=True) as kg:
        answer = kg.ask(
            question,
            caller_from(principal, group, admin),
            graph=graph,
            mode=mode,
            filters=filters,
            max_hops=max_hops,
            include_graph_paths=graph_paths,
        )
    if state.as_json:
        render.emit_json(answer)
        return
    render.answer(state.out, answer)


@app.command()
def delete(
    doc_id: Annotated[str, typer.Argument(help="The document ID (see `kgrag documents`).")],
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Delete a document from every store and cache, and record what was removed."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        outcome = kg.delete(doc_id)
    if outcome.error_code is not None:
        raise KgragError(outcome.error_code, outcome.message, hint=DELETE_HINT)
    if state.as_json:
        render.emit_json(outcome.as_dict())
        return
    state.out.print(f"Deleted [bold]{doc_id}[/]: {outcome.chunks_removed} chunks removed from every store.")


@app.command()
def status(
    doc: Annotated[
        str | None,
        typer.Option(
            "--doc",
            help="Only this document's outcomes (indexed, updated, unchanged, rejected with its code, deleted), "
            "newest first: what GET /v1/ingest/documents/{id}/status answers. KGRAG_RUNTIME=distributed reads "
            "the deployment's PostgreSQL (KGRAG_PG_DSN, KGRAG_KEK) instead of --data-dir.",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[int, typer.Option(help="With --doc: outcomes at most (1-100).")] = 20,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """What the index holds: documents, chunks, ACL classes, cached vectors, recent ingest errors; with
    --doc ID, what became of one document.

    Operator view: shows every document's data, restricted ones included, to whoever can open this index on
    this machine (no --principal/--group filter applies). Over HTTP the same data is admin-only.
    """
    if doc is not None:
        _document_status(doc, limit, data_dir, as_json)
        return
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        info = kg.status()
        errors = [
            {**o.as_dict(), "at": o.at.isoformat() if o.at else None}
            for o in kg.ingest_log.recent_errors(RECENT_ERRORS)
        ]
    info["data_dir"] = str(state.settings.data_dir)
    # `ingest_errors` counts every error ever logged; `recent_errors` is the newest of them (at most
    # RECENT_ERRORS), so the two never disagree by what a window of all outcomes happened to hold.
    info["recent_errors"] = errors
    if state.as_json:
        render.emit_json(info)
        return
    render.status(state.out, info)


def _document_status(doc_id: str, limit: int, data_dir: Path | None, as_json: bool) -> None:
    from kgrag_core.ingest_status import document_status
    from kgrag_runtime.settings import KgragSettings

    distributed = KgragSettings().runtime == "distributed"
    # Distributed: the deployment's database, not a local index folder (nothing to check or create there).
    state = CliState.from_options(data_dir, as_json, uses_index=not distributed)
    with open_ingest_log(state) as log:
        answer = document_status(log, doc_id, limit=limit)
    if state.as_json:
        render.emit_json(answer)
        return
    render.document_status(state.out, answer)


@app.command()
def documents(
    include_deleted: Annotated[bool, typer.Option("--include-deleted", help="Also list deleted documents.")] = False,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """List the documents in the index (IDs for `kgrag delete`), with version and status.

    Operator view: shows every document's data, restricted ones included, to whoever can open this index on
    this machine (no --principal/--group filter applies). Over HTTP the same data is admin-only.
    """
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        docs = kg.searcher.documents.list_documents(include_deleted=include_deleted)
    rows = [
        {
            "doc_id": d.doc_id,
            "title": d.title,
            "source": d.source,
            "version": d.version,
            "status": d.status.value,
            "modified_at": d.modified_at.isoformat() if d.modified_at else None,
        }
        for d in docs
    ]
    if state.as_json:
        render.emit_json({"documents": rows})
        return
    render.documents(state.out, rows)


@app.command(name="eval")
def eval_command(
    questions: Annotated[Path | None, typer.Argument(help="Questions JSONL (see docs/evaluation.md).")] = None,
    corpus: Annotated[list[Path] | None, typer.Option(help="Ingest this corpus first (repeatable).")] = None,
    budget_tokens: Annotated[int, typer.Option(help="Token budget for key-fact recall.")] = 2000,
    extraction_gold: Annotated[
        Path | None,
        typer.Option(
            help="Also score extraction per tier against this labelled folder "
            "(gold.jsonl + llm_replies.jsonl), on a fresh temporary index of --corpus."
        ),
    ] = None,
    reply_book: Annotated[
        Path | None,
        typer.Option(
            help="Build the graph with tier 3 reading every chunk from this reply book (an offline "
            "stand-in for a model, e.g. corpora/northwind/extraction/corpus_replies.jsonl)."
        ),
    ] = None,
    extra_questions: Annotated[
        list[Path] | None,
        typer.Option(help="More question files scored in the same run (e.g. corpora/northwind/questions-test.jsonl)."),
    ] = None,
    answerers: Annotated[
        str | None,
        typer.Option(
            help="Answerers scored on the same hits, comma-separated (extractive, llm); default: extractive, "
            "and llm when a model (or KGRAG_LLM_REPLAY_DIR) is configured."
        ),
    ] = None,
    compare: Annotated[
        str | None, typer.Option(help="OLD,NEW: the answerers the sign tests compare (default: the first two).")
    ] = None,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Score retrieval and answers per question type and split (recall, MRR, nDCG, key facts, answer metrics,
    ablations, router accuracy), and with --extraction-gold, extraction precision/recall per tier and the
    dedup rate."""
    from kgrag_runtime.evaluation.answers import answerers_named
    from kgrag_runtime.evaluation.runner import run_evaluation

    if questions is None and extraction_gold is None:
        raise KgragError(
            ErrorCode.MISSING_FIELD,
            "Nothing to evaluate.",
            hint="Pass a questions file, --extraction-gold DIR, or both.",
        )
    # A corpus to ingest makes a new index; without one there is only an existing index to score.
    state = CliState.from_options(data_dir, as_json, creates=bool(corpus), uses_index=questions is not None)
    if reply_book is not None:
        if not reply_book.is_file():
            raise KgragError(
                ErrorCode.SOURCE_UNREADABLE,
                f"No reply book at {reply_book}.",
                hint="Pass a JSONL reply book (docs/evaluation.md, the graph layer).",
            )
        # A full tier-3 pass, as with a model configured for every source.
        state = replace(
            state,
            settings=state.settings.model_copy(
                update={"extraction_reply_book": reply_book, "extraction_priority_sources": ["*"]}
            ),
        )
    report: dict[str, object] = {}
    if questions is not None:
        with open_app(state) as kg:
            for path in corpus or []:
                from kgrag_adapters.connectors import iter_path

                items = list(iter_path(path))
                with _progress(state, len(items), f"Ingesting {path.name}") as advance:
                    kg.ingest(items, progress=advance)
            pair = tuple(n.strip() for n in compare.split(",")) if compare else None
            if pair is not None and len(pair) != 2:
                raise KgragError(ErrorCode.INVALID_QUERY, "--compare takes two answerer names: OLD,NEW.")
            names = [n.strip() for n in answerers.split(",") if n.strip()] if answerers else None
            report = run_evaluation(
                kg,
                [questions, *(extra_questions or [])],
                budget_tokens=budget_tokens,
                progress_console=None if state.as_json else state.console,
                answerers=answerers_named(kg, names) if names else None,
                compare=(pair[0], pair[1]) if pair is not None else None,
            )
    if extraction_gold is not None:
        from kgrag_runtime.evaluation.extraction_runner import run_extraction_evaluation

        if not corpus:
            raise KgragError(
                ErrorCode.MISSING_FIELD,
                "--extraction-gold needs the corpus it labels.",
                hint="Add --corpus corpora/northwind/documents.jsonl --corpus corpora/northwind/records.jsonl",
            )
        if not state.as_json:
            state.console.print("Scoring extraction on a fresh temporary index…")
        report["extraction"] = run_extraction_evaluation(state.settings, extraction_gold, corpus)
    if state.as_json:
        render.emit_json(report)
        return
    if questions is not None:
        render.eval_report(state.out, report)
    if extraction_gold is not None:
        render.extraction_report(state.out, report["extraction"])


@app.command()
def bench(
    out: Annotated[Path, typer.Option(help="Folder for the Markdown and JSON results.")] = Path("bench-results"),
    sizes: Annotated[str, typer.Option(help="Chunk counts for the search benchmark, comma-separated.")] = "10000",
    queries: Annotated[int, typer.Option(help="Queries per configuration.")] = 200,
) -> None:
    """Benchmarks: ingest throughput vs the embedding model alone, search latency vs a plain baseline."""
    from kgrag_runtime.benchmarks.runner import run_benchmarks

    run_benchmarks(out, [int(s) for s in sizes.split(",") if s.strip()], queries, Console(stderr=True))


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8000,
    data_dir: DataDir = None,
) -> None:
    """Run the HTTP API (OpenAPI docs at /docs) on the embedded default."""
    try:
        from kgrag_query_api.server import serve_embedded
    except ImportError as err:
        raise KgragError(
            ErrorCode.CONFIGURATION_INVALID,
            "The HTTP API package is not installed.",
            hint="Install kgrag-query-api (it comes with `make install`).",
        ) from err
    # The API ingests too (POST /v1/ingest/documents), so it may start a new index.
    state = CliState.from_options(data_dir, False, creates=True)
    serve_embedded(state.settings, host=host, port=port)


_progress = render.progress

app.add_typer(extract_app, name="extract")
app.add_typer(ontology_app, name="ontology")
app.add_typer(entities_app, name="entities")
app.add_typer(communities_app, name="communities")
app.add_typer(eval_runs_app, name="eval-runs")
app.command()(claims)
app.command()(trace)
app.command()(feedback)
app.command()(mcp)
app.command()(watch)
app.add_typer(curation_app, name="curation")


def main() -> None:
    hide_flag_types()
    try:
        app()
    except ValidationError as err:
        _report(
            KgragError(
                ErrorCode.CONFIGURATION_INVALID,
                f"Invalid settings: {_brief(err)}",
                hint="Check the KGRAG_* environment variables (docs/configuration.md).",
            )
        )
    except KgragError as err:
        _report(err)


def _brief(err: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg']}" for e in err.errors()[:5])


def _report(err: KgragError) -> None:
    if "--json" in sys.argv:
        print(json.dumps({"error": err.as_dict()}))
    else:
        console = Console(stderr=True)
        console.print(f"[bold red]error[/] [{err.code.value}] {err.message}")
        if err.hint:
            console.print(f"[yellow]hint[/] {err.hint}")
    sys.exit(2)
