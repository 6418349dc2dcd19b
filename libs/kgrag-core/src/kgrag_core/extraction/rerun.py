"""Re-extraction runs: a preview that reads only the stores, and a real run that does exactly what it planned.

The plan is one pure function of the stores' contents, used by both: which chunks are in scope, which are
cache hits under the requested extractor version, which reach the LLM, how they are batched and how many
tokens each call's prompt holds (the prompts are built, not guessed). The real run passes the planned set
of LLM chunks to the extractor instead of asking the policy again, records progress after every slice so
an interrupted run resumes where it stopped, and ends with a receipt in the preview's own shape.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from kgrag_core.documents import Chunk
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.llm_schema import extraction_json_schema
from kgrag_core.extraction.model import ExtractionKey
from kgrag_core.extraction.pipeline import ExtractionReport, Extractor, Items, SourcedChunk
from kgrag_core.extraction.records import ChunkExtractionState, ExtractionRun, RerunScope, RunEstimate
from kgrag_core.extraction.records_text import parse_record
from kgrag_core.extraction.tier0 import classify_chunk
from kgrag_core.extraction.tier3 import build_batches, build_messages, request_tokens
from kgrag_core.ports import DocumentStore


@dataclass(frozen=True, slots=True)
class CostModel:
    """Prices per million tokens and the speeds the time estimate assumes (all configurable)."""

    input_price_per_mtok: float | None  # None: no price configured for this model; cost shows as 0 and says so
    output_price_per_mtok: float | None
    currency: str = "USD"
    seconds_per_call: float = 8.0
    local_chunks_per_second: float = 100.0  # tiers 0-2 on one core (see `make bench`)
    output_tokens_per_input_chunk_token: float = 0.5
    tokens_counted: bool = False  # True when count_tokens is a real tokenizer, False when it estimates

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        price_in = self.input_price_per_mtok or 0.0
        price_out = self.output_price_per_mtok or 0.0
        return round(input_tokens / 1e6 * price_in + output_tokens / 1e6 * price_out, 6)


@dataclass(frozen=True, slots=True)
class RunPlan:
    chunks: list[SourcedChunk]
    cache_hits: int
    llm_chunk_ids: frozenset[str]
    batches: list[list[Chunk]]
    input_tokens: int
    output_tokens: int


class RerunService:
    def __init__(
        self,
        *,
        documents: DocumentStore,
        extractor: Extractor,
        cost: CostModel,
        slice_size: int = 32,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.documents = documents
        self.extractor = extractor
        self.store = extractor.store
        self.cost = cost
        self.slice_size = slice_size
        self._clock = clock

    # --- planning (reads the stores, writes nothing) ------------------------------------------------------

    def plan(self, scope: RerunScope, extractor_version: str) -> RunPlan:
        chunks = self.store.chunks_in_scope(scope)
        docs = self.documents.get_documents(sorted({c.doc_id for c in chunks}))
        sourced = [SourcedChunk(c, docs[c.doc_id].source) for c in chunks if c.doc_id in docs]
        keys = {c.chunk.chunk_id: self.extractor.key_for(c.chunk, extractor_version) for c in sourced}
        cached = self.store.cached(list(set(keys.values())))
        states = self.store.states([c.chunk.chunk_id for c in sourced])
        current = self._current_results(states)
        hits = 0
        seen_hashes: set[str] = set()
        llm: list[Chunk] = []
        for item in sourced:
            chunk = item.chunk
            if keys[chunk.chunk_id] in cached:
                hits += 1
                continue
            state = states.get(chunk.chunk_id)
            if classify_chunk(chunk.text) is not None or parse_record(chunk.text) is not None:
                continue  # filtered, or mapped deterministically: free
            if chunk.content_hash in seen_hashes or (state is not None and state.representative_chunk_id):
                continue  # a duplicate reuses its representative's extraction
            seen_hashes.add(chunk.content_hash)
            lower = current.get(chunk.chunk_id, ([], [], []))
            # A chunk still owed its tier-3 pass (no model was configured, or it was unavailable) is planned
            # for tier 3; its lower-tier result was never cached, so the policy could not see it again.
            owed = state is not None and state.pending_llm
            if owed or self.extractor.llm_wanted(item.source, lower):
                llm.append(chunk)
        batches = build_batches(
            llm,
            max_chunks=self.extractor.settings.llm_batch_chunks,
            max_input_tokens=self.extractor.settings.llm_max_input_tokens,
            count_tokens=self.extractor.count_tokens,
        )
        input_tokens = sum(self._prompt_tokens(b) for b in batches)
        chunk_tokens = sum(self.extractor.count_tokens(c.text) for c in llm)
        output_tokens = round(chunk_tokens * self.cost.output_tokens_per_input_chunk_token)
        return RunPlan(sourced, hits, frozenset(c.chunk_id for c in llm), batches, input_tokens, output_tokens)

    def preview(self, scope: RerunScope, extractor_version: str) -> ExtractionRun:
        plan = self.plan(scope, extractor_version)
        return ExtractionRun(
            run_id=f"dry-{uuid.uuid4().hex[:12]}",
            scope=scope,
            extractor_version=extractor_version,
            ontology_version=self.extractor.ontology.version,
            dry_run=True,
            status="planned",
            preview=self._estimate(plan),
            created_at=datetime.now(UTC),
        )

    # --- the real run -------------------------------------------------------------------------------------

    def start(self, scope: RerunScope, extractor_version: str) -> ExtractionRun:
        plan = self.plan(scope, extractor_version)
        self._require_model(plan)
        run = ExtractionRun(
            run_id=f"run-{uuid.uuid4().hex[:12]}",
            scope=scope,
            extractor_version=extractor_version,
            ontology_version=self.extractor.ontology.version,
            dry_run=False,
            status="running",
            preview=self._estimate(plan),
            created_at=datetime.now(UTC),
        )
        self.store.save_run(run)
        return self._execute(run, plan)

    def resume(self, run_id: str) -> ExtractionRun:
        run = self.store.get_run(run_id)
        if run is None or run.dry_run:
            raise KgragError(
                ErrorCode.RUN_NOT_FOUND,
                f"No re-extraction run {run_id!r}.",
                hint="List runs with `kgrag extract runs`, or start one with `kgrag extract rerun`.",
            )
        if run.status == "completed":
            return run
        # The plan is recomputed from the stores: chunks already done are cache hits now, so they cost nothing.
        plan = self.plan(run.scope, run.extractor_version)
        self._require_model(plan)
        return self._execute(run, plan)

    def _require_model(self, plan: RunPlan) -> None:
        """A real run that planned model calls and has no model refuses, rather than skip what it planned."""
        if plan.llm_chunk_ids and self.extractor.llm is None:
            raise KgragError(
                ErrorCode.LLM_UNAVAILABLE,
                f"The run plans {len(plan.batches)} model calls but no chat model is configured.",
                hint="Set KGRAG_LLM_BASE_URL and KGRAG_LLM_MODEL (or KGRAG_LLM_REPLAY_DIR), or narrow the scope.",
            )

    def _execute(self, run: ExtractionRun, plan: RunPlan) -> ExtractionRun:
        done = set(run.done_chunk_ids)
        todo = [c for c in plan.chunks if c.chunk.chunk_id not in done]
        if run.receipt is None:
            run.receipt = replace(
                _ZERO,
                chunks_in_scope=len(plan.chunks),
                tokens_counted=self.cost.tokens_counted,
                currency=self.cost.currency,
            )
        try:
            for part in self._slices(todo, plan):
                began = self._clock()
                report = self.extractor.extract(
                    part, extractor_version=run.extractor_version, llm_chunk_ids=plan.llm_chunk_ids
                )
                run.receipt = self._add(run.receipt, report, len(part), self._clock() - began)
                run.done_chunk_ids.extend(c.chunk.chunk_id for c in part)
                self.store.save_run(run)  # progress is durable per slice: a resume skips what is done
        except Exception:
            run.status = "interrupted"
            self.store.save_run(run)
            raise
        run.status = "completed"
        run.finished_at = datetime.now(UTC)
        self.store.save_run(run)
        return run

    def _slices(self, todo: list[SourcedChunk], plan: RunPlan) -> list[list[SourcedChunk]]:
        """One slice per planned LLM call (so the run makes exactly the planned requests, and progress is
        recorded after each), then the chunks no model sees, in slices of `slice_size`."""
        by_id = {c.chunk.chunk_id: c for c in todo}
        slices = [[by_id[c.chunk_id] for c in batch if c.chunk_id in by_id] for batch in plan.batches]
        rest = [c for c in todo if c.chunk.chunk_id not in plan.llm_chunk_ids]
        slices.extend(rest[i : i + self.slice_size] for i in range(0, len(rest), self.slice_size))
        return [s for s in slices if s]

    def _add(self, receipt: RunEstimate, report: ExtractionReport, chunks: int, seconds: float) -> RunEstimate:
        input_tokens = receipt.input_tokens + report.input_tokens
        output_tokens = receipt.output_tokens + report.output_tokens
        return replace(
            receipt,
            cache_hits=receipt.cache_hits + report.cache_hits,
            chunks_to_extract=receipt.chunks_to_extract + chunks - report.cache_hits,
            llm_chunks=receipt.llm_chunks + report.llm_chunks,
            calls=receipt.calls + report.llm_calls,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            estimated_cost=self.cost.cost(input_tokens, output_tokens),
            estimated_seconds=round(receipt.estimated_seconds + seconds, 3),
        )

    # --- helpers ------------------------------------------------------------------------------------------

    def _estimate(self, plan: RunPlan) -> RunEstimate:
        local = len(plan.chunks) - plan.cache_hits
        seconds = len(plan.batches) * self.cost.seconds_per_call + local / self.cost.local_chunks_per_second
        return RunEstimate(
            chunks_in_scope=len(plan.chunks),
            cache_hits=plan.cache_hits,
            chunks_to_extract=local,
            llm_chunks=len(plan.llm_chunk_ids),
            calls=len(plan.batches),
            input_tokens=plan.input_tokens,
            output_tokens=plan.output_tokens,
            tokens_counted=self.cost.tokens_counted,
            estimated_cost=self.cost.cost(plan.input_tokens, plan.output_tokens),
            currency=self.cost.currency,
            estimated_seconds=round(seconds, 1),
        )

    def _prompt_tokens(self, batch: Sequence[Chunk]) -> int:
        """Tokens of the request the real run will send (the schema included), counted the same way."""
        ontology = self.extractor.ontology
        messages = build_messages(batch, ontology)
        return request_tokens(messages, extraction_json_schema(ontology), self.extractor.count_tokens)

    def _current_results(self, states: Mapping[str, ChunkExtractionState]) -> dict[str, Items]:
        """What the chunks' current extractions found: the policy's input, as in the pipeline."""
        keys = {
            cid: ExtractionKey(s.content_hash, s.extractor_version, s.ontology_version) for cid, s in states.items()
        }
        found = self.store.cached(list(set(keys.values())))
        out: dict[str, Items] = {}
        for chunk_id, key in keys.items():
            result = found.get(key)
            if result is not None:
                out[chunk_id] = (list(result.entities), list(result.relations), list(result.claims))
        return out


_ZERO = RunEstimate(
    chunks_in_scope=0,
    cache_hits=0,
    chunks_to_extract=0,
    llm_chunks=0,
    calls=0,
    input_tokens=0,
    output_tokens=0,
    tokens_counted=False,
    estimated_cost=0.0,
    currency="USD",
    estimated_seconds=0.0,
)
