"""Connectors: turn a path into documents, yielding failures as values (never raising for one item)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kgrag_adapters.connectors.acl_files import AclFiles
from kgrag_adapters.connectors.csv_records import iter_csv
from kgrag_adapters.connectors.folder import LOADERS, MULTI_LOADERS, iter_folder, load_file, load_path
from kgrag_adapters.connectors.jsonl import iter_jsonl
from kgrag_core.connectors import ConnectorFailure, ConnectorItem
from kgrag_core.errors import ErrorCode

__all__ = ["ConnectorFailure", "ConnectorItem", "iter_csv", "iter_folder", "iter_jsonl", "iter_path", "load_file"]


def iter_path(path: Path) -> Iterator[ConnectorItem]:
    """A directory → folder connector; a `.jsonl` file → JSON Lines; a `.csv` file → one record per row;
    a supported file → that one file."""
    if path.is_dir():
        yield from iter_folder(path)
    elif path.is_file() and path.suffix.lower() == ".jsonl":
        yield from iter_jsonl(path)
    elif path.is_file() and (path.suffix.lower() in MULTI_LOADERS or path.suffix.lower() in LOADERS):
        # One file keeps the ACL its sidecar or its own folder's ACL file gives it, as in a folder walk.
        yield from load_path(path, doc_id=path.name, source="folder", acl_files=AclFiles(path.absolute().parent))
    elif not path.exists():
        uri = path.absolute().as_uri()
        yield ConnectorFailure(uri, None, ErrorCode.DOCUMENT_NOT_FOUND, f"{path} does not exist.")
    else:
        supported = ", ".join([".jsonl", *sorted([*LOADERS, *MULTI_LOADERS])])
        yield ConnectorFailure(
            path.absolute().as_uri(),
            None,
            ErrorCode.UNSUPPORTED_FILE_TYPE,
            f"{path} is not a directory or a supported file ({supported}).",
        )
