"""What the entity page shows, computed from the API's own answers (`GET /v1/entities/{id}` and
`/neighbors`): a timeline per attribute, relations grouped by type, and the neighbourhood as graph elements.

Pure functions over the JSON the caller's token was given, so the page can never show more than the API
showed that token: nothing here reads a store.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

HUB_PREFIX = "hub not passed: "
# The API's id pattern (patterns.KEY) in a form FastAPI's validators accept (no look-ahead): the web app's
# paths take the same ids, and the API checks them again.
UI_KEY = r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$"

# A plan, a negation or an opinion is `not_a_fact` to the API; the page names which, because "planned" and
# "denied" read differently to a person.
_NOT_A_FACT = {"plan": "plan", "hypothetical": "hypothetical", "opinion": "opinion", "ai_suggestion": "suggestion"}


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    claim_id: str
    value: str
    mark: str  # current | superseded | conflict | negated | plan | hypothetical | opinion | suggestion | not_a_fact
    valid_from: str | None
    valid_to: str | None
    written_at: str | None
    quote: str
    doc_id: str
    chunk_id: str
    confidence: float | None


@dataclass(frozen=True, slots=True)
class AttributeTimeline:
    attribute: str
    entries: tuple[TimelineEntry, ...]

    @property
    def has_conflict(self) -> bool:
        return any(e.mark == "conflict" for e in self.entries)


@dataclass(frozen=True, slots=True)
class RelationRow:
    relation_id: str
    direction: str  # out (this entity is the subject) | in
    other_id: str
    other_name: str
    other_type: str
    evidence_count: int
    modality: str
    polarity: str
    valid_from: str | None
    valid_to: str | None
    latest_written: str | None


@dataclass(frozen=True, slots=True)
class RelationGroup:
    relation: str
    rows: tuple[RelationRow, ...]

    @property
    def evidence_count(self) -> int:
        return sum(r.evidence_count for r in self.rows)


@dataclass(slots=True)
class GraphView:
    """Cytoscape's `elements` plus what the walk left out, for the page to say so."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    hubs: list[str] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)
    relation_types: list[str] = field(default_factory=list)

    def elements(self) -> list[dict[str, Any]]:
        return [{"group": "nodes", "data": n} for n in self.nodes] + [{"group": "edges", "data": e} for e in self.edges]


def mark_of(claim: Mapping[str, Any]) -> str:
    status = str(claim.get("status") or "")
    if status in ("current", "superseded", "conflict"):
        return status
    if claim.get("polarity") == "negative":
        return "negated"
    return _NOT_A_FACT.get(str(claim.get("modality") or ""), "not_a_fact")


def _entry(claim: Mapping[str, Any]) -> TimelineEntry:
    confidence = claim.get("confidence")
    return TimelineEntry(
        claim_id=str(claim.get("claim_id") or ""),
        value=str(claim.get("value") or ""),
        mark=mark_of(claim),
        valid_from=claim.get("valid_from"),
        valid_to=claim.get("valid_to"),
        written_at=claim.get("written_at"),
        quote=str(claim.get("quote") or ""),
        doc_id=str(claim.get("doc_id") or ""),
        chunk_id=str(claim.get("chunk_id") or ""),
        confidence=float(confidence) if isinstance(confidence, int | float) else None,
    )


def _when(entry: TimelineEntry) -> tuple[str, str]:
    # Order by when the value held, else when it was written; undated claims first (the oldest we can say).
    return (entry.valid_from or entry.written_at or "", entry.written_at or "")


def timelines(attributes: Iterable[Mapping[str, Any]]) -> list[AttributeTimeline]:
    """One timeline per attribute, oldest first; attributes with a conflict first, then by name."""
    by_attribute: dict[str, list[TimelineEntry]] = defaultdict(list)
    for claim in attributes:
        by_attribute[str(claim.get("attribute") or "")].append(_entry(claim))
    out = [AttributeTimeline(a, tuple(sorted(entries, key=_when))) for a, entries in by_attribute.items()]
    return sorted(out, key=lambda t: (not t.has_conflict, t.attribute))


def relation_groups(
    entity_id: str, members: Sequence[str], relations: Iterable[Mapping[str, Any]]
) -> list[RelationGroup]:
    """Relations grouped by type and direction ("OWNS", "<- OWNS"), the most evidenced group first."""
    own = {entity_id, *members}
    grouped: dict[str, list[RelationRow]] = defaultdict(list)
    for rel in relations:
        subject, obj = rel.get("subject") or {}, rel.get("object") or {}
        outgoing = subject.get("entity_id") in own
        other = obj if outgoing else subject
        label = str(rel.get("relation") or "") if outgoing else f"<- {rel.get('relation')}"
        grouped[label].append(
            RelationRow(
                relation_id=str(rel.get("relation_id") or ""),
                direction="out" if outgoing else "in",
                other_id=str(other.get("entity_id") or ""),
                other_name=str(other.get("name") or ""),
                other_type=str(other.get("type") or ""),
                evidence_count=int(rel.get("evidence_count") or 0),
                modality=str(rel.get("modality") or ""),
                polarity=str(rel.get("polarity") or ""),
                valid_from=rel.get("valid_from"),
                valid_to=rel.get("valid_to"),
                latest_written=rel.get("latest_written"),
            )
        )
    groups = [
        RelationGroup(k, tuple(sorted(v, key=lambda r: (-r.evidence_count, r.other_name)))) for k, v in grouped.items()
    ]
    return sorted(groups, key=lambda g: (-g.evidence_count, g.relation))


def graph_view(neighbours: Mapping[str, Any]) -> GraphView:
    """Nodes and edges of a `/neighbors` answer. Hubs the walk stopped at are marked (the API names them in
    `truncated`); the centre is marked too when it is a hub itself."""
    centre = neighbours.get("entity") or {}
    truncated = [str(t) for t in neighbours.get("truncated") or []]
    hub_names = {t[len(HUB_PREFIX) :] for t in truncated if t.startswith(HUB_PREFIX)}
    view = GraphView(truncated=truncated)
    nodes: dict[str, dict[str, Any]] = {}

    def node(ref: Mapping[str, Any], depth: int) -> str:
        node_id = str(ref.get("entity_id") or "")
        if node_id not in nodes:
            name = str(ref.get("name") or "")
            nodes[node_id] = {
                "id": node_id,
                "label": name,
                "type": str(ref.get("type") or ""),
                "depth": depth,
                "hub": name in hub_names,
            }
        return node_id

    centre_id = node(centre, 0)
    nodes[centre_id]["centre"] = True
    nodes[centre_id]["hub"] = bool(centre.get("is_hub"))
    relation_types: set[str] = set()
    for edge in neighbours.get("edges") or []:
        depth = int(edge.get("depth") or 1)
        source, target = node(edge.get("subject") or {}, depth), node(edge.get("object") or {}, depth)
        relation = str(edge.get("relation") or "")
        relation_types.add(relation)
        view.edges.append(
            {
                "id": str(edge.get("relation_id") or f"{source}-{relation}-{target}"),
                "source": source,
                "target": target,
                "label": relation,
                "evidence": int(edge.get("evidence_count") or 0),
                "depth": depth,
            }
        )
    view.nodes = list(nodes.values())
    view.hubs = sorted(n["label"] for n in view.nodes if n["hub"])
    view.relation_types = sorted(relation_types)
    return view
