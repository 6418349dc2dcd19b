"""The canonical mapping (er_canonical) derived from the merge log, for the clusters a set of entities is in.

Both writers of entity rows need it: a merge or split (graph_store) recomputes the clusters it touched, and
saving extraction results (extraction_store) recomputes those of the entities it wrote. Saving replaces a
chunk's facts, so an entity whose only evidence was rewritten (an ACL change, a re-ingest, a re-extraction)
is deleted, taking its mapping rows with it, and inserted again under the same id; re-deriving its clusters
from the log puts a curator's merges back in the same transaction (and keeps a split split).
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from psycopg.types.json import Jsonb

from kgrag_adapters.postgres.store import Row


def lock_merge_log(conn: psycopg.Connection[Row]) -> None:
    """One merge or split at a time: a recluster reads the merges around it, then rewrites their mapping."""
    conn.execute("LOCK TABLE er_merge_log IN SHARE ROW EXCLUSIVE MODE")


def hold_merge_log(conn: psycopg.Connection[Row]) -> None:
    """Keep merges and splits out until this transaction ends, without excluding other holders: saving results
    takes it before writing entity rows (so a merge never waits on those rows while the save waits on it) and
    re-derives the mapping of what it wrote from a log that cannot change meanwhile."""
    conn.execute("LOCK TABLE er_merge_log IN SHARE MODE")


def recluster(conn: psycopg.Connection[Row], seeds: Sequence[str]) -> None:
    """Recompute the mapping of every cluster that contains one of `seeds`, from the merges in force."""
    entities = set(seeds)
    frontier = set(seeds)
    merges: dict[str, tuple[int, str, list[str]]] = {}
    needs: dict[tuple[str, str], frozenset[str]] = {}  # (canonical, member) link -> classes it requires
    while frontier:
        rows = conn.execute(
            "SELECT merge_id, seq, canonical_id, entities, basis FROM er_merge_log"
            " WHERE NOT reverted AND entities && %s",
            (sorted(frontier),),
        ).fetchall()
        frontier = set()
        for merge_id, seq, cid, linked, basis in rows:
            if merge_id in merges:
                continue
            merges[merge_id] = (int(seq), cid, list(linked))
            for member in linked:
                if member != cid:
                    needs[(cid, member)] = needs.get((cid, member), frozenset()) | _link_needs(basis, member)
            fresh = set(linked) - entities
            entities |= fresh
            frontier |= fresh
    parent = {e: e for e in entities}

    def root(e: str) -> str:
        while parent[e] != e:
            parent[e] = parent[parent[e]]
            e = parent[e]
        return e

    for _, cid, linked in merges.values():
        for e in linked:
            parent[root(e)] = root(cid)
    # The newest merge in a component names it.
    label: dict[str, tuple[int, str, str]] = {}
    for merge_id, (seq, cid, _) in merges.items():
        r = root(cid)
        if r not in label or seq > label[r][0]:
            label[r] = (seq, cid, merge_id)
    mapped = [(e, label[root(e)][1], label[root(e)][2]) for e in sorted(entities) if root(e) in label]
    rows_out = [m for m in mapped if m[0] != m[1]]
    required = _requirements({label[r][1] for r in label}, needs)
    conn.execute("DELETE FROM er_canonical WHERE entity_id = ANY(%s)", (sorted(entities),))
    if rows_out:
        # Members whose entity is gone (no evidence left) get no row; the log still links the others.
        conn.execute(
            "INSERT INTO er_canonical (entity_id, canonical_id, merge_id, requires)"
            " SELECT k.e, k.c, k.m, ARRAY(SELECT jsonb_array_elements_text(k.r))"
            " FROM unnest(%s::text[], %s::text[], %s::text[], %s::jsonb[]) AS k(e, c, m, r)"
            " JOIN kg_entities e ON e.entity_id = k.e"
            # Two saves holding the log may recluster one cluster at once; both derive the same rows from it.
            " ON CONFLICT (entity_id) DO UPDATE SET canonical_id = EXCLUDED.canonical_id,"
            " merge_id = EXCLUDED.merge_id, requires = EXCLUDED.requires",
            (
                [m[0] for m in rows_out],
                [m[1] for m in rows_out],
                [m[2] for m in rows_out],
                [Jsonb(sorted(required.get(m[0], frozenset()))) for m in rows_out],
            ),
        )


def _link_needs(basis: object, member: str) -> frozenset[str]:
    """The classes the pair decisions that moved `member` require (none for a hand merge's plain pairs)."""
    out: set[str] = set()
    for decision in basis if isinstance(basis, list) else ():
        if isinstance(decision, dict) and member in (decision.get("a"), decision.get("b")):
            out.update(str(c) for c in decision.get("requires", ()))
    return frozenset(out)


def _requirements(labels: set[str], needs: dict[tuple[str, str], frozenset[str]]) -> dict[str, frozenset[str]]:
    """Each entity's classes a reader must hold to see it in its cluster: what the links on its way to the
    label require, links needing nothing taken first (so a member reached without restricted evidence needs
    none, even when a restricted decision also links it)."""
    adjacent: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for (a, b), need in needs.items():
        adjacent.setdefault(a, []).append((b, need))
        adjacent.setdefault(b, []).append((a, need))
    best: dict[str, frozenset[str]] = {label: frozenset() for label in labels}
    queue = sorted(labels)
    while queue:  # a relaxation: a member's requirement only ever shrinks, so this ends
        node = queue.pop(0)
        for other, need in sorted(adjacent.get(node, ()), key=lambda item: (len(item[1]), item[0])):
            candidate = best[node] | need
            known = best.get(other)
            if known is None or (candidate < known) or (len(candidate) < len(known)):
                best[other] = candidate
                queue.append(other)
    return best
