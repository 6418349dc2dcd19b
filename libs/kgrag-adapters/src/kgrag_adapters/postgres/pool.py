"""A small bounded pool of autocommit connections, leased per thread.

The stores used to share one connection behind one lock, so every query of every request waited for the
one before it. Now each thread leases its own connection for the length of one store operation: readers
run in parallel, and PostgreSQL's own MVCC keeps them consistent with the writers. Leases are re-entrant
within a thread, so an operation that calls another (or runs a transaction over several statements) keeps
one connection throughout.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

import psycopg

Row = tuple[Any, ...]


class ConnectionPool:
    """At most `max_size` connections to `dsn`; `with pool:` leases one to the current thread.

    Without a DSN the pool holds just the connection it was given and never reconnects (that connection's
    owner chose it). A broken connection is dropped when it comes back, and the next lease opens a fresh
    one, so a server restart costs the calls that were in flight and nothing after them.
    """

    def __init__(self, first: psycopg.Connection[Row], *, dsn: str | None = None, max_size: int = 1) -> None:
        if max_size < 1:
            raise ValueError(f"max_size must be at least 1, got {max_size}")
        self._dsn = dsn
        self._max_size = max_size if dsn is not None else 1
        self._idle: list[psycopg.Connection[Row]] = [first]
        self._size = 1
        self._closed = False
        self._cond = threading.Condition()
        self._local = threading.local()

    @property
    def max_size(self) -> int:
        return self._max_size

    @property
    def connection(self) -> psycopg.Connection[Row]:
        """The connection leased to this thread (only inside `with pool:`)."""
        conn: psycopg.Connection[Row] | None = getattr(self._local, "conn", None)
        if conn is None:
            raise RuntimeError("no connection is leased to this thread; use `with pool:`")
        return conn

    def __enter__(self) -> psycopg.Connection[Row]:
        depth: int = getattr(self._local, "depth", 0)
        if depth == 0:
            self._local.conn = self._acquire()
        self._local.depth = depth + 1
        return self.connection

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._local.depth -= 1
        if self._local.depth == 0:
            conn, self._local.conn = self._local.conn, None
            self._release(conn)

    def close(self) -> None:
        """Close the idle connections now and every leased one when it comes back. Safe to call twice."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._size -= len(idle)
            self._cond.notify_all()
        for conn in idle:
            conn.close()

    def _acquire(self) -> psycopg.Connection[Row]:
        with self._cond:
            while True:
                if self._closed:
                    raise psycopg.OperationalError("the connection pool is closed")
                while self._idle:
                    conn = self._idle.pop()
                    if self._dsn is None or not (conn.closed or conn.broken):
                        return conn  # without a DSN a broken connection is returned and its call fails
                    self._size -= 1
                if self._dsn is not None and self._size < self._max_size:
                    self._size += 1
                    dsn = self._dsn
                    break
                self._cond.wait()
        try:
            return psycopg.connect(dsn, autocommit=True)
        except BaseException:
            with self._cond:
                self._size -= 1
                self._cond.notify()
            raise

    def _release(self, conn: psycopg.Connection[Row]) -> None:
        with self._cond:
            discard = self._closed or (self._dsn is not None and (conn.closed or conn.broken))
            if discard:
                self._size -= 1
            else:
                self._idle.append(conn)
            self._cond.notify()
        if discard:
            conn.close()
