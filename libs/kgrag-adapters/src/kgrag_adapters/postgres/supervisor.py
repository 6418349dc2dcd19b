"""`python -m kgrag_adapters.postgres.supervisor DATA_DIR PGDATA IDLE_S`: stop a data dir's embedded
PostgreSQL once no kgrag process has used the data dir for IDLE_S seconds (see `lifetime.supervise`).

Started by the first kgrag process that uses the server, never by hand: it forks a daemon in a session of
its own and returns at once, so the starter has no child process to wait for.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kgrag_adapters.postgres.lifetime import supervise


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    data_dir, pgdata, idle_s = Path(argv[0]), Path(argv[1]), float(argv[2])
    if os.fork() > 0:
        return 0  # the starter's child: done; the daemon below is reparented
    os.setsid()
    supervise(data_dir, pgdata, idle_s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
