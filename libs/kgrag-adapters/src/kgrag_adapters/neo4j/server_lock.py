"""A file lock per Neo4j server address, for the writers that share one development server.

The lexical graph's contract suites wipe the whole database, so every suite or benchmark that writes to a
shared server holds this lock while it writes: one writer at a time, whichever process it runs in.
"""

from __future__ import annotations

import fcntl
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit

_POLL_S = 0.5


def server_lock_path(uri: str) -> Path:
    where = urlsplit(uri)
    return Path(tempfile.gettempdir()) / f"kgrag-neo4j-tests-{where.hostname}-{where.port or 7687}.lock"


def _give_up(message: str) -> NoReturn:
    raise TimeoutError(message)


@contextmanager
def hold_server_lock(uri: str, wait_s: float, on_timeout: Callable[[str], NoReturn] = _give_up) -> Iterator[Path]:
    """Hold the lock of `uri`'s server, waiting up to `wait_s` for another holder; `on_timeout` gets the
    message when the wait runs out (flock does not nest across open files, even within one process)."""
    path = server_lock_path(uri)
    with path.open("a") as lock:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    on_timeout(f"another process has held {path} for {wait_s:g} s")
                time.sleep(_POLL_S)
        try:
            yield path
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
