"""Access control: principals, ACL classes and the caller's readable set.

A principal is a string with a kind prefix: `user:NAME`, `group:NAME`, `public` (everyone) or
`role:admin`. A document's ACL becomes one ACL class (the distinct set of principals that may read it).
Unknown or malformed ACLs are private: only `role:admin` may read them (invariant 2).

Every principal name is validated where it enters (`AclClass.of`, `Caller`): no control, format or
separator characters, at most 256 characters, no surrounding whitespace (INVALID_PRINCIPAL). The class
ID is a hash of a canonical JSON encoding of the sorted set, so two different reader sets never share
an ID (docs/security.md, section 5).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ids import acl_class_id_for
from kgrag_core.validation import validate_principal_name

PUBLIC = "public"
ADMIN = "role:admin"
_KINDS = ("user:", "group:", "role:")


@dataclass(frozen=True, slots=True)
class AclClass:
    acl_class_id: str
    principals: tuple[str, ...]
    malformed: bool = False

    @staticmethod
    def of(principals: Iterable[str], *, malformed: bool = False) -> AclClass:
        """The class of a set of principals; raises INVALID_PRINCIPAL for one that cannot name a reader."""
        given = set(principals)
        for principal in given:
            validate_principal(principal)
        ordered = tuple(sorted(given | {ADMIN}))
        return AclClass(acl_class_id_for(ordered), ordered, malformed)


def validate_principal(principal: object) -> str:
    """`public`, or `user:`/`group:`/`role:` followed by a valid name; else KgragError(INVALID_PRINCIPAL)."""
    if not isinstance(principal, str):
        raise KgragError(ErrorCode.INVALID_PRINCIPAL, f"A principal must be a string, got {type(principal).__name__}.")
    if principal == PUBLIC:
        return principal
    kind = next((k for k in _KINDS if principal.startswith(k)), None)
    if kind is None:
        raise KgragError(
            ErrorCode.INVALID_PRINCIPAL,
            f"The principal {principal!r} is not 'public', 'user:NAME', 'group:NAME' or 'role:NAME'.",
        )
    validate_principal_name(principal.removeprefix(kind), field=kind.rstrip(":"))
    return principal


PUBLIC_ACL = AclClass.of([PUBLIC])
PRIVATE_ACL = AclClass.of([], malformed=True)


def acl_from_source(raw: object) -> AclClass:
    """Map a source's `acl` field to an ACL class.

    `None` (no field) means readable by everyone; a well-formed `{"groups": [...], "users": [...]}` maps
    to those principals; anything else is malformed and therefore private. A well-formed list with a name
    no principal may have (a control character, over 256 characters) raises INVALID_PRINCIPAL: the source
    meant someone in particular, and guessing who would be worse than refusing the document.
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

    def __post_init__(self) -> None:
        # Every way to build a caller (token, CLI flags, evaluation cases) passes here.
        if self.user is not None:
            validate_principal_name(self.user, field="user")
        for group in self.groups:
            validate_principal_name(group, field="group")

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
