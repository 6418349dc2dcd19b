"""How long the embedded PostgreSQL of a data dir lives, and who stops it.

Standard library only: the CLI reads this on every call and the supervisor process runs on it alone.

- `running_postmaster(pgdata)` reads `postmaster.pid` and says whether that server is up (and really is the
  server of this pgdata, not a recycled pid), so a process can attach to it without starting anything.
- `stop_postmaster(pgdata)` asks it for a fast shutdown (SIGINT: connections closed, a checkpoint, exit) and
  waits until it is gone.
- `supervise(...)` is the body of the small detached process (`python -m kgrag_adapters.postgres.supervisor`)
  that every kgrag process using an embedded server makes sure is running: once no kgrag process has held
  the data dir's lock for `idle_s` seconds, it stops the server and exits. That covers every exit path of
  the processes that used the server, SIGKILL and crashes included, because the kernel releases a dead
  process's lock.
"""

from __future__ import annotations

import fcntl
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SUPERVISOR_PID_FILE = "postgres-supervisor.pid"
STOPPING_MARKER = "postgres-stopping"


@dataclass(frozen=True, slots=True)
class Postmaster:
    pid: int
    port: int
    socket_dir: str
    status: str


def read_postmaster(pgdata: Path) -> Postmaster | None:
    """The server `postmaster.pid` describes, or None if there is no readable, complete file."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except (FileNotFoundError, PermissionError, NotADirectoryError):
        return None
    if len(lines) < 8:
        return None  # being written (or from a server that is still starting)
    try:
        return Postmaster(pid=int(lines[0]), port=int(lines[3]), socket_dir=lines[4].strip(), status=lines[7].strip())
    except ValueError:
        return None


def process_alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie that nobody reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def serves(pid: int, pgdata: Path) -> bool:
    """Whether `pid` is a postgres server for `pgdata` (so a recycled pid is never mistaken for it)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return False
    except OSError:
        return process_alive(pid)  # no /proc to ask: trust the pid file
    return process_alive(pid) and os.fsencode(str(pgdata)) in cmdline


def running_postmaster(pgdata: Path) -> Postmaster | None:
    """The server of `pgdata` if it is up and accepting connections, else None."""
    found = read_postmaster(pgdata)
    if found is None or found.status != "ready" or not serves(found.pid, pgdata):
        return None
    return found


def stop_postmaster(pgdata: Path, *, timeout_s: float = 30.0) -> bool:
    """Fast shutdown of the server of `pgdata`; True if one was running. Falls back to an immediate
    shutdown (SIGQUIT), then SIGKILL, if it does not go within `timeout_s`."""
    found = read_postmaster(pgdata)
    if found is None or not serves(found.pid, pgdata):
        return False
    for sig, wait_s in ((signal.SIGINT, timeout_s), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.kill(found.pid, sig)
        except ProcessLookupError:
            return True
        if _wait_until(lambda: not process_alive(found.pid), wait_s):
            return True
    return True


def supervise(data_dir: Path, pgdata: Path, idle_s: float, *, poll_s: float = 0.5) -> None:
    """Stop the server of `pgdata` once `data_dir/.lock` has been free for `idle_s` seconds; then return.

    Returns at once if another supervisor runs for this data dir, and as soon as the server is gone
    (stopped by a `kgrag serve` that exits, or by anyone else).
    """
    me = open(data_dir / SUPERVISOR_PID_FILE, "a+")  # noqa: SIM115 - held for the supervisor's life
    try:
        fcntl.flock(me, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        me.close()
        return
    me.seek(0)
    me.truncate()
    me.write(str(os.getpid()))
    me.flush()
    lock_path = data_dir / ".lock"
    busy_at = time.time()
    try:
        while running_postmaster(pgdata) is not None:
            with open(lock_path, "a+") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    busy_at = time.time()  # a kgrag process holds the data dir right now
                else:
                    # The lock file's mtime says when the last holder let go (a call shorter than a poll).
                    last_use = max(busy_at, _mtime(lock_path))
                    if time.time() - last_use >= idle_s:
                        marker = data_dir / STOPPING_MARKER
                        marker.touch()
                        try:
                            stop_postmaster(pgdata)
                        finally:
                            marker.unlink(missing_ok=True)
                        return
                    # Released on leaving the block; a process that tried meanwhile retries (wiring).
            time.sleep(poll_s)
    finally:
        me.close()


def supervisor_running(data_dir: Path) -> bool:
    """Whether a supervisor holds this data dir's supervisor lock."""
    path = data_dir / SUPERVISOR_PID_FILE
    if not path.exists():
        return False
    with open(path, "a+") as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(probe, fcntl.LOCK_UN)
        return False


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _wait_until(done: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(0.05)
    return done()
