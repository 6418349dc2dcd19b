"""`kgrag extract …`, `kgrag ontology …` and `kgrag claims`: extraction administration from the shell."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from kgrag_core.extraction.records import RerunScope
from kgrag_runtime.cli import render
from kgrag_runtime.cli.context import CliState, open_app
from kgrag_runtime.cli.options import Admin, DataDir, Groups, JsonOut, Principal, caller_from

if TYPE_CHECKING:  # the CLI's start-up imports only what `--help` needs
    from kgrag_runtime.app import KgragApp
    from kgrag_runtime.extraction_admin import ExtractionAdmin

extract_app = typer.Typer(help="Knowledge extraction: status, re-extraction previews and runs.", no_args_is_help=True)
ontology_app = typer.Typer(help="The ontology extraction validates against (versioned).", no_args_is_help=True)


def _admin(kg: KgragApp) -> ExtractionAdmin:
    return kg.require_extraction()


def _show(state: CliState, payload: Any, title: str) -> None:
    if state.as_json:
        render.emit_json(payload)
        return
    render.key_values(state.out, payload, title)


@extract_app.command("status")
def extract_status(data_dir: DataDir = None, as_json: JsonOut = False) -> None:
    """Versions in force, facts stored, replies quarantined."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        _show(state, _admin(kg).status(), "Extraction")


@extract_app.command("rerun")
def extract_rerun(
    extractor_version: Annotated[str, typer.Option("--extractor-version", "-v", help="Version to extract with.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only preview chunks, calls, tokens, cost, time.")] = False,
    doc: Annotated[list[str] | None, typer.Option("--doc", help="Limit to this document (repeatable).")] = None,
    source: Annotated[list[str] | None, typer.Option("--source", help="Limit to this source (repeatable).")] = None,
    contains: Annotated[
        list[str] | None, typer.Option("--contains", help="Only chunks containing this term (repeatable).")
    ] = None,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Re-extract a scope with an extractor version. Preview first with --dry-run: it reads only the stores."""
    state = CliState.from_options(data_dir, as_json)
    scope = RerunScope(doc_ids=tuple(doc or ()), sources=tuple(source or ()), contains_any=tuple(contains or ()))
    with open_app(state) as kg:
        run = _admin(kg).rerun(scope, extractor_version, dry_run=dry_run)
    _show(state, run, "Re-extraction preview" if dry_run else "Re-extraction receipt")


@extract_app.command("resume")
def extract_resume(
    run_id: Annotated[str, typer.Argument(help="The run to continue.")],
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Continue an interrupted re-extraction run; chunks already done are not extracted again."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        _show(state, _admin(kg).resume(run_id), "Re-extraction receipt")


@extract_app.command("runs")
def extract_runs(
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many, newest first.")] = 20,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """List re-extraction runs (newest first) with their status and progress."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        rows = _admin(kg).runs(limit)
    if state.as_json:
        render.emit_json({"runs": rows})
        return
    cells = []
    for r in rows:
        preview: Any = r["preview"]
        receipt: Any = r.get("receipt") or {}
        cells.append(
            (
                str(r["run_id"]),
                str(r["status"]),
                escape(str(r["extractor_version"])),
                str(r["done_chunks"]),
                str(preview["calls"]),
                str(receipt.get("calls", 0)),
                str(r["created_at"])[:19],
            )
        )
    render.id_table(
        state.out,
        ("run", "status", "version", "chunks done", "calls planned", "calls made", "created"),
        cells,
        ids={"run"},
    )


@extract_app.command("run")
def extract_run(
    run_id: Annotated[str, typer.Argument(help="The run to show.")], data_dir: DataDir = None, as_json: JsonOut = False
) -> None:
    """Show a run's preview, receipt and progress."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        _show(state, _admin(kg).run(run_id), "Re-extraction run")


@ontology_app.command("show")
def ontology_show(data_dir: DataDir = None, as_json: JsonOut = False) -> None:
    """The ontology in force and the versions stored."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        _show(state, _admin(kg).ontology(), "Ontology")


@ontology_app.command("put")
def ontology_put(
    file: Annotated[Path, typer.Argument(help="Ontology YAML (see schemas/ontology/).")],
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Validate an ontology file and make it the version in force."""
    state = CliState.from_options(data_dir, as_json)
    from kgrag_runtime.extraction import read_yaml

    body = read_yaml(file)
    with open_app(state) as kg:
        _show(state, _admin(kg).put_ontology(body), "Ontology")


def claims(
    entity: Annotated[str, typer.Argument(help="Entity name, e.g. LEJ-2.")],
    attribute: Annotated[str | None, typer.Option("--attribute", "-a", help="Only this attribute.")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="What the documents said on YYYY-MM-DD.")] = None,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
    principal: Principal = None,
    group: Groups = None,
    admin: Admin = False,
) -> None:
    """An entity's claims over time (sorted by the date written), with superseded and conflicting values marked."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        rows = _admin(kg).claims(caller_from(principal, group, admin), entity=entity, attribute=attribute, as_of=as_of)
    if state.as_json:
        render.emit_json({"claims": rows})
        return
    cells = []
    for r in rows:
        status = str(r["status"]) + (f" by {r['superseded_by']}" if r.get("superseded_by") else "")
        cells.append(
            (
                str(r["written_at"]),
                escape(str(r["attribute"])),
                escape(str(r["value"])),
                str(r["modality"]),
                escape(status),
                escape(str(r["quote"])[:80]),
                escape(str(r["doc_id"])),
            )
        )
    render.id_table(
        state.out,
        ("written", "attribute", "value", "modality", "status", "quote", "doc"),
        cells,
        ids={"doc"},
        title=f"Claims about {escape(entity)}",
    )
