"""Options shared by every `kgrag` command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kgrag_core.acl import Caller

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", "-d", help="Index folder (default: $KGRAG_DATA_DIR or ./.kgrag).", show_default=False),
]
JsonOut = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
Principal = Annotated[str | None, typer.Option("--principal", "-u", help="Act as this user (ACL). Default: anonymous.")]
Groups = Annotated[list[str] | None, typer.Option("--group", "-g", help="A group the user is in (repeatable).")]
Admin = Annotated[bool, typer.Option("--admin", help="Read everything, including private documents.")]


def caller_from(principal: str | None, groups: list[str] | None, admin: bool) -> Caller:
    return Caller(user=principal, groups=tuple(sorted(set(groups or []))), admin=admin)
