"""The stores' connection pool: one connection per thread per operation, bounded, re-entrant, self-healing."""

from __future__ import annotations

import threading

import psycopg
import pytest

from kgrag_adapters.postgres.pool import ConnectionPool

WAIT_S = 30.0


@pytest.fixture
def pool(pg_dsn: str):  # type: ignore[no-untyped-def]
    p = ConnectionPool(psycopg.connect(pg_dsn, autocommit=True), dsn=pg_dsn, max_size=2)
    yield p
    p.close()


def test_threads_get_their_own_connections_and_a_thread_keeps_its_own(pool: ConnectionPool) -> None:
    inside = threading.Barrier(2)
    pids: list[int] = []

    def work() -> None:
        with pool as conn:
            with pool as again:  # re-entrant: an operation calling another keeps its connection
                assert again is conn
            pids.append(conn.info.backend_pid)
            inside.wait(WAIT_S)  # both threads hold a lease at the same time

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    assert len(set(pids)) == 2


def test_a_lease_beyond_the_bound_waits_for_a_release(pool: ConnectionPool) -> None:
    held = threading.Event()
    release = threading.Event()
    third: list[int] = []

    def hold() -> None:
        with pool:
            held.set()
            release.wait(WAIT_S)

    holders = [threading.Thread(target=hold) for _ in range(2)]
    for t in holders:
        t.start()
        assert held.wait(WAIT_S)
        held.clear()

    def lease() -> None:
        with pool as conn:
            third.append(conn.info.backend_pid)

    waiter = threading.Thread(target=lease)
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and not third  # both connections are leased: the third caller waits
    release.set()
    waiter.join(WAIT_S)
    assert len(third) == 1
    for t in holders:
        t.join(WAIT_S)


def test_a_broken_connection_is_replaced(pool: ConnectionPool, pg_dsn: str) -> None:
    with pool as conn:
        pid = conn.info.backend_pid
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(psycopg.OperationalError), pool as conn:
        conn.execute("SELECT 1")
    with pool as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert conn.info.backend_pid != pid


def test_no_lease_outside_a_with_block(pool: ConnectionPool) -> None:
    with pytest.raises(RuntimeError, match="no connection is leased"):
        _ = pool.connection
