"""Extraction throughput of tiers 0-2 in chunks/s, with spaCy's model alone on the same texts as the baseline.

For each corpus (the bundled Northwind corpus, and a larger synthetic set made of edited copies of it), on
embedded PostgreSQL, with the chunks committed as the indexer commits them:

(a) tier 0 alone: classify every chunk, then MinHash + the duplicate lookups, in extraction batches;
(b) tiers 0-2 end to end through `Extractor.extract` as `build_extractor` wires it (no LLM), cold cache;
(c) the same again on the same store: warm cache;
(d) the baseline: the spaCy model alone (`nlp.pipe`, the components the recognizer runs, no entity ruler)
    over the same chunk texts, before and after (a)-(c), averaged.

Per-part times come from wrapping the pipeline's collaborators (see `_instrumented`); the rest is "other".
No LLM is configured, so chunks the tier-3 policy selects are stored as pending and, by design, not cached.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import re
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import psycopg
from rich.console import Console

import kgrag_core.extraction.pipeline as pipeline_module
from kgrag_adapters.connectors import iter_path
from kgrag_adapters.postgres.embedded import EmbeddedPostgres
from kgrag_adapters.postgres.extraction_store import PostgresExtractionStore
from kgrag_core.chunking import estimate_tokens
from kgrag_core.documents import Chunk, DocumentStatus, SourceDocument, StoredDocument
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.evaluation.extraction_metrics import dedup_stats
from kgrag_core.extraction.model import SkipReason
from kgrag_core.extraction.pipeline import ExtractionReport, Extractor, SourcedChunk
from kgrag_core.extraction.tier0 import classify_chunk, find_duplicates
from kgrag_core.ids import content_hash
from kgrag_core.indexing.indexer import chunks_of_document
from kgrag_core.ports import TokenCounter
from kgrag_core.validation import decode_body
from kgrag_runtime.extraction import build_extractor
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_embedder

DEFAULT_SYNTHETIC_CHUNKS = 10_000
DEFAULT_MODEL_SAMPLE = 600
CORPUS_FILES = ("documents.jsonl", "records.jsonl")

# Parts of a run, in table order. Each is the exclusive time of the wrapped calls (nested calls are
# charged to the inner part), so the parts and "other" add up to the run's wall time.
CACHE = "cache lookup"
CLASSIFY = "t0 classify"
MINHASH = "t0 MinHash + dedup"
DEDUP_IO = "t0 dedup lookups (PG)"
MAPPING = "t1 mapping"
MODEL = "t2 spaCy"
KNOWN_NAMES = "t2 known names"
PROPOSALS = "t2 proposals"
VALIDATION = "validation"
SAVE = "save (PG)"
OTHER = "other"
PARTS = (CACHE, CLASSIFY, MINHASH, DEDUP_IO, MAPPING, MODEL, KNOWN_NAMES, PROPOSALS, VALIDATION, SAVE, OTHER)

DatabaseFactory = Callable[[str], AbstractContextManager[str]]
"""name -> a context that yields the DSN of a new, empty database (and may drop it on exit)."""

_P = ParamSpec("_P")
_R = TypeVar("_R")

# Numbers of three digits or more (capacities, head counts, years, ticket numbers), not inside a date or
# time: the synthetic copies change these, so most copies stay near-duplicates rather than exact ones.
_EDITABLE_NUMBER = re.compile(r"(?<![\d\-/:.])\d{3,}(?![\d\-/:])")


@dataclass(frozen=True, slots=True)
class PreparedDocument:
    document: SourceDocument
    chunks: tuple[Chunk, ...]


# --- corpora ------------------------------------------------------------------------------------------


def default_corpus_dir() -> Path:
    """`corpora/northwind` under the working directory (`make bench` runs at the repository root), else in
    the source tree this module lives in."""
    for candidate in (Path("corpora/northwind"), Path(__file__).resolve().parents[5] / "corpora" / "northwind"):
        if all((candidate / name).is_file() for name in CORPUS_FILES):
            return candidate
    raise KgragError(
        ErrorCode.CONFIGURATION_INVALID,
        "The bundled corpus (corpora/northwind) was not found.",
        hint="Run the benchmark from the repository root.",
    )


def corpus_documents(corpus_dir: Path) -> list[SourceDocument]:
    """The corpus's documents and records, in file order (lines that fail to parse are left out)."""
    return [item for name in CORPUS_FILES for item in iter_path(corpus_dir / name) if isinstance(item, SourceDocument)]


def prepare_documents(
    documents: Sequence[SourceDocument],
    *,
    max_tokens: int,
    overlap_tokens: int,
    count_tokens: Callable[[str], int],
    max_document_bytes: int = 5_000_000,
) -> list[PreparedDocument]:
    """Chunks exactly as the indexer cuts and names them (`chunks_of_document`)."""
    out: list[PreparedDocument] = []
    for doc in documents:
        text = decode_body(doc.body, max_bytes=max_document_bytes)
        chunks = chunks_of_document(
            doc, text, max_tokens=max_tokens, overlap_tokens=overlap_tokens, count_tokens=count_tokens
        )
        if chunks:
            out.append(PreparedDocument(doc, tuple(chunks)))
    return out


def edited_copy(doc: SourceDocument, copy: int) -> SourceDocument:
    """Copy `copy` of a document under its own ID, every number of 3+ digits (outside dates) raised by `copy`:
    a chunk with such a number becomes a near-duplicate of the original's, one without stays an exact copy."""
    if copy == 0:
        return doc
    text = _EDITABLE_NUMBER.sub(lambda m: str(int(m.group(0)) + copy), doc.body.decode("utf-8"))
    return SourceDocument(
        doc_id=f"{doc.doc_id}--copy{copy}",
        source=doc.source,
        uri=f"{doc.uri}#copy{copy}",
        title=doc.title,
        body=text.encode("utf-8"),
        acl=doc.acl,
        modified_at=doc.modified_at,
        media_type=doc.media_type,
        metadata=dict(doc.metadata),
    )


def synthetic_set(
    documents: Sequence[SourceDocument],
    target_chunks: int,
    prepare: Callable[[Sequence[SourceDocument]], list[PreparedDocument]],
) -> list[PreparedDocument]:
    """Edited copies of the corpus (copy 0 is the corpus itself), whole documents, until `target_chunks`."""
    out: list[PreparedDocument] = []
    total = 0
    copy = 0
    while total < target_chunks:
        for prepared in prepare([edited_copy(d, copy) for d in documents]):
            if total >= target_chunks:
                break
            out.append(prepared)
            total += len(prepared.chunks)
        copy += 1
    return out


# --- timing -------------------------------------------------------------------------------------------


class PartTimer:
    """Exclusive wall time per part: a wrapped call's time minus that of the wrapped calls inside it."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._inner: list[float] = []

    def wrap(self, part: str, fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(fn)
        def timed(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            started = time.perf_counter()
            self._inner.append(0.0)
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - started
                inner = self._inner.pop()
                self.seconds[part] = self.seconds.get(part, 0.0) + elapsed - inner
                if self._inner:
                    self._inner[-1] += elapsed

        return timed

    def parts(self, total_s: float) -> dict[str, float]:
        measured = {part: self.seconds.get(part, 0.0) for part in PARTS if part != OTHER}
        return {**measured, OTHER: max(0.0, total_s - sum(measured.values()))}


_PIPELINE_FUNCTIONS = {
    "classify_chunk": CLASSIFY,
    "find_duplicates": MINHASH,
    "parse_record": MAPPING,
    "map_record": MAPPING,
    "propose": PROPOSALS,
    "validate": VALIDATION,
}
_STORE_METHODS = {
    "cached": CACHE,
    "chunks_with_hash": DEDUP_IO,
    "minhash_candidates": DEDUP_IO,
    "put_minhashes": DEDUP_IO,
    "states": DEDUP_IO,
    "known_names": KNOWN_NAMES,
    "save": SAVE,
}
# The ruler is rebuilt inside `recognize` (with the names of the scope it is called for): counted as MODEL.
_RECOGNIZER_METHODS = {"recognize": MODEL}


@contextmanager
def _instrumented(timer: PartTimer, store: object, recognizer: object | None) -> Iterator[None]:
    """Wrap the pipeline's pure functions (module globals of `pipeline`) and the store's and recognizer's
    methods (instance attributes) in the timer, and undo it afterwards. The pipeline has no timing hooks of
    its own, and the core should not grow any for a benchmark; a wrapper costs about a microsecond a call."""
    patched_module = {name: getattr(pipeline_module, name) for name in _PIPELINE_FUNCTIONS}
    patched: list[tuple[object, str]] = []
    try:
        for name, part in _PIPELINE_FUNCTIONS.items():
            setattr(pipeline_module, name, timer.wrap(part, patched_module[name]))
        targets = [(store, _STORE_METHODS)] + ([(recognizer, _RECOGNIZER_METHODS)] if recognizer is not None else [])
        for target, methods in targets:
            for name, part in methods.items():
                setattr(target, name, timer.wrap(part, getattr(target, name)))
                patched.append((target, name))
        yield
    finally:
        for name, original in patched_module.items():
            setattr(pipeline_module, name, original)
        for target, name in patched:
            delattr(target, name)  # the class's method shows through again


# --- measurements -------------------------------------------------------------------------------------


def _batches(prepared: Sequence[PreparedDocument], batch_documents: int) -> list[list[SourcedChunk]]:
    """One extraction call per batch of documents, as the extractor handler makes one per bus batch."""
    out: list[list[SourcedChunk]] = []
    for start in range(0, len(prepared), batch_documents):
        out.append(
            [SourcedChunk(c, p.document.source) for p in prepared[start : start + batch_documents] for c in p.chunks]
        )
    return out


def _commit(store: PostgresExtractionStore, prepared: Sequence[PreparedDocument]) -> None:
    for p in prepared:
        doc = p.document
        stored = StoredDocument(
            doc_id=doc.doc_id,
            source=doc.source,
            uri=doc.uri,
            title=doc.title,
            version=1,
            content_hash=content_hash(doc.body),
            acl_class_id=doc.acl.acl_class_id,
            modified_at=doc.modified_at,
            status=DocumentStatus.ACTIVE,
            media_type=doc.media_type,
            byte_length=len(doc.body),
        )
        store.commit_document(stored, doc.acl, p.chunks)


def _load(dsn: str, prepared: Sequence[PreparedDocument], *, analyze: bool) -> PostgresExtractionStore:
    """A store holding the documents and chunks, as the indexer leaves them. With `analyze`, the planner's
    statistics are brought up to date afterwards, as autovacuum keeps them on a running system: right after a
    bulk load, without them, the MinHash candidate query picks a plan that grows with store x batch size."""
    store = PostgresExtractionStore.connect(dsn)
    _commit(store, prepared)
    if analyze:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ANALYZE")
    return store


def _tier0_alone(
    store: PostgresExtractionStore, batches: Sequence[Sequence[SourcedChunk]], threshold: float
) -> dict[str, Any]:
    timer = PartTimer()
    classify = timer.wrap(CLASSIFY, classify_chunk)
    dedup = timer.wrap(MINHASH, find_duplicates)
    skipped: dict[str, int] = {}
    chunks = 0
    with _instrumented(timer, store, None):
        started = time.perf_counter()
        for batch in batches:
            text_chunks = []
            for item in batch:
                reason = classify(item.chunk.text)
                if reason is None:
                    text_chunks.append(item.chunk)
                else:
                    skipped[reason.value] = skipped.get(reason.value, 0) + 1
            for reason, _ in dedup(text_chunks, store, threshold=threshold).values():
                skipped[reason.value] = skipped.get(reason.value, 0) + 1
            chunks += len(batch)
        seconds = time.perf_counter() - started
    return {
        "chunks": chunks,
        "seconds": seconds,
        "chunks_per_s": chunks / seconds,
        "skipped": skipped,
        "parts": timer.parts(seconds),
    }


def _pipeline_run(
    extractor: Extractor, store: PostgresExtractionStore, batches: Sequence[Sequence[SourcedChunk]]
) -> dict[str, Any]:
    timer = PartTimer()
    total = ExtractionReport()
    with _instrumented(timer, store, extractor.recognizer):
        started = time.perf_counter()
        for batch in batches:
            report = extractor.extract(batch)
            total.chunks += report.chunks
            total.cache_hits += report.cache_hits
            total.pending_llm += report.pending_llm
            total.items += report.items
            total.results.extend(report.results)
            for tier, n in report.by_tier.items():
                total.by_tier[tier] = total.by_tier.get(tier, 0) + n
            for reason, n in report.skipped.items():
                total.skipped[reason] = total.skipped.get(reason, 0) + n
        seconds = time.perf_counter() - started
    dedup = dedup_stats(total.results)
    return {
        "chunks": total.chunks,
        "seconds": seconds,
        "chunks_per_s": total.chunks / seconds,
        "cache_hits": total.cache_hits,
        "by_tier": {str(t): total.by_tier.get(t, 0) for t in range(3)},
        "skipped": dict(sorted(total.skipped.items())),
        "exact_duplicates": dedup.exact_duplicates,
        "near_duplicates": dedup.near_duplicates,
        "dedup_rate": dedup.rate,
        "pending_llm": total.pending_llm,
        "items": total.items,
        "parts": timer.parts(seconds),
    }


def spacy_model_alone() -> Any:
    """The recognizer's spaCy pipeline without its entity ruler: the statistical components it runs."""
    import spacy

    from kgrag_adapters.spacy_ner.recognizer import _UNUSED_COMPONENTS, MODEL_PACKAGE

    nlp = spacy.load(MODEL_PACKAGE, exclude=list(_UNUSED_COMPONENTS))
    if "senter" in nlp.component_names and "senter" in nlp.disabled:
        nlp.enable_pipe("senter")
    return nlp


def _model_rate(nlp: Any, texts: Sequence[str], batch_size: int = 64) -> float:
    started = time.perf_counter()
    entities = 0
    for doc in nlp.pipe(texts, batch_size=batch_size):
        entities += len(doc.ents)  # reading the entities, as the recognizer does
    return len(texts) / (time.perf_counter() - started)


def _sample(texts: Sequence[str], size: int) -> list[str]:
    """Evenly spaced texts across the whole set (so every part of it is represented), at most `size`."""
    if len(texts) <= size:
        return list(texts)
    step = len(texts) / size
    return [texts[int(i * step)] for i in range(size)]


def measure_corpus(
    label: str,
    prepared: Sequence[PreparedDocument],
    *,
    settings: KgragSettings,
    fresh_database: DatabaseFactory,
    model_sample: int,
    console: Console,
    nlp: Any = None,
    analyze: bool = True,
) -> dict[str, Any]:
    """(a)-(d) of the module docstring for one corpus; the store of (b) and (c) is a fresh database."""
    nlp = nlp if nlp is not None else spacy_model_alone()
    batches = _batches(prepared, settings.ingest_batch_documents)
    texts = _sample([c.text for p in prepared for c in p.chunks], model_sample)
    chunks = sum(len(p.chunks) for p in prepared)
    console.print(f"Extraction benchmark, {label}: {len(prepared)} documents, {chunks} chunks…")
    _model_rate(nlp, texts[:8])  # warm-up
    model_before = _model_rate(nlp, texts)
    with fresh_database(f"{label}_tier0") as dsn, _closing(_load(dsn, prepared, analyze=analyze)) as store:
        tier0 = _tier0_alone(store, batches, pipeline_module.ExtractionSettings().dedup_threshold)
    with fresh_database(f"{label}_tiers") as dsn, _closing(_load(dsn, prepared, analyze=analyze)) as store:
        extractor = build_extractor(settings, store=store, llm=None)
        if extractor.recognizer is None:
            raise KgragError(ErrorCode.CONFIGURATION_INVALID, "The extractor has no NER recognizer.")
        extractor.recognizer.recognize(["Maria Chen leads the Routing team in Rotterdam."])  # loads the model
        cold = _pipeline_run(extractor, store, batches)
        warm = _pipeline_run(extractor, store, batches)
    model_after = _model_rate(nlp, texts)
    return {
        "corpus": label,
        "documents": len(prepared),
        "chunks": chunks,
        "batches": len(batches),
        "tier0": tier0,
        "cold": cold,
        "warm": warm,
        "model": {
            "texts": len(texts),
            "chunks_per_s": (model_before + model_after) / 2,
            "chunks_per_s_before": model_before,
            "chunks_per_s_after": model_after,
        },
    }


@contextmanager
def _closing(store: PostgresExtractionStore) -> Iterator[PostgresExtractionStore]:
    try:
        yield store
    finally:
        store.close()


def machine_description() -> dict[str, object]:
    from spacy.about import __version__ as spacy_version
    from spacy.util import get_package_version

    from kgrag_adapters.spacy_ner.recognizer import MODEL_PACKAGE

    return {
        "architecture": platform.machine(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "os": platform.system(),
        "spacy": spacy_version,
        "spacy_model": f"{MODEL_PACKAGE} {get_package_version(MODEL_PACKAGE)}",
        "load_average_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return platform.processor() or "unknown"
    return platform.processor() or "unknown"


# --- the whole benchmark ------------------------------------------------------------------------------


def run_extraction_benchmarks(
    settings: KgragSettings,
    console: Console,
    *,
    corpus_dir: Path | None = None,
    synthetic_chunks: int = DEFAULT_SYNTHETIC_CHUNKS,
    model_sample: int = DEFAULT_MODEL_SAMPLE,
    analyze: bool = True,
) -> dict[str, Any]:
    """Both corpora on one embedded PostgreSQL server in a temporary folder, a database per measurement."""
    started = time.perf_counter()
    machine = machine_description()
    console.print(f"Machine: {format_machine(machine)}")
    embedder = build_embedder(settings)
    count_tokens = embedder.count_tokens if isinstance(embedder, TokenCounter) else estimate_tokens

    def prepare(docs: Sequence[SourceDocument]) -> list[PreparedDocument]:
        return prepare_documents(
            docs,
            max_tokens=settings.chunk_max_tokens,
            overlap_tokens=settings.chunk_overlap_tokens,
            count_tokens=count_tokens,
            max_document_bytes=settings.max_document_bytes,
        )

    documents = corpus_documents(corpus_dir or default_corpus_dir())
    corpora = [("northwind", prepare(documents))]
    if synthetic_chunks > 0:
        corpora.append(("synthetic", synthetic_set(documents, synthetic_chunks, prepare)))
    nlp = spacy_model_alone()
    local = settings.model_copy(update={"llm_base_url": None, "llm_model": None, "llm_replay_dir": None})
    # The server is held for the whole run, so each measurement's database attaches to a running server.
    with tempfile.TemporaryDirectory(prefix="kgrag-extraction-bench-") as tmp, EmbeddedPostgres(Path(tmp) / "pg"):
        factory = embedded_databases(Path(tmp) / "pg")
        rows = [
            measure_corpus(
                label,
                prepared,
                settings=local,
                fresh_database=factory,
                model_sample=model_sample,
                console=console,
                nlp=nlp,
                analyze=analyze,
            )
            for label, prepared in corpora
        ]
    machine["load_average_1m_after"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {
        "machine": machine,
        "batch_documents": settings.ingest_batch_documents,
        "analyzed": analyze,
        "corpora": rows,
        "wall_s": time.perf_counter() - started,
    }


def embedded_databases(pgdata: Path) -> DatabaseFactory:
    @contextmanager
    def fresh(name: str) -> Iterator[str]:
        with EmbeddedPostgres(pgdata, database=f"bench_{name}_{uuid.uuid4().hex[:8]}") as pg:
            yield pg.dsn

    return fresh


def format_machine(machine: dict[str, object]) -> str:
    return (
        f"{machine['architecture']} · {machine['cpu']} · {machine['cores']} cores · Python {machine['python']}"
        f" · {machine['os']} · spaCy {machine['spacy']} ({machine['spacy_model']})"
    )


# --- report -------------------------------------------------------------------------------------------


def _skips(skipped: dict[str, int]) -> str:
    return " · ".join(f"{skipped.get(r.value, 0)}" for r in SkipReason)


def extraction_markdown(results: dict[str, Any]) -> str:
    machine = results["machine"]
    statistics = "refreshed (ANALYZE) after loading" if results["analyzed"] else "as the load left them"
    lines = [
        f"Machine: {format_machine(machine)}; 1-minute load average {machine['load_average_1m']:.2f} before, "
        f"{machine['load_average_1m_after']:.2f} after. Extraction calls of {results['batch_documents']} documents; "
        f"planner statistics {statistics}; whole benchmark {results['wall_s']:.0f} s.",
        "",
        "| corpus | run | chunks | s | chunks/s | vs model alone | cache hits | tier 0 / 1 / 2 "
        "| skipped: boilerplate · low info · exact · near | pending LLM |",
        "|---|---|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for row in results["corpora"]:
        model = row["model"]["chunks_per_s"]
        name = f"{row['corpus']} ({row['documents']} docs)"
        t0 = row["tier0"]
        lines.append(
            f"| {name} | (a) tier 0 alone | {t0['chunks']} | {t0['seconds']:.2f} | {t0['chunks_per_s']:.0f} "
            f"| {t0['chunks_per_s'] / model:.2f} | — | — | {_skips(t0['skipped'])} | — |"
        )
        for key, title in (("cold", "(b) tiers 0–2, cold cache"), ("warm", "(c) tiers 0–2, warm cache")):
            run = row[key]
            tiers = " / ".join(str(run["by_tier"][str(t)]) for t in range(3))
            lines.append(
                f"| {name} | {title} | {run['chunks']} | {run['seconds']:.2f} | {run['chunks_per_s']:.0f} "
                f"| {run['chunks_per_s'] / model:.2f} | {run['cache_hits']} | {tiers} "
                f"| {_skips(run['skipped'])} | {run['pending_llm']} |"
            )
        lines.append(
            f"| {name} | (d) spaCy model alone ({row['model']['texts']} of the texts) | "
            f"{row['model']['texts']} | — | {model:.0f} | 1.00 | — | — | — | — |"
        )
    lines += [
        "",
        "Share of each run's wall time (exclusive; `other` = the pipeline's own bookkeeping):",
        "",
        "| corpus | run | " + " | ".join(PARTS) + " |",
        "|---|---|" + "---:|" * len(PARTS),
    ]
    for row in results["corpora"]:
        for key, title in (("tier0", "(a) tier 0 alone"), ("cold", "(b) cold"), ("warm", "(c) warm")):
            run = row[key]
            shares = " | ".join(f"{100 * run['parts'][p] / run['seconds']:.0f} %" for p in PARTS)
            lines.append(f"| {row['corpus']} | {title} | {shares} |")
    lines.append("")
    for row in results["corpora"]:
        cold = row["cold"]
        lines.append(
            f"- {row['corpus']}: dedup rate (cold run) {cold['exact_duplicates'] + cold['near_duplicates']}"
            f"/{cold['chunks']} = {cold['dedup_rate']:.3f} ({cold['exact_duplicates']} exact, "
            f"{cold['near_duplicates']} near); {cold['items']} validated items."
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Throughput of extraction tiers 0-2 (chunks/s).")
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    parser.add_argument("--synthetic-chunks", type=int, default=DEFAULT_SYNTHETIC_CHUNKS)
    parser.add_argument("--model-sample", type=int, default=DEFAULT_MODEL_SAMPLE)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--no-analyze", action="store_true", help="Leave the planner statistics as the load left them.")
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    results = run_extraction_benchmarks(
        KgragSettings(),
        console,
        corpus_dir=args.corpus,
        synthetic_chunks=args.synthetic_chunks,
        model_sample=args.model_sample,
        analyze=not args.no_analyze,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "extraction.json").write_text(json.dumps(results, indent=2))
    markdown = extraction_markdown(results)
    (args.out / "extraction.md").write_text(markdown)
    console.print(markdown)


if __name__ == "__main__":
    main()
