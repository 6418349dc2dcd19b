"""The extraction eval: precision and recall per tier on the labelled chunks, and the dedup rate.

It runs on a fresh embedded index in a temporary folder (never the user's): the corpus and its structured
records are ingested with extraction on and no model (tiers 0-2), then tier 3 runs on every labelled chunk
with a replay model serving the hand-authored replies (`corpora/northwind/extraction/llm_replies.jsonl`;
no model is reachable offline, and none may be called in CI). Tier 3's numbers therefore measure the
pipeline and its validation on plausible replies, not a model's skill; the report says so.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from kgrag_adapters.connectors import iter_path
from kgrag_adapters.llm.replay import ReplayChatModel, request_document, request_key, write_recording
from kgrag_core.documents import Chunk
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.evaluation.extraction_gold import GoldChunk, parse_gold
from kgrag_core.evaluation.extraction_metrics import ExtractionReport, dedup_stats, evaluate_extraction
from kgrag_core.extraction.llm_schema import extraction_json_schema
from kgrag_core.extraction.model import ChunkExtraction, Tier
from kgrag_core.extraction.pipeline import Extractor, SourcedChunk
from kgrag_core.extraction.records import RerunScope
from kgrag_core.extraction.tier3 import LlmExtractor, build_messages, parse_reply
from kgrag_core.extraction.validation import validate
from kgrag_runtime.app import KgragApp
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded

REPLAY_MODEL = "replay"
AUTHORED_LABEL = "eval-authored-replies"


def run_extraction_evaluation(
    settings: KgragSettings, gold_dir: Path, corpus: Sequence[Path], *, embedder: Any = None
) -> dict[str, object]:
    gold = parse_gold(_read_lines(gold_dir / "gold.jsonl"))
    replies = _replies(gold_dir / "llm_replies.jsonl")
    with tempfile.TemporaryDirectory(prefix="kgrag-extraction-eval-") as tmp:
        local = settings.model_copy(
            update={
                "data_dir": Path(tmp) / "index",
                "extraction_enabled": True,
                "llm_base_url": None,
                "llm_model": None,
                "llm_replay_dir": None,
                "pg_dsn": settings.pg_dsn,
            }
        )
        with open_embedded(local, embedder=embedder) as kg:
            for path in corpus:
                kg.ingest(iter_path(path))
            return _evaluate(kg, gold, replies, Path(tmp) / "replies")


def _evaluate(
    kg: KgragApp, gold: list[GoldChunk], replies: dict[str, dict[str, Any]], replay_dir: Path
) -> dict[str, object]:
    if kg.extraction is None:
        raise KgragError(ErrorCode.CONFIGURATION_INVALID, "Extraction is off.", hint="Set KGRAG_EXTRACTION_ENABLED.")
    base = kg.extraction.extractor
    store = kg.extraction.store
    chunks = store.chunks_in_scope(RerunScope())
    docs = kg.searcher.documents.get_documents(sorted({c.doc_id for c in chunks}))
    sourced = [SourcedChunk(c, docs[c.doc_id].source) for c in chunks]
    # Tiers 0-2 as ingestion ran them: re-read through the extractor (cache hits where cacheable), with
    # no chunk sent to tier 3.
    lower = base.extract(sourced, llm_chunk_ids=frozenset())
    by_chunk = {r.chunk_id: r for r in lower.results}
    labelled = {g.id: _chunk_for(g, chunks) for g in gold}

    ontology = base.ontology
    schema = extraction_json_schema(ontology)
    for g in gold:
        chunk = labelled[g.id]
        messages = build_messages([chunk], ontology)
        reply = json.dumps(_substitute(replies[g.id], chunk.chunk_id), ensure_ascii=False)
        write_recording(
            replay_dir,
            request_key(REPLAY_MODEL, messages, schema),
            request_document(REPLAY_MODEL, messages, schema),
            reply,
            "hand-authored (not a model)",
        )
    llm = LlmExtractor(ReplayChatModel(replay_dir, REPLAY_MODEL), ontology)
    upper = Extractor(
        store=store,
        ontology=ontology,
        mapping=base.mapping,
        recognizer=base.recognizer,
        llm=llm,
        policy=base.policy,
        count_tokens=base.count_tokens,
        settings=replace(base.settings, llm_batch_chunks=1),
    )
    gold_sourced = [SourcedChunk(labelled[g.id], docs[labelled[g.id].doc_id].source) for g in gold]
    top = upper.extract(
        gold_sourced, extractor_version=AUTHORED_LABEL, llm_chunk_ids=frozenset(c.chunk.chunk_id for c in gold_sourced)
    )
    top_by_chunk = {r.chunk_id: r for r in top.results}

    predictions: dict[str, list[ChunkExtraction]] = {}
    raw: dict[str, list[ChunkExtraction]] = {}
    for g in gold:
        chunk = labelled[g.id]
        merged = top_by_chunk[chunk.chunk_id]
        parsed = parse_reply(json.dumps(_substitute(replies[g.id], chunk.chunk_id)), [chunk]).by_chunk
        entities, relations, claims = parsed.get(chunk.chunk_id, ([], [], []))
        raw[g.id] = [
            ChunkExtraction(chunk.chunk_id, merged.key, Tier.LLM, tuple(entities), tuple(relations), tuple(claims))
        ]
        if merged.skip_reason is not None:
            # Tier 0 kept the chunk from the extractors (boilerplate, or a copy reusing its representative's
            # extraction): score what the pipeline stored for it, as a user would get it.
            predictions[g.id] = [merged]
            continue
        # Tier 3's own contribution, validated exactly as the pipeline validates it; the pipeline's merged
        # result must hold every one of these items, or the eval is not measuring the pipeline.
        checked = validate(
            chunk.chunk_id, chunk.text, entities, relations, claims, ontology, context=chunk.section_path
        )
        tier3 = ChunkExtraction(
            chunk.chunk_id,
            merged.key,
            Tier.LLM,
            tuple(checked.entities),
            tuple(checked.relations),
            tuple(checked.claims),
        )
        missing = (
            (set(tier3.entities) - set(merged.entities))
            | (set(tier3.relations) - set(merged.relations))
            | (set(tier3.claims) - set(merged.claims))
        )
        if missing:
            raise KgragError(ErrorCode.INTERNAL, f"gold {g.id}: the pipeline lost {len(missing)} validated items")
        predictions[g.id] = [by_chunk[chunk.chunk_id], tier3]
    dedup = dedup_stats(lower.results)
    report = evaluate_extraction(gold, predictions, dedup=dedup)
    unvalidated = evaluate_extraction(gold, raw)
    drops: dict[str, int] = {}
    for result in top.results:
        for item in result.dropped:
            drops[item.reason.value] = drops.get(item.reason.value, 0) + 1
    return {
        "labelled_chunks": len(gold),
        "corpus_chunks": len(chunks),
        "tiers_seen": {str(k): v for k, v in sorted(lower.by_tier.items())},
        "skipped": lower.skipped,
        "dedup": {
            "chunks": dedup.chunks,
            "exact": dedup.exact_duplicates,
            "near": dedup.near_duplicates,
            "rate": round(dedup.rate, 4),
        },
        "markdown": report.to_markdown(),
        "tier3_before_validation_markdown": unvalidated.to_markdown(),
        "tier3_dropped_by_reason": dict(sorted(drops.items())),
        "scores": _scores(report),
        "note": "Tier 3 replies are hand-authored stand-ins for a model (with planted mistakes), replayed "
        "offline; they test the pipeline and validation, not a model.",
    }


def _scores(report: ExtractionReport) -> list[dict[str, object]]:
    return [
        {
            "tier": None if s.tier is None else int(s.tier),
            "kind": s.kind.value,
            "precision": s.precision,
            "recall": s.recall,
            "f1": s.f1,
            "modality_accuracy": s.modality_accuracy,
        }
        for s in report.scores
    ]


def _chunk_for(gold: GoldChunk, chunks: Iterable[Chunk]) -> Chunk:
    found = [c for c in chunks if c.doc_id == gold.doc_id and gold.anchor in c.text]
    if len(found) != 1:
        raise KgragError(
            ErrorCode.MISSING_FIELD,
            f"gold {gold.id}: its anchor is in {len(found)} chunks of {gold.doc_id}, not exactly one",
            hint="Fix the anchor in gold.jsonl.",
        )
    return found[0]


def _substitute(reply: dict[str, Any], chunk_id: str) -> dict[str, Any]:
    """The reply as a model would send it: the chunk id filled in, the labelling marks removed."""
    out: dict[str, Any] = {}
    for kind, items in reply.items():
        out[kind] = [
            {k: (chunk_id if k == "chunk_id" else v) for k, v in item.items() if not k.startswith("_")}
            for item in items
        ]
    return out


def _replies(path: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for line in _read_lines(path):
        if line.strip():
            record = json.loads(line)
            out[str(record["gold_id"])] = record["reply"]
    return out


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise KgragError(
            ErrorCode.SOURCE_UNREADABLE,
            f"Cannot read {path}: {err.strerror}.",
            hint="Point --extraction-gold at a folder with gold.jsonl and llm_replies.jsonl.",
        ) from err
