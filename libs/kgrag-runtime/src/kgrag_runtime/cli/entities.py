"""`kgrag entities …`: the knowledge graph's entities from the shell, reads and resolution administration.

Reads follow --principal/--group/--admin like `kgrag search`; administration (merge, split, review, a
resolution pass) acts on the whole graph, as the operator who owns the data folder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from kgrag_runtime.cli import render
from kgrag_runtime.cli.context import CliState, open_app
from kgrag_runtime.cli.options import Admin, DataDir, Groups, JsonOut, Principal, caller_from

if TYPE_CHECKING:  # the CLI's start-up imports only what `--help` needs
    from kgrag_runtime.app import KgragApp
    from kgrag_runtime.graph_admin import GraphAdmin

entities_app = typer.Typer(
    help="Entities of the knowledge graph: show, neighbours, resolve names; merge, split and review (reversible).",
    no_args_is_help=True,
)

EntityId = Annotated[str, typer.Argument(help="An entity id (ent_…); any member of a merged entity works.")]


def _graph(kg: KgragApp) -> GraphAdmin:
    return kg.require_graph()


def _edges_table(title: str, edges: Sequence[Mapping[str, Any]]) -> Table:
    table = Table(
        "subject", "relation", "object", "modality", "valid", "evidence", "depth", title=title, title_justify="left"
    )
    for e in edges:
        valid = f"{e['valid_from'] or ''}..{e['valid_to'] or ''}" if e["valid_from"] or e["valid_to"] else ""
        table.add_row(
            escape(e["subject"]["name"]),
            e["relation"],
            escape(e["object"]["name"]),
            f"{e['modality']}{'' if e['polarity'] == 'positive' else ' (negated)'}",
            valid,
            str(e["evidence_count"]),
            str(e.get("depth", 1)),
        )
    return table


def _summary_line(s: Mapping[str, Any]) -> str:
    hub = " [yellow]hub[/]" if s["is_hub"] else ""
    aliases = ", ".join(a for a in s["aliases"] if a != s["name"])
    also = f"  aka {escape(aliases)}" if aliases else ""
    return f"[bold]{escape(s['name'])}[/] ({s['type']}, {s['entity_id']}, degree {s['degree']}){hub}{also}"


@entities_app.command("show")
def show(
    entity_id: EntityId,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
    principal: Principal = None,
    group: Groups = None,
    admin: Admin = False,
) -> None:
    """An entity: aliases, strong ids, attributes with validity and evidence, relations with evidence counts,
    conflicts. Only what your documents show."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        entity: dict[str, Any] = _graph(kg).entity(entity_id, caller_from(principal, group, admin))
    if state.as_json:
        render.emit_json(entity)
        return
    out = state.out
    out.print(_summary_line(entity))
    for kind, value in entity["strong_ids"]:
        out.print(f"  {kind}: {escape(value)}")
    if len(entity["members"]) > 1:
        out.print(f"  resolved from {', '.join(entity['members'])}")
    attributes = []
    for a in entity["attributes"]:
        valid = f"{a['valid_from'] or ''}..{a['valid_to'] or ''}" if a["valid_from"] or a["valid_to"] else ""
        attributes.append(
            (
                str(a["attribute"]),
                escape(str(a["value"])),
                str(a["modality"]),
                str(a["status"]),
                valid,
                str(a["written_at"]),
                escape(a["doc_id"]),
            )
        )
    render.id_table(
        out,
        ("attribute", "value", "modality", "status", "valid", "written", "doc"),
        attributes,
        ids={"doc"},
        title="Attributes",
    )
    out.print(_edges_table("Relations", entity["relations"]))
    if entity["conflicts"]:
        out.print(
            f"[red]{len(entity['conflicts'])} conflicting claim(s)[/]: "
            + ", ".join(f"{c['attribute']}={c['value']}" for c in entity["conflicts"])
        )


@entities_app.command("neighbors")
def neighbors(
    entity_id: EntityId,
    relation: Annotated[str | None, typer.Option("--relation", "-r", help="Only this relation, e.g. OWNS.")] = None,
    depth: Annotated[int, typer.Option("--depth", help="Hops, 1-3. Never through a hub.")] = 1,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Edges at most, 1-200.")] = 50,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
    principal: Principal = None,
    group: Groups = None,
    admin: Admin = False,
) -> None:
    """Edges around an entity, breadth first, strongest first; what was cut (limit, hubs) is reported."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        found: dict[str, Any] = _graph(kg).neighbours(
            entity_id, caller_from(principal, group, admin), relation=relation, depth=depth, limit=limit
        )
    if state.as_json:
        render.emit_json(found)
        return
    state.out.print(_summary_line(found["entity"]))
    state.out.print(_edges_table("Neighbours", found["edges"]))
    if found["truncated"]:
        state.out.print(f"[yellow]truncated[/]: {escape('; '.join(found['truncated']))}")


@entities_app.command("resolve")
def resolve(
    name: Annotated[str, typer.Argument(help="A name, e.g. 'Priya Raman' or Atlas.")],
    entity_type: Annotated[str | None, typer.Option("--type", "-t", help="Only this type, e.g. Person.")] = None,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
    principal: Principal = None,
    group: Groups = None,
    admin: Admin = False,
) -> None:
    """Which entities a name may mean (namesakes kept apart), best connected first."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        found: dict[str, Any] = _graph(kg).resolve(name, caller_from(principal, group, admin), entity_type=entity_type)
    if state.as_json:
        render.emit_json(found)
        return
    if not found["candidates"]:
        state.out.print(f"No entity you may see is called {escape(name)!r}.")
    for candidate in found["candidates"]:
        state.out.print(_summary_line(candidate))


@entities_app.command("merge")
def merge(
    entity_ids: Annotated[list[str], typer.Argument(help="Two or more entity ids.")],
    canonical: Annotated[
        str | None, typer.Option("--canonical", help="The id the merged entity keeps (default: the smallest).")
    ] = None,
    reason: Annotated[str, typer.Option("--reason", help="Why: kept in the merge log.")] = "",
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Merge entities by hand. Logged with its reason; `kgrag entities split MERGE_ID` undoes it exactly."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        record = _graph(kg).merge(entity_ids, canonical_id=canonical, reason=reason)
    _show_merge(state, record, "Merged")


@entities_app.command("split")
def split(
    merge_id: Annotated[str, typer.Argument(help="A merge id (see `kgrag entities merges`).")],
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Revert a merge: its members get back their own aliases, facts and neighbours."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        record = _graph(kg).split(merge_id)
    _show_merge(state, record, "Split")


@entities_app.command("split-mentions")
def split_mentions(
    entity_id: Annotated[str, typer.Argument(help="The entity whose mentions stand for two things.")],
    doc_ids: Annotated[list[str], typer.Option("--doc", help="A document whose mentions go to the new entity.")],
    reason: Annotated[str, typer.Option("--reason", help="Why: kept in the split log.")] = "",
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Separate namesakes: the entity's mentions in the --doc documents become an entity of their own.

    Kept through re-ingests, ACL changes and re-extractions; `kgrag entities merge` joins them again."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        split: dict[str, Any] = _graph(kg).split_mentions(entity_id, doc_ids, reason=reason)
    if state.as_json:
        render.emit_json(split)
        return
    docs = escape(", ".join(split["doc_ids"]))
    state.out.print(f"Split {split['from_id']}: {docs} now name {split['entity_id']}.")


@entities_app.command("merges")
def merges(
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many, newest first.")] = 50,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """The merge log, newest first (reverted merges included), with who decided and why.

    Operator view: shows every document's data, restricted ones included, to whoever can open this index on
    this machine (no --principal/--group filter applies). Over HTTP the same data is admin-only.
    """
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        rows: list[dict[str, Any]] = _graph(kg).merges(limit)
    if state.as_json:
        render.emit_json({"merges": rows})
        return
    render.id_table(
        state.out,
        ("merge", "canonical", "members", "decided by", "reverted", "basis"),
        [
            (
                m["merge_id"],
                m["canonical_id"],
                ", ".join(m["members"]),
                escape(str(m["decided_by"])),
                "yes" if m["reverted"] else "",
                escape("; ".join(f"{b['rule']} {b['score']}" for b in m["basis"])),
            )
            for m in rows
        ],
        ids={"merge", "canonical", "members"},
    )


@entities_app.command("review")
def review(
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many, highest score first.")] = 50,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """The review queue: pairs scored "possibly the same", waiting for `kgrag entities decide`.

    Operator view: shows every document's data, restricted ones included, to whoever can open this index on
    this machine (no --principal/--group filter applies). Over HTTP the same data is admin-only.
    """
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        graph = _graph(kg)
        pairs: list[dict[str, Any]] = graph.review_queue(limit)
        names = {i: graph.store.entity(i, None) for p in pairs for i in (p["a"], p["b"])}
    if state.as_json:
        render.emit_json({"pairs": pairs})
        return
    rows = []
    for p in pairs:
        a, b = names[p["a"]], names[p["b"]]
        rows.append(
            (
                p["a"],
                escape(a.entity.name) if a else "",
                p["b"],
                escape(b.entity.name) if b else "",
                str(p["score"]),
                ", ".join(f"{k}={v}" for k, v in p["features"].items()),
                str(p["rule"]),
            )
        )
    render.id_table(state.out, ("a", "name a", "b", "name b", "score", "features", "rule"), rows, ids={"a", "b"})


@entities_app.command("decide")
def decide(
    a: Annotated[str, typer.Argument(help="One entity id of a queued pair.")],
    b: Annotated[str, typer.Argument(help="The other.")],
    same: Annotated[bool, typer.Option("--same/--different", help="Merge the pair, or keep it apart for good.")],
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Decide a pair from the review queue: --same merges it (logged, reversible), --different keeps it apart."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        decision = _graph(kg).decide(a, b, same=same)
    if state.as_json:
        render.emit_json(decision)
        return
    merged: Any = decision["merge"]
    state.out.print(
        f"{a} and {b}: {'same' if same else 'different'}" + (f", merged as {merged['merge_id']}" if merged else "")
    )


@entities_app.command("resolve-pass")
def resolve_pass(data_dir: DataDir = None, as_json: JsonOut = False) -> None:
    """Run a resolution pass now (it also runs after every extraction) and relabel hubs."""
    state = CliState.from_options(data_dir, as_json)
    with open_app(state) as kg:
        report = _graph(kg).run_resolution()
    if state.as_json:
        render.emit_json(report)
        return
    render.key_values(state.out, report, "Resolution pass")


def _show_merge(state: CliState, record: Mapping[str, Any], verb: str) -> None:
    if state.as_json:
        render.emit_json(record)
        return
    state.out.print(
        f"{verb} [bold]{record['merge_id']}[/]: {', '.join(record['members'])} "
        f"{'apart from' if record['reverted'] else 'into'} {record['canonical_id']}."
    )
