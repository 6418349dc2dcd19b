"""Who may read a file the folder connector finds: a sidecar next to it or the nearest folder ACL file above it.

A sidecar `NAME.acl.yaml` (for `report.txt`: `report.txt.acl.yaml`) sets the ACL of that one file; a
`.kgrag-acl.yaml` in a folder sets it for every file in that folder and below, until a deeper folder's file
or a sidecar says otherwise (nearest wins). A Markdown file's own front matter `acl:` overrides both. With
none of them a file is public. The body is the JSONL `acl` field's shape, plus `public: true` to make a
subtree public again under a restricted folder:

    groups: [finance]        # and/or
    users: [grace.oneill]    # or, alone:  public: true

A file that cannot be read, is not valid YAML or has another shape means private (only admins), as for
JSONL, and every document it governs carries a warning saying so; nothing is rejected for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from kgrag_core.acl import PRIVATE_ACL, PUBLIC_ACL, AclClass, acl_from_source
from kgrag_core.connectors import ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import KgragError

SIDECAR_SUFFIX = ".acl.yaml"
FOLDER_ACL_FILE = ".kgrag-acl.yaml"
_MAX_ACL_FILE_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class FileAcl:
    acl: AclClass
    warnings: tuple[str, ...] = ()


_PUBLIC = FileAcl(PUBLIC_ACL)


def is_sidecar(name: str) -> bool:
    """A sidecar ACL file is configuration, not a document."""
    return name.endswith(SIDECAR_SUFFIX)


class AclFiles:
    """Resolves each file's ACL under `root` (folder files above `root` do not count); one instance per walk,
    so every folder's file is read once."""

    def __init__(self, root: Path) -> None:
        self._root = root.absolute()
        self._folders: dict[Path, FileAcl] = {}

    def for_file(self, path: Path) -> FileAcl:
        path = path.absolute()
        sidecar = read_acl_file(path.with_name(path.name + SIDECAR_SUFFIX))
        return sidecar if sidecar is not None else self._folder(path.parent)

    def _folder(self, folder: Path) -> FileAcl:
        known = self._folders.get(folder)
        if known is not None:
            return known
        own = read_acl_file(folder / FOLDER_ACL_FILE)
        if own is None:
            inside = folder != self._root and self._root in folder.parents
            own = self._folder(folder.parent) if inside else _PUBLIC
        self._folders[folder] = own
        return own


def read_acl_file(path: Path) -> FileAcl | None:
    """The ACL a file sets; None when there is no such file."""
    try:
        if not path.exists():
            return None
        with path.open("rb") as handle:  # a folder or a file nobody may read lands below: private
            data = handle.read(_MAX_ACL_FILE_BYTES + 1)
    except OSError as err:
        return _private(path, f"cannot be read ({err.strerror or err})")
    if len(data) > _MAX_ACL_FILE_BYTES:
        return _private(path, f"is larger than {_MAX_ACL_FILE_BYTES} bytes")
    try:
        loaded = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as err:
        return _private(path, f"is not valid UTF-8 YAML ({' '.join(str(err).split())[:200]})")
    if not isinstance(loaded, Mapping):
        return _private(path, "is not a mapping of groups/users (or public: true)")
    body = {str(key): value for key, value in loaded.items()}
    if body.get("public") is True and set(body) == {"public"}:
        return _PUBLIC
    try:
        acl = acl_from_source(body)
    except KgragError as err:  # a principal name the core refuses
        return _private(path, err.message)
    if acl.malformed:
        return _private(path, "is not a mapping of non-empty 'groups'/'users' name lists (or 'public: true')")
    return FileAcl(acl)


def with_file_acl(item: ConnectorItem, found: FileAcl) -> ConnectorItem:
    """Attach the ACL file's warnings to a document it governs (the ACL itself went in through the loader)."""
    if not found.warnings or not isinstance(item, SourceDocument):
        return item
    return replace(item, warnings=(*item.warnings, *found.warnings))


def _private(path: Path, why: str) -> FileAcl:
    return FileAcl(PRIVATE_ACL, (f"ACL file {path} {why}: the files it covers are private (admins only).",))
