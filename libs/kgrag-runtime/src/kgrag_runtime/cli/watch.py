"""`kgrag watch PATH`: keep the index in line with a folder, from its file events (docs/getting-started.md)."""

from __future__ import annotations

import json
import signal
import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_runtime.cli.context import CliState, open_app
from kgrag_runtime.cli.options import DataDir, JsonOut

if TYPE_CHECKING:
    from kgrag_runtime.watcher import Reconciled


def watch(
    path: Annotated[Path, typer.Argument(help="The folder to follow (the formats of `kgrag ingest`).")],
    debounce_ms: Annotated[int, typer.Option(help="Collect file events this long before acting (ms).")] = 500,
    data_dir: DataDir = None,
    as_json: JsonOut = False,
) -> None:
    """Follow a folder: new, changed, moved and deleted files update the index (only changed chunks are
    embedded again). Restart-safe: what was delivered is kept in the index's PostgreSQL, so a restart
    re-sends nothing unchanged and deletes the documents of files removed meanwhile. Stop with Ctrl-C."""
    from kgrag_adapters.postgres.store import PostgresStore
    from kgrag_adapters.postgres.watch_state import PostgresWatchState
    from kgrag_runtime.watcher import FolderWatcher

    if not path.is_dir():
        raise KgragError(ErrorCode.DOCUMENT_NOT_FOUND, f"{path} is not a folder.", hint="Pass a folder to follow.")
    if not 0 <= debounce_ms <= 60_000:
        raise KgragError(ErrorCode.LIMIT_EXCEEDED, "--debounce-ms must be between 0 and 60000.")
    state = CliState.from_options(data_dir, as_json, creates=True)
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with open_app(state) as kg:
            store = kg.ingest_log
            if not isinstance(store, PostgresStore):  # the embedded app always wires PostgreSQL
                raise KgragError(ErrorCode.CONFIGURATION_INVALID, "kgrag watch needs the PostgreSQL store.")
            watcher = FolderWatcher(kg, PostgresWatchState(store.pool), path, ignore=[state.settings.data_dir])
            if not as_json:
                state.console.print(f"Watching {watcher.root} (Ctrl-C to stop)…")

            def progress(report: Reconciled) -> None:
                if as_json:
                    print(
                        json.dumps({"at": datetime.now().isoformat(timespec="seconds"), **report.as_dict()}), flush=True
                    )
                    return
                counts = ", ".join(f"{k} {v}" for k, v in sorted(report.counts.items())) or "nothing to index"
                what = "folder" if report.full else "changes"
                line = f"{what}: {counts}; deleted {len(report.deleted)}; unchanged files {report.unchanged_files}"
                state.out.print(line + (f"; {len(report.failures)} failed" if report.failures else ""))
                for f in report.failures:
                    state.console.print(f"  [red]{f['code']}[/] {f['doc_id'] or ''} {f['message']}")

            watcher.watch(stop, debounce_ms=debounce_ms, on_batch=progress)
    except KeyboardInterrupt:
        if not as_json:
            state.console.print("Stopped.")
    finally:
        signal.signal(signal.SIGTERM, previous)
