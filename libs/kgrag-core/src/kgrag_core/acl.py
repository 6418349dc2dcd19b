"""Access control: principals, ACL classes and the caller's readable set.

A principal is a string with a kind prefix: `user:NAME`, `group:NAME`, `public` (everyone) or
`role:admin`. A document's ACL becomes one ACL class (the distinct set of principals that may read it).
Unknown or malformed ACLs are private: only `role:admin` may read them (invariant 2).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kgrag_core.ids import acl_class_id_for

PUBLIC = "public"
ADMIN = "role:admin"


@dataclass(frozen=True, slots=True)
class AclClass:
    acl_class_id: str
    principals: tuple[str, ...]
    malformed: bool = False

    @staticmethod
    def of(principals: Iterable[str], *, malformed: bool = False) -> AclClass:
        ordered = tuple(sorted(set(principals) | {ADMIN}))
        return AclClass(acl_class_id_for(ordered), ordered, malformed)


PUBLIC_ACL = AclClass.of([PUBLIC])
PRIVATE_ACL = AclClass.of([], malformed=True)


def acl_from_source(raw: object) -> AclClass:
    """Map a source's `acl` field to an ACL class.

    `None` (no field) means readable by everyone; a well-formed `{"groups": [...], "users": [...]}` maps
    to those principals; anything else is malformed and therefore private.
    """
    if raw is None:
        return PUBLIC_ACL
    if not isinstance(raw, Mapping):
        return PRIVATE_ACL
    unknown_keys = set(raw) - {"groups", "users"}
    groups = raw.get("groups", [])
    users = raw.get("users", [])
    if unknown_keys or not _is_name_list(groups) or not _is_name_list(users):
        return PRIVATE_ACL
    principals = [f"group:{g}" for g in groups] + [f"user:{u}" for u in users]
    if not principals:
        return PRIVATE_ACL
    return AclClass.of(principals)


def _is_name_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is asking. Built only from a verified credential (API) or the local CLI's flags."""

    user: str | None = None
    groups: tuple[str, ...] = ()
    admin: bool = False

    def principals(self) -> frozenset[str]:
        out = {PUBLIC}
        if self.user:
            out.add(f"user:{self.user}")
        out.update(f"group:{g}" for g in self.groups)
        if self.admin:
            out.add(ADMIN)
        return frozenset(out)

    def scope_key(self) -> str:
        """A stable key for the caller's access scope (cache keys must include it)."""
        return acl_class_id_for(self.principals())


def readable_classes(classes: Iterable[AclClass], caller: Caller) -> list[str]:
    """The ACL class IDs the caller may read, sorted for determinism."""
    mine = caller.principals()
    return sorted(c.acl_class_id for c in classes if mine.intersection(c.principals))
