"""The one place the embedded runtime serialises: writes to the in-process indexes and the bus.

Qdrant Edge and tantivy read concurrently with a writer (a search sees the segments committed before it
started), and PostgreSQL is MVCC; what they do not allow is two writers at once (tantivy's writer holds a
directory lock; the in-process bus and the resolution pass keep state between steps). So ingestion,
deletion, ACL changes, re-extraction and the curator's merges take this gate, one at a time. Reads never
take it, so a search never waits for an ingest, and a write never waits for a search (or for an answer's
LLM call). The distributed runtime writes through Kafka and server-side indexes: its admin objects keep the
default `shared_nothing()` gate.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Concatenate, ParamSpec, Protocol, TypeVar

T = TypeVar("T")


class SingleWriter:
    def __init__(self, *, exclusive: bool = True) -> None:
        # Re-entrant: a curator's review verdict merges, and both are writes.
        self._lock = threading.RLock() if exclusive else None

    @contextmanager
    def hold(self) -> Iterator[None]:
        if self._lock is None:
            yield
            return
        with self._lock:
            yield


def shared_nothing() -> SingleWriter:
    """The gate of a runtime whose writes need no serialising here (the default of the admin objects)."""
    return SingleWriter(exclusive=False)


class HasWriter(Protocol):
    writer: SingleWriter


S = TypeVar("S", bound=HasWriter)
P = ParamSpec("P")


def writes(method: Callable[Concatenate[S, P], T]) -> Callable[Concatenate[S, P], T]:
    """Run the method under its object's `writer` gate."""

    def gated(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with self.writer.hold():
            return method(self, *args, **kwargs)

    functools.update_wrapper(gated, method)  # name and docstring; its typed return would hide `gated`'s type
    return gated
