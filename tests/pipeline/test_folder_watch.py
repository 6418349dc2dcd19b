"""`kgrag watch`'s watcher on the embedded runtime, with real file events (watchfiles) and its state in
PostgreSQL: created, modified, moved and deleted files and an ACL sidecar change reach the index; a touch
changes nothing; a restart re-sends nothing unchanged and deletes what vanished while it was stopped."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kgrag_adapters.postgres.store import PostgresStore
from kgrag_adapters.postgres.watch_state import PostgresWatchState
from kgrag_core.acl import Caller
from kgrag_core.documents import DocumentStatus
from kgrag_runtime.app import KgragApp
from kgrag_runtime.watcher import FolderWatcher, Reconciled
from tests.pipeline.cli_runner import cli_env

pytestmark = pytest.mark.pipeline
HR, ENGINEER = Caller(groups=("hr",)), Caller(groups=("engineering",))


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def status(kg: KgragApp, doc_id: str) -> tuple[DocumentStatus, int] | None:
    doc = kg.searcher.documents.get_document(doc_id)
    return None if doc is None else (doc.status, doc.version)


def active(kg: KgragApp, doc_id: str, version: int = 1) -> bool:
    return status(kg, doc_id) == (DocumentStatus.ACTIVE, version)


def deleted(kg: KgragApp, doc_id: str) -> bool:
    found = status(kg, doc_id)
    return found is not None and found[0] is DocumentStatus.DELETED


def watch_state(kg: KgragApp) -> PostgresWatchState:
    assert isinstance(kg.ingest_log, PostgresStore)
    return PostgresWatchState(kg.ingest_log.pool)


def found_by(kg: KgragApp, query: str, caller: Caller) -> set[str]:
    return {h.doc_id for h in kg.search(query, caller).hits}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "ops").mkdir(parents=True)
    (root / "kiln.md").write_text("# Kiln\n\nThe Kiln scheduler restarts nightly at 02:00.\n", encoding="utf-8")
    (root / "ops" / "ferry.txt").write_text("The Ferry importer reads the Leipzig feed hourly.\n", encoding="utf-8")
    (root / "bonus.md").write_text("# Bonus\n\nThe Quillfeather bonus pool is 4 percent.\n", encoding="utf-8")
    (root / "bonus.md.acl.yaml").write_text("groups: [hr]\n", encoding="utf-8")
    return root


@pytest.fixture
def watching(kg: KgragApp, folder: Path) -> Iterator[list[Reconciled]]:
    reports: list[Reconciled] = []
    stop, ready = threading.Event(), threading.Event()
    watcher = FolderWatcher(kg, watch_state(kg), folder)
    thread = threading.Thread(
        target=watcher.watch, args=(stop,), kwargs={"debounce_ms": 100, "on_batch": reports.append, "ready": ready}
    )
    thread.start()
    try:
        assert ready.wait(120), "the first reconcile did not finish"
        yield reports
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()


def test_the_index_follows_file_events_and_a_restart_duplicates_nothing(
    kg: KgragApp, folder: Path, watching: list[Reconciled]
) -> None:
    assert watching[0].full and watching[0].counts == {"INDEXED": 3}
    assert all(active(kg, d) for d in ("kiln.md", "ops/ferry.txt", "bonus.md"))
    assert "bonus.md" in found_by(kg, "Quillfeather bonus pool", HR)  # positive control for the ACL change below
    assert "bonus.md" not in found_by(kg, "Quillfeather bonus pool", ENGINEER)

    (folder / "kiln.md").write_text("# Kiln\n\nThe Kiln scheduler restarts nightly at 03:00.\n", encoding="utf-8")
    wait_for(lambda: active(kg, "kiln.md", 2), "the modified file re-indexed")
    # A touch (same bytes written again) changes nothing; a later new file shows the touch was processed.
    (folder / "ops" / "ferry.txt").write_bytes((folder / "ops" / "ferry.txt").read_bytes())
    (folder / "new.md").write_text("# New\n\nThe Osprey dashboard moved to Grafana.\n", encoding="utf-8")
    wait_for(lambda: active(kg, "new.md"), "the new file indexed")
    assert active(kg, "ops/ferry.txt", 1)

    (folder / "ops" / "ferry.txt").rename(folder / "ferry.txt")  # a move: the old id goes, the new one comes
    wait_for(lambda: deleted(kg, "ops/ferry.txt") and active(kg, "ferry.txt"), "the moved file re-homed")
    (folder / "new.md").unlink()
    wait_for(lambda: deleted(kg, "new.md"), "the deleted file's document deleted")
    (folder / "bonus.md.acl.yaml").write_text("groups: [hr, engineering]\n", encoding="utf-8")
    wait_for(lambda: "bonus.md" in found_by(kg, "Quillfeather bonus pool", ENGINEER), "the ACL change applied")
    assert len(kg.searcher.documents.deletion_records("new.md")) == 1


def test_a_restarted_watcher_resends_nothing_unchanged_and_deletes_what_vanished(kg: KgragApp, folder: Path) -> None:
    first = FolderWatcher(kg, watch_state(kg), folder).reconcile()
    assert first.counts == {"INDEXED": 3}
    before = {d: status(kg, d) for d in ("kiln.md", "ops/ferry.txt")}
    # While no watcher runs: one file deleted, one added.
    (folder / "bonus.md").unlink()
    (folder / "later.txt").write_text("The Heron backlog is triaged on Mondays.\n", encoding="utf-8")
    restarted = FolderWatcher(kg, watch_state(kg), folder)  # a new process: only PostgreSQL remembers
    report = restarted.reconcile()
    assert (report.counts, report.deleted, report.unchanged_files) == ({"INDEXED": 1}, ["bonus.md"], 2)
    assert {d: status(kg, d) for d in before} == before and deleted(kg, "bonus.md") and active(kg, "later.txt")
    # The same again, and the same file event twice: no effect at all.
    again = FolderWatcher(kg, watch_state(kg), folder)
    assert again.reconcile().as_dict() == {
        "full": True, "counts": {}, "deleted": [], "unchanged_files": 3, "failures": []
    }  # fmt: skip
    assert again.reconcile(["later.txt", "later.txt"]).unchanged_files == 1
    assert len(kg.searcher.documents.deletion_records("bonus.md")) == 1


def test_kgrag_watch_reports_progress_and_stops_cleanly_on_sigterm(tmp_path: Path, pg_dsn: str) -> None:
    root = tmp_path / "watched"
    root.mkdir()
    (root / "first.md").write_text("# First\n\nThe Marlin gateway restarts on Sundays.\n", encoding="utf-8")
    env = cli_env(KGRAG_DATA_DIR=str(tmp_path / "index"), KGRAG_PG_DSN=pg_dsn)
    command = [sys.executable, "-m", "kgrag_runtime.cli", "watch", str(root), "--json", "--debounce-ms", "100"]
    log = tmp_path / "watch.stderr"
    with (
        log.open("w") as err,
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=err, text=True) as proc,
    ):
        lines: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or []], daemon=True)
        reader.start()
        try:
            started = json.loads(lines.get(timeout=180))
            assert (started["full"], started["counts"]) == (True, {"INDEXED": 1})
            (root / "second.txt").write_text("The Heron backlog is triaged on Mondays.\n", encoding="utf-8")
            followed = json.loads(lines.get(timeout=60))
            assert (followed["full"], followed["counts"], followed["deleted"]) == (False, {"INDEXED": 1}, [])
        finally:
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(60)
            reader.join(10)  # at the exited process's EOF, before the pipe is closed under it
    assert rc == 0, log.read_text(encoding="utf-8")[-2000:]
