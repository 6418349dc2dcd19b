"""Whether a merge rests on evidence every reader who would see it may read (docs/security.md, section 1).

Resolution is global: it compares every mention whatever its ACL, so two entities a public reader sees may
be merged because a restricted record ties them (a shared identifier only an HR record carries). A reader
sees a merge when they see a member on each side; they may be shown it only when evidence they can read
supports it. For each pair of ACL classes (x of one side's evidence, y of the other's) the pair is judged
again on identity evidence alone, as a reader holding just x and y would see it: a strong identifier both
sides show there, or names alike enough to merge by name alone. When every such pair passes, anyone may be
shown the merge; otherwise a reader must hold every class the two sides' evidence lives in, and to anyone
else the members stay apart (PostgresGraphStore filters the canonical mapping by it).
"""

from __future__ import annotations

from collections.abc import Iterable

from kgrag_core.graph.model import EntityProfile, ScopedEvidence
from kgrag_core.resolution.constraints import conflicting_id_kind, shares_strong_id, strong_id_sets
from kgrag_core.resolution.features import name_similarity
from kgrag_core.resolution.normalise import name_tokens

MAX_SCOPE_PAIRS = 64  # beyond this many class pairs the merge is simply judged as needing every class


def required_classes(a: EntityProfile, b: EntityProfile, *, name_threshold: float) -> tuple[str, ...]:
    """() when every reader who sees both sides can read evidence enough for the merge, else every class the
    two sides' evidence lives in (sorted). Profiles with no scoped evidence are one scope: ()."""
    classes = sorted({s.acl_class_id for s in (*a.scopes, *b.scopes)})
    if len(classes) <= 1 or not a.scopes or not b.scopes:
        return ()
    pairs = [(x, y) for x in _classes(a.scopes) for y in _classes(b.scopes)]
    if len(pairs) > MAX_SCOPE_PAIRS:
        return tuple(classes)
    for x, y in pairs:
        seen = {x, y}
        if not _identity_merges(_within(a, seen), _within(b, seen), name_threshold):
            return tuple(classes)
    return ()


def _classes(scopes: Iterable[ScopedEvidence]) -> list[str]:
    return sorted({s.acl_class_id for s in scopes})


def _within(profile: EntityProfile, classes: set[str]) -> EntityProfile:
    names = sorted({n for s in profile.scopes if s.acl_class_id in classes for n in s.names})
    ids = sorted({p for s in profile.scopes if s.acl_class_id in classes for p in s.strong_ids})
    return EntityProfile(profile.entity_id, profile.type, names[0] if names else "", tuple(names[1:]), tuple(ids))


def _identity_merges(a: EntityProfile, b: EntityProfile, name_threshold: float) -> bool:
    ids_a, ids_b = strong_id_sets(a), strong_id_sets(b)
    if conflicting_id_kind(ids_a, ids_b) is not None:
        return False
    if shares_strong_id(ids_a, ids_b):
        return True
    person = a.type == "Person"
    names_a = [n for n in (a.name, *a.aliases) if n]
    names_b = [n for n in (b.name, *b.aliases) if n]
    return any(
        name_similarity(name_tokens(x, a.type), name_tokens(y, b.type), person=person) >= name_threshold
        for x in names_a
        for y in names_b
    )
