"""`kgrag communities …`: communities over the entity graph from the shell (docs/communities.md).

Reads follow --principal/--group/--admin like `kgrag search`: members only your documents name, sizes
counted over those. A rebuild acts on the whole graph, as the operator who owns the data folder."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from kgrag_runtime.cli import render
from kgrag_runtime.cli.context import CliState, open_app
from kgrag_runtime.cli.options import Admin, DataDir, Groups, JsonOut, Principal, caller_from

communities_app = typer.Typer(
    help="Communities of related entities (hierarchical Leiden): list, show, rebuild.", no_args_is_help=True
)

CommunityId = Annotated[str, typer.Argument(help="A community id (com_…), from `kgrag communities list`.")]
Level = Annotated[int | None, typer.Option("--level", help="Only this level (0 is the top).")]
Limit = Annotated[int, typer.Option("--limit", help="At most this many (1-200).")]


def _members(c: Mapping[str, Any], most: int = 6) -> str:
    names = [escape(m["name"]) for m in c["members"][:most]]
    more = f" +{c['size'] - most}" if c["size"] > most else ""
    return ", ".join(names) + more


@communities_app.command("list")
def list_communities(
    level: Level = None,
    limit: Limit = 50,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
    principal: Principal = None,
    group: Groups = None,
    admin: Admin = False,
) -> None:
    """Communities you may see, by level, largest first."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        found = kg.require_communities().listing(caller_from(principal, group, admin), level=level, limit=limit)
    if state.as_json:
        render.emit_json(found)
        return
    table = Table("community", "level", "size", "stale", "members", title="Communities", title_justify="left")
    for c in found["communities"]:  # type: ignore[attr-defined]
        table.add_row(c["community_id"], str(c["level"]), str(c["size"]), "yes" if c["stale"] else "", _members(c))
    state.out.print(table)


@communities_app.command("show")
def show(
    community_id: CommunityId,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
    principal: Principal = None,
    group: Groups = None,
    admin: Admin = False,
) -> None:
    """One community: its visible members, level, parent, children, staleness and the graph version it is of."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        found = kg.require_communities().show(community_id, caller_from(principal, group, admin))
    if state.as_json:
        render.emit_json(found)
        return
    out = state.out
    stale = " [yellow]stale[/]" if found["stale"] else ""
    out.print(f"[bold]{found['community_id']}[/] (level {found['level']}, {found['size']} members){stale}")
    for m in found["members"]:  # type: ignore[attr-defined]
        out.print(f"  {escape(m['name'])} ({m['type']}, {m['entity_id']})")
    if found["children"]:
        out.print(f"children: {', '.join(found['children'])}")  # type: ignore[arg-type]
    summary = found.get("summary")
    if isinstance(summary, dict):  # the caller's summary: the model's (verified) or the key sentences
        fallback = summary.get("fallback")
        why = f" ({fallback['reason']})" if isinstance(fallback, dict) else ""
        out.print(f"[bold]summary[/] ({summary.get('mode', 'extractive')}){why}")
        for sentence in summary.get("summary") or []:
            cites = "".join(f"[{n}]" for n in sentence["citations"])
            out.print(f"  {escape(sentence['text'])} {cites}")


@communities_app.command("rebuild")
def rebuild(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only count what a rebuild would recluster.")] = False,
    stale: Annotated[bool, typer.Option("--stale", help="Only the stale communities, not everything.")] = False,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Recluster every community (or only the stale ones); changes after ingestion do this incrementally."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        report = kg.require_communities().rebuild(dry_run=dry_run, stale_only=stale)
    if state.as_json:
        render.emit_json(report)
        return
    render.key_values(state.out, report, "Community rebuild (dry run)" if dry_run else "Community rebuild")
