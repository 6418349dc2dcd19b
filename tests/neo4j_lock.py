"""One Neo4j server is shared by every suite that writes to it, and the lexical graph's contract tests wipe
the database: each such suite holds this file lock (one per server address) while it runs."""

from __future__ import annotations

import fcntl
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

LOCK_WAIT_SECONDS = 240


def neo4j_lock_path(uri: str) -> Path:
    where = urlsplit(uri)
    return Path(tempfile.gettempdir()) / f"kgrag-neo4j-tests-{where.hostname}-{where.port or 7687}.lock"


@contextmanager
def neo4j_held(uri: str) -> Iterator[str]:
    """Hold the server's test lock (waiting up to LOCK_WAIT_SECONDS for another process) and yield `uri`."""
    with neo4j_lock_path(uri).open("a") as lock:
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.fail(f"another test process has held {lock.name} for {LOCK_WAIT_SECONDS}s", pytrace=False)
                time.sleep(0.5)
        try:
            yield uri
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
