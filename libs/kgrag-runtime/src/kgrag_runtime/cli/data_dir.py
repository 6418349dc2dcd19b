"""Which index a command acts on, and whether it exists: a mistyped `--data-dir` must not become a new,
empty index that answers every search with "no results".

Only commands that add documents (`ingest`, `serve`, `eval --corpus`) may create an index, and they say so;
every other command needs a folder that already holds one.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from kgrag_core.errors import ErrorCode, KgragError

# What `open_embedded` leaves in every index folder it has used, with the embedded PostgreSQL or with an
# external one (KGRAG_PG_DSN): a folder without it was never an index.
_MARKER = "bm25"


def is_index(folder: Path) -> bool:
    return (folder.expanduser() / _MARKER).is_dir()


def check_data_dir(folder: Path, *, creates: bool, explicit: bool, console: Console | None) -> None:
    """Fail with DATA_DIR_NOT_FOUND where `folder` holds no index and the command may not create one; else
    tell the reader (on stderr, `console`; None for JSON output) which index is used when it is not obvious:
    a new one, or the default one they did not name."""
    exists = is_index(folder)
    if not exists and not creates:
        raise KgragError(
            ErrorCode.DATA_DIR_NOT_FOUND,
            f"{folder} is not a kgrag index.",
            hint="Check the spelling of --data-dir (or $KGRAG_DATA_DIR); `kgrag ingest PATH --data-dir DIR` "
            "creates an index.",
        )
    if console is None:
        return
    if not exists:
        console.print(f"[dim]Creating a new index in {escape(str(folder))}[/]")
    elif not explicit:
        console.print(f"[dim]Using the index in {escape(str(folder))} (the default; pass --data-dir for another)[/]")
