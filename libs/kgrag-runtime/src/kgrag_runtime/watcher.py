"""`kgrag watch`: a folder's file events become change events, with the same incremental behaviour as
`kgrag ingest` (the folder connector reads each file; unchanged chunks are never embedded again).

On start the watcher reconciles the whole folder with its state in PostgreSQL (`WatchState`, migration
0026): files new or changed since it last ran are ingested, and the documents of files removed meanwhile
are deleted. Then each debounced batch of file events reconciles the files it names: new and changed files
are ingested, deleted ones delete their documents, and a move is both (the document id is the relative
path). A change to an ACL file (a sidecar or a folder's `.kgrag-acl.yaml`), or to a directory, reconciles
the whole folder, since it may change the readers of many files.

Exactly-once effect: a file whose documents fingerprint as last delivered is not sent again (a touch, an
event reported twice, a restart), and even when sent, the index keeps one version per content. State is
written after the index took the change, so a crash in between re-sends it once, to no effect.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from kgrag_adapters.connectors import iter_folder
from kgrag_adapters.connectors.acl_files import FOLDER_ACL_FILE, AclFiles, is_sidecar
from kgrag_adapters.connectors.folder import LOADERS, MULTI_LOADERS, load_path
from kgrag_core.connectors import ConnectorFailure, ConnectorItem
from kgrag_core.documents import SourceDocument
from kgrag_core.errors import ErrorCode
from kgrag_core.ingest import IngestOutcome
from kgrag_core.watching import FileState, WatchState, fingerprint, unclaimed
from kgrag_runtime.app import KgragApp

DEFAULT_DEBOUNCE_MS = 500
INGEST_BATCH_DOCUMENTS = 64  # documents per ingest call on a full reconcile; state is saved after each


@dataclass(slots=True)
class Reconciled:
    """What one reconcile did: ingest outcomes by status, documents deleted, files skipped as unchanged."""

    full: bool
    counts: dict[str, int] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    unchanged_files: int = 0
    failures: list[dict[str, str | None]] = field(default_factory=list)

    def add(self, outcomes: Iterable[IngestOutcome]) -> None:
        for o in outcomes:
            self.counts[o.status.value] = self.counts.get(o.status.value, 0) + 1
            if o.error_code is not None:
                self.failures.append({"doc_id": o.doc_id, "code": o.error_code.value, "message": o.message})

    def as_dict(self) -> dict[str, object]:
        return {
            "full": self.full,
            "counts": dict(sorted(self.counts.items())),
            "deleted": self.deleted,
            "unchanged_files": self.unchanged_files,
            "failures": self.failures,
        }


class FolderWatcher:
    def __init__(
        self, kg: KgragApp, state: WatchState, root: Path, *, ignore: Sequence[Path] = (), source: str = "folder"
    ) -> None:
        self.kg = kg
        self.state = state
        self.root = root.expanduser().resolve()
        self.key = str(self.root)
        self.source = source
        self._ignore = [p.expanduser().resolve() for p in ignore]
        self._files = state.load(self.key)

    # --- reconciling ----------------------------------------------------------------------------------

    def reconcile(self, relative_paths: Iterable[str] | None = None) -> Reconciled:
        """Bring the index in line with these files (None: the whole folder)."""
        if relative_paths is None:
            found = self._scan()
            gone = sorted(set(self._files) - set(found))
            report = Reconciled(full=True)
        else:
            paths = sorted(set(relative_paths))
            found = {rel: self._load(rel) for rel in paths if (self.root / rel).is_file()}
            gone = [rel for rel in paths if rel not in found and rel in self._files]
            report = Reconciled(full=False)
        released: list[str] = []
        pending: list[tuple[str, list[ConnectorItem]]] = []
        for rel, items in sorted(found.items()):
            if self._needs_delivery(rel, items, report):
                pending.append((rel, items))
            if sum(len(i) for _, i in pending) >= INGEST_BATCH_DOCUMENTS:
                released += self._deliver(pending, report)
                pending = []
        released += self._deliver(pending, report)
        for rel in gone:
            released += self._files.pop(rel).doc_ids
        # Deleted only once no file claims them: a file moved with its front-matter id keeps its document.
        for doc_id in unclaimed(released, self._files):
            outcome = self.kg.delete(doc_id)
            if outcome.error_code not in (None, ErrorCode.DOCUMENT_NOT_FOUND):  # not found: already gone
                report.failures.append({"doc_id": doc_id, "code": outcome.error_code.value, "message": outcome.message})
                continue
            report.deleted.append(doc_id)
        for rel in gone:  # after the deletions: a crash before this deletes again, to no effect
            self.state.remove(self.key, rel)
        return report

    def _needs_delivery(self, rel: str, items: list[ConnectorItem], report: Reconciled) -> bool:
        """Whether a file's documents differ from what was last delivered (its failures are reported)."""
        for item in items:
            if isinstance(item, ConnectorFailure):
                report.failures.append({"doc_id": item.doc_id, "code": item.code.value, "message": item.message})
        previous = self._files.get(rel)
        if previous is not None and previous.fingerprint == fingerprint(items):
            report.unchanged_files += 1
            return False
        # Unreadable or malformed: its documents (if any) stay until it is fixed or gone; no state, so the
        # file is tried again on the next event or start.
        return any(isinstance(i, SourceDocument) for i in items)

    def _deliver(self, files: list[tuple[str, list[ConnectorItem]]], report: Reconciled) -> list[str]:
        """Ingest these files' documents in one call (embedded in batches, as `kgrag ingest` does), then
        record each file's state; the document ids the files gave up."""
        if not files:
            return []
        report.add(self.kg.ingest([i for _, items in files for i in items if isinstance(i, SourceDocument)]))
        released: list[str] = []
        for rel, items in files:
            previous = self._files.get(rel)
            # A failed row keeps the document it gave before (bad input loses nothing else).
            kept = {i.doc_id for i in items if isinstance(i, ConnectorFailure) and i.doc_id is not None}
            before = set(previous.doc_ids) if previous is not None else set()
            given = {i.doc_id for i in items if isinstance(i, SourceDocument)}
            now = FileState(rel, tuple(sorted(given | (kept & before))), fingerprint(items))
            self._files[rel] = now
            self.state.save(self.key, now)
            released += sorted(before - set(now.doc_ids))
        return released

    def _scan(self) -> dict[str, list[ConnectorItem]]:
        found: dict[str, list[ConnectorItem]] = {}
        for item in iter_folder(self.root, source=self.source):
            rel = self._relative(Path(unquote(urlparse(item.uri).path)))
            if rel is not None and not self._ignored(self.root / rel):
                found.setdefault(rel, []).append(item)
        return found

    def _load(self, rel: str) -> list[ConnectorItem]:
        return list(load_path(self.root / rel, doc_id=rel, source=self.source, acl_files=AclFiles(self.root)))

    # --- watching -------------------------------------------------------------------------------------

    def watch(
        self,
        stop: threading.Event,
        *,
        debounce_ms: int = DEFAULT_DEBOUNCE_MS,
        on_batch: Callable[[Reconciled], None] | None = None,
        ready: threading.Event | None = None,
    ) -> None:
        """Reconcile the whole folder, then follow its file events until `stop` is set. The notifier is
        running before the first reconcile starts, so a file written meanwhile is not missed (at worst it
        is reconciled twice, to no effect)."""
        from watchfiles import watch

        reconciled = False
        for changes in watch(self.root, debounce=debounce_ms, stop_event=stop, rust_timeout=200, yield_on_timeout=True):
            if not reconciled:  # the first yield: the notifier watches now
                reconciled = True
                report = self.reconcile()
                if on_batch is not None:
                    on_batch(report)
                if ready is not None:
                    ready.set()
            if not changes:
                continue
            report = self.reconcile(self._affected({Path(p) for _, p in changes}))
            if on_batch is not None and (report.counts or report.deleted or report.failures):
                on_batch(report)

    def _affected(self, paths: Iterable[Path]) -> list[str] | None:
        """The files a batch of events names, or None when it needs the whole folder reconciled."""
        files: list[str] = []
        for path in paths:
            rel = self._relative(path)
            if rel is None or self._ignored(path):
                continue
            name = path.name
            if name == FOLDER_ACL_FILE or is_sidecar(name):
                return None  # readers of other files may have changed
            if any(part.startswith(".") for part in Path(rel).parts):
                continue  # hidden, as the folder connector skips it
            suffix = path.suffix.lower()
            if path.is_dir() or (suffix not in LOADERS and suffix not in MULTI_LOADERS and not path.is_file()):
                return None  # a directory created, moved or removed: its files are not named one by one
            files.append(rel)
        return files

    def _relative(self, path: Path) -> str | None:
        try:
            return path.absolute().relative_to(self.root).as_posix()
        except ValueError:
            return None

    def _ignored(self, path: Path) -> bool:
        resolved = path.absolute()
        return any(resolved == p or p in resolved.parents for p in self._ignore)
