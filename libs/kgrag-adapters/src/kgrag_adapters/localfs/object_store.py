"""ObjectStore on a local directory: the object `a/b/c` is the file `<root>/a/b/c`.

Keys are `/`-separated like S3 keys, and prefixes are plain string prefixes as in S3 (`docs/a` matches
`docs/ab/x`), so this adapter and the S3 one answer `list_keys`/`delete_prefix` alike.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# Hidden names are reserved: writes go to a hidden temp file first. Forbidding segments that start with
# "." also rules out "." and "..", so a key can never step outside the root.
_HIDDEN = "."


class LocalObjectStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def put(self, key: str, data: bytes) -> None:
        """Write atomically: readers see the old object or the new one, never a partial file."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                # The bytes must be on disk before the rename makes them visible; otherwise a crash
                # could leave a renamed but empty file.
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)

    def get(self, key: str) -> bytes | None:
        path = self._path(key)
        try:
            return path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            # No object under this key: the name is missing, is a "folder" of other keys, or a path
            # segment is itself an object.
            return None

    def delete_prefix(self, prefix: str) -> list[str]:
        """Delete every object under the prefix; return the deleted keys, sorted.

        Folders left empty are removed (the root itself stays).
        """
        keys = self.list_keys(prefix)
        for key in keys:
            self._path(key).unlink(missing_ok=True)  # a concurrent delete may have got there first
        for folder in sorted({self._path(k).parent for k in keys}, key=lambda p: len(p.parts), reverse=True):
            self._remove_empty_dirs(folder)
        return keys

    def list_keys(self, prefix: str) -> list[str]:
        """Keys starting with `prefix` (a string prefix, not a folder), sorted."""
        _check_prefix(prefix)
        # Walk only the deepest folder the prefix fully names: "docs/ab" walks "docs/", "docs/a/" walks
        # "docs/a/".
        folder, _, _ = prefix.rpartition("/")
        start = self.root / folder if folder else self.root
        if not start.is_dir():
            return []
        found: list[str] = []
        for dirpath, dirnames, filenames in os.walk(start):
            # Never descend into hidden folders, and never list hidden (in-flight) files.
            dirnames[:] = [d for d in dirnames if not d.startswith(_HIDDEN)]
            rel = Path(dirpath).relative_to(self.root).as_posix()
            base = "" if rel == "." else rel + "/"
            found.extend(
                base + name for name in filenames if not name.startswith(_HIDDEN) and (base + name).startswith(prefix)
            )
        return sorted(found)

    def _path(self, key: str) -> Path:
        _check_key(key)
        return self.root.joinpath(*key.split("/"))

    def _remove_empty_dirs(self, folder: Path) -> None:
        while folder != self.root and folder.is_relative_to(self.root):
            try:
                folder.rmdir()
            except OSError:
                return  # not empty (or already gone): nothing above it can be empty either
            folder = folder.parent


def _check_key(key: str) -> None:
    """Raise ValueError for a key that could escape the root or is not a plain relative path."""
    _check_text(key, "key")
    if not key or key.startswith("/") or key.endswith("/"):
        raise ValueError(f"invalid object key {key!r}: empty, absolute or ending in '/'")
    for segment in key.split("/"):
        _check_segment(segment, key, "key")


def _check_prefix(prefix: str) -> None:
    """A prefix is a key that may be empty, end in '/', or end in a partial segment."""
    _check_text(prefix, "prefix")
    if prefix.startswith("/"):
        raise ValueError(f"invalid object prefix {prefix!r}: absolute")
    segments = prefix.split("/")
    for segment in segments[:-1]:
        _check_segment(segment, prefix, "prefix")
    if segments[-1].startswith(_HIDDEN):
        raise ValueError(f"invalid object prefix {prefix!r}: a segment starts with '.'")


def _check_text(value: str, what: str) -> None:
    if "\\" in value or "\x00" in value:
        raise ValueError(f"invalid object {what} {value!r}: backslash or NUL")


def _check_segment(segment: str, value: str, what: str) -> None:
    if not segment:
        raise ValueError(f"invalid object {what} {value!r}: empty segment")
    if segment.startswith(_HIDDEN):
        # covers "." and ".." (path traversal) as well as the hidden temp files of in-flight writes
        raise ValueError(f"invalid object {what} {value!r}: a segment starts with '.'")


def _fsync_dir(folder: Path) -> None:
    """Persist the rename itself (the directory entry), not only the file's bytes."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
