"""Hard constraints: rules no score can outvote.

Seed 003 §4.3: different strong identifiers never merge, type conflicts never merge. Seed 000 adds what went
wrong in practice: alias chaining (one chunk calling A an alias of B, another B an alias of C, until the company
node had absorbed 466 aliases), pronoun and common-noun aliases, and namesakes. Cluster-level checks (size cap,
conflicting identifiers across a whole component) live in `clustering`, because a chain of individually
acceptable pairs can still join two things that must stay apart.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from kgrag_core.graph.model import EntityProfile
from kgrag_core.resolution.normalise import matching_key


class Rule(StrEnum):
    """Why a pair was decided the way it was; stored as `PairDecision.rule`."""

    OVERRIDE_MERGE = "override:must_merge"
    OVERRIDE_SEPARATE = "override:must_not_merge"
    TYPE_MISMATCH = "type_mismatch"
    IDENTIFIER_MISMATCH = "identifier_mismatch"  # "INC-2023-019" vs "INC-2023-011": codes name, not describe
    CONFLICTING_STRONG_IDS = "conflicting_strong_ids"
    SHARED_STRONG_ID = "shared_strong_id"
    NO_MATCHING_KEY = "no_matching_key"  # one side is known only by a pronoun or a generic one-word name
    AUTO_MERGE = "score_at_or_above_high"
    REVIEW = "score_between_thresholds"
    SEPARATE = "score_below_low"
    CLUSTER_SIZE_CAP = "cluster:size_cap"
    CLUSTER_CONFLICTING_IDS = "cluster:conflicting_strong_ids"
    CLUSTER_OVERRIDE_SEPARATE = "cluster:override_must_not_merge"


StrongIds = Mapping[str, frozenset[str]]


def strong_id_sets(profile: EntityProfile) -> dict[str, frozenset[str]]:
    """kind -> values, compared casefolded and stripped (identity.entity_id compares them the same way)."""
    grouped: dict[str, set[str]] = defaultdict(set)
    for kind, value in profile.strong_ids:
        if value.strip():
            grouped[kind.strip().casefold()].add(value.strip().casefold())
    return {kind: frozenset(values) for kind, values in grouped.items()}


def conflicting_id_kind(a: StrongIds, b: StrongIds) -> str | None:
    """A kind both sides hold with no value in common (two "Acme"s with different tax IDs), or None."""
    for kind in sorted(a.keys() & b.keys()):
        if not a[kind] & b[kind]:
            return kind
    return None


def shares_strong_id(a: StrongIds, b: StrongIds) -> bool:
    return any(a[kind] & b[kind] for kind in a.keys() & b.keys())


def matching_keys(profile: EntityProfile) -> tuple[str | None, frozenset[str]]:
    """(key of the name, keys of the aliases); pronouns and generic one-word forms are dropped."""
    return _matching_keys(profile.name, profile.type, tuple(profile.aliases))


# A pure function of its arguments, asked several times per pair scored: a popular entity has dozens of
# aliases, each a lookup of its own in `matching_key`'s memo, where one tuple's hash finds them all.
@functools.lru_cache(maxsize=1 << 14)
def _matching_keys(name: str, entity_type: str, aliases: tuple[str, ...]) -> tuple[str | None, frozenset[str]]:
    name_key = matching_key(name, entity_type)
    alias_keys = {matching_key(alias, entity_type) for alias in aliases}
    return name_key, frozenset(key for key in alias_keys if key is not None and key != name_key)


def has_matching_key(profile: EntityProfile) -> bool:
    name_key, alias_keys = matching_keys(profile)
    return name_key is not None or bool(alias_keys)


@dataclass(frozen=True, slots=True)
class _Usage:
    named: frozenset[str]  # profiles whose own name has this key
    aliased: frozenset[str]  # canonical groups that list it as an alias


class AliasIndex:
    """Which aliases may count as name evidence.

    An alias of X links X to Y only when (seed 000's fix for alias chaining):
    - it is a matching key (not a pronoun, not a generic one-word form);
    - it points to a single target: exactly one profile is named by it, and exactly one entity (counting
      already-resolved members of one canonical entity once) lists it as an alias;
    - nobody uses it as a name of its own: the profile named by it is a bare mention (no aliases, no strong
      identifiers). A named entity with its own aliases or identifiers is a thing in its own right, and linking to
      it through an alias is how A-alias-of-B, B-alias-of-C chains grew.
    """

    def __init__(self, profiles: Iterable[EntityProfile], canonical: Mapping[str, str] | None = None) -> None:
        canonical = canonical or {}
        named: dict[str, set[str]] = defaultdict(set)
        aliased: dict[str, set[str]] = defaultdict(set)
        self._bare: set[str] = set()
        self._keys: dict[str, tuple[str | None, frozenset[str]]] = {}
        for profile in profiles:
            name_key, alias_keys = matching_keys(profile)
            self._keys[profile.entity_id] = (name_key, alias_keys)
            if name_key is not None:
                named[name_key].add(profile.entity_id)
            for key in alias_keys:
                aliased[key].add(canonical.get(profile.entity_id, profile.entity_id))
            if not alias_keys and not profile.strong_ids:
                self._bare.add(profile.entity_id)
        self._usage = {
            key: _Usage(frozenset(named.get(key, ())), frozenset(aliased.get(key, ())))
            for key in named.keys() | aliased.keys()
        }

    def usage(self, key: str) -> tuple[frozenset[str], frozenset[str]]:
        """(profiles named by the key, canonical groups listing it as an alias)."""
        found = self._usage.get(key)
        return (found.named, found.aliased) if found else (frozenset(), frozenset())

    def _links(self, source: str, target: str) -> str | None:
        _, alias_keys = self._keys.get(source, (None, frozenset()))
        target_name, _ = self._keys.get(target, (None, frozenset()))
        if target_name is None or target_name not in alias_keys or target not in self._bare:
            return None
        usage = self._usage[target_name]
        return target_name if usage.named == {target} and len(usage.aliased) == 1 else None

    def alias_link(self, a: str, b: str) -> str | None:
        """The admissible alias linking the two profiles (either direction), or None."""
        return self._links(a, b) or self._links(b, a)


# A name that is an identifier: "INC-2023-019", "NW-4812", "RTM-1", "TX-400", "SEV1".
_CODE_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+$|^[A-Z]{2,}[0-9]+$")


def _code(name: str) -> str | None:
    stripped = name.strip()
    return stripped.upper() if _CODE_NAME.match(stripped) else None


def hard_stop(a: EntityProfile, b: EntityProfile) -> tuple[Rule, str] | None:
    """The constraint that forbids merging the pair, with a detail, or None. Shared strong ids are no stop."""
    if a.type != b.type:
        return Rule.TYPE_MISMATCH, f"{a.type} vs {b.type}"
    # Two different codes are two things however alike they look (a one-digit edit is a near-perfect fuzzy
    # name match); an alias may still join them, since a code's alias is how the text says it is the same.
    code_a, code_b = _code(a.name), _code(b.name)
    if (
        code_a
        and code_b
        and code_a != code_b
        and code_b not in {_code(x) for x in a.aliases}
        and code_a not in {_code(x) for x in b.aliases}
    ):
        return Rule.IDENTIFIER_MISMATCH, f"{a.name} vs {b.name}"
    kind = conflicting_id_kind(strong_id_sets(a), strong_id_sets(b))
    if kind is not None:
        return Rule.CONFLICTING_STRONG_IDS, kind
    return None
