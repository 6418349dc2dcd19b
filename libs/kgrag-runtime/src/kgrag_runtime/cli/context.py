"""Per-invocation CLI state: settings, output mode, and the app's lifetime."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:  # imported when a command runs, not for `--help`
    from kgrag_core.ports import IngestLog
    from kgrag_runtime.app import KgragApp
    from kgrag_runtime.settings import KgragSettings


@dataclass(frozen=True, slots=True)
class CliState:
    settings: KgragSettings
    as_json: bool
    console: Console  # stderr: progress, spinners, errors
    out: Console  # stdout: the results themselves

    @staticmethod
    def from_options(
        data_dir: Path | None, as_json: bool, *, creates: bool = False, uses_index: bool = True
    ) -> CliState:
        """`creates`: the command adds documents, so it may start a new index (and says so); `uses_index`
        False: it never opens the data dir (e.g. extraction scoring on a temporary index)."""
        from kgrag_runtime.cli.data_dir import check_data_dir
        from kgrag_runtime.settings import KgragSettings

        settings = KgragSettings()
        # Chosen by the user (`--data-dir`, or $KGRAG_DATA_DIR, which the settings record as set) or the default.
        explicit = data_dir is not None or "data_dir" in settings.model_fields_set
        if data_dir is not None:
            settings = settings.model_copy(update={"data_dir": data_dir})
        # Progress and messages go to stderr so `--json` output on stdout stays parseable.
        console = Console(stderr=True)
        if uses_index:
            check_data_dir(
                settings.data_dir,
                creates=creates,
                explicit=explicit,
                console=None if as_json else console,
            )
        return CliState(settings, as_json, console, Console())


@contextmanager
def open_app(state: CliState, *, reads_only: bool = False) -> Iterator[KgragApp]:
    """The embedded app for one command; `reads_only` (search, ask) builds no ingestion pipeline."""
    from kgrag_runtime.wiring import open_embedded

    spinner: AbstractContextManager[Any] = (
        nullcontext() if state.as_json else state.console.status("Starting the embedded stores…")
    )
    with ExitStack() as stack:
        with spinner:
            # The data dir's PostgreSQL outlives the call: the next command attaches to it in milliseconds.
            app = stack.enter_context(open_embedded(state.settings, reads_only=reads_only, keep_postgres=True))
        yield app


@contextmanager
def open_ingest_log(state: CliState) -> Iterator[IngestLog]:
    """The ingest log the runtime's handlers write: on KGRAG_RUNTIME=distributed the deployment's PostgreSQL
    (the log the query API's status route reads), else the embedded index's."""
    if state.settings.runtime != "distributed":
        with open_app(state, reads_only=True) as app:
            yield app.ingest_log
        return
    from kgrag_runtime.distributed import require
    from kgrag_runtime.wiring import connect_graph_store

    settings = state.settings
    dsn = require(settings.pg_dsn.get_secret_value() if settings.pg_dsn else None, "KGRAG_PG_DSN")
    with connect_graph_store(settings, dsn) as store:
        yield store
