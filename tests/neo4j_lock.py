"""One Neo4j server is shared by every suite that writes to it, and the lexical graph's contract tests wipe
the database: each such suite holds the server's file lock (kgrag_adapters.neo4j.server_lock) while it runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import pytest

from kgrag_adapters.neo4j.server_lock import hold_server_lock

LOCK_WAIT_SECONDS = 240


def _fail(message: str) -> NoReturn:
    pytest.fail(message, pytrace=False)


@contextmanager
def neo4j_held(uri: str) -> Iterator[str]:
    """Hold the server's test lock (waiting up to LOCK_WAIT_SECONDS for another process) and yield `uri`."""
    with hold_server_lock(uri, LOCK_WAIT_SECONDS, _fail):
        yield uri
