"""What entity resolution decided on a corpus, as tables to compare before and after a change to its speed.

Ingests a corpus with the whole default pipeline on (extraction and a resolution pass after every batch),
in a fresh embedded data directory and in calls of `--step` documents, then writes what resolution left in
the store: every profile it compared, the merge log, each entity's canonical id, the review queue and the
splits kept apart. A change that only makes resolution faster must leave these byte-for-byte the same:

    uv run python -m kgrag_runtime.benchmarks.resolution_tables --corpus prose --docs 300 --out before.json
    uv run python -m kgrag_runtime.benchmarks.resolution_tables --corpus prose --docs 300 --out after.json
    uv run python -m kgrag_runtime.benchmarks.resolution_tables --compare before.json after.json

`--corpus northwind` ingests the bundled corpus's documents and records instead (`--docs` is then ignored).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pydantic import SecretStr

from kgrag_core.documents import SourceDocument
from kgrag_core.handlers.composite import handler_parts
from kgrag_core.handlers.extractor import ExtractorHandler
from kgrag_core.handlers.protocol import Handler
from kgrag_runtime.benchmarks.prose import prose_documents
from kgrag_runtime.ingest_gateway import EmbeddedIngest
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded

_ENTITY_ID_KEY = "6b677261672d7265736f6c7574696f6e2d7461626c65732d66697865642d6b6579"
REPO = Path(__file__).resolve().parents[5]


def _documents(corpus: str, docs: int) -> list[SourceDocument]:
    if corpus == "prose":
        return list(prose_documents(docs))
    from kgrag_runtime.benchmarks.extraction import corpus_documents

    return corpus_documents(REPO / "corpora" / "northwind")


def _names_reloaded_every_batch(handlers: Sequence[Handler]) -> None:
    """Tier 2 reloads the names it knows after a wall-clock interval, so what it extracts (and resolution
    sees) depends on how fast the run went; reloading them for every batch makes two runs comparable."""
    for handler in handler_parts(handlers):
        if isinstance(handler, ExtractorHandler):
            extractor = handler.extractor
            extractor.settings = dataclasses.replace(extractor.settings, known_names_refresh_s=0.0)


def resolution_tables(documents: Sequence[SourceDocument], step: int) -> dict[str, object]:
    """Ingest `documents` (everything on) and return resolution's tables, in a stable order."""
    with tempfile.TemporaryDirectory() as tmp:
        # A fixed entity-id key: ids (and so every tie the resolver breaks by id) are the same in every run.
        update = {"data_dir": Path(tmp), "pg_dsn": None, "entity_id_key": SecretStr(_ENTITY_ID_KEY)}
        cfg = KgragSettings().model_copy(update=update)
        with open_embedded(cfg) as kg:
            assert isinstance(kg.ingestion, EmbeddedIngest)
            _names_reloaded_every_batch(kg.ingestion.handlers)
            for start in range(0, len(documents), step):
                kg.ingest(list(documents[start : start + step]))
            assert kg.graph is not None, "extraction is off: nothing to resolve"
            store = kg.graph.store
            profiles = store.profiles()
            ids = [p.entity_id for p in profiles]
            merges = store.merge_log(limit=1_000_000)
            review = store.review_queue(limit=1_000_000)
            canonical = store.canonical_of(ids)
            apart = store.kept_apart()
    return {
        "profiles": [dataclasses.asdict(p) for p in profiles],
        "merges": sorted(
            (
                {
                    "merge_id": m.merge_id,
                    "canonical_id": m.canonical_id,
                    "members": list(m.members),
                    "decided_by": m.decided_by,
                    "reverted": m.reverted,
                    "basis": [
                        [d.a, d.b, d.kind.value, d.score, d.rule, [list(f) for f in d.features]] for d in m.basis
                    ],
                }
                for m in merges
            ),
            key=lambda m: str(m["merge_id"]),
        ),
        "canonical": dict(sorted(canonical.items())),
        "review": [[d.a, d.b, d.score, d.rule, [list(f) for f in d.features]] for d in review],
        "kept_apart": sorted([list(p) for p in apart]),
    }


def compare(before: dict[str, object], after: dict[str, object]) -> list[str]:
    """The tables that differ (empty: resolution decided the same)."""
    return [key for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", choices=("prose", "northwind"), default="prose")
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--step", type=int, default=100, help="documents per ingest call")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.compare:
        before, after = (json.loads(p.read_text("utf-8")) for p in args.compare)
        differ = compare(before, after)
        counts = {k: len(v) for k, v in before.items()}
        print(f"tables: {counts}; differ: {differ or 'none'}")
        sys.exit(1 if differ else 0)
    tables = resolution_tables(_documents(args.corpus, args.docs), args.step)
    text = json.dumps(tables, indent=1, sort_keys=True)
    if args.out:
        args.out.write_text(text, "utf-8")
    else:
        print(text)


if __name__ == "__main__":
    main()
