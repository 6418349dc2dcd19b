"""The extraction use case: a batch of chunks in, validated and stored extractions out.

Order per chunk: the cache (an unchanged chunk under the same extractor and ontology is never extracted
twice), tier 0 (boilerplate, low information, exact and near duplicates), then tier 1 for structured
records or tier 2 (NER) for text, then tier 3 (the LLM) for the chunks the policy selects. Every tier's
items pass the same validation before anything is stored; what validation refuses is counted by reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from kgrag_core.documents import Chunk
from kgrag_core.extraction.model import (
    ChunkExtraction,
    ClaimItem,
    DropCounts,
    EntityMention,
    ExtractionKey,
    Quarantined,
    RelationItem,
    Tier,
)
from kgrag_core.extraction.ontology import Ontology
from kgrag_core.extraction.policy import Tier3Policy
from kgrag_core.extraction.records_text import parse_record
from kgrag_core.extraction.tier0 import classify_chunk, find_duplicates
from kgrag_core.extraction.tier1 import MappingRules, map_record
from kgrag_core.extraction.tier2 import propose
from kgrag_core.extraction.tier3 import LlmExtractor, build_batches
from kgrag_core.extraction.validation import validate
from kgrag_core.ports import ExtractionStore, MentionRecognizer

Items = tuple[list[EntityMention], list[RelationItem], list[ClaimItem]]


@dataclass(frozen=True, slots=True)
class ExtractionSettings:
    extractor_version: str = "1"
    dedup_threshold: float = 0.8
    llm_batch_chunks: int = 6
    llm_max_input_tokens: int = 6_000
    # How often tier 2's entity ruler reloads the names the graph knows (a query and a ruler rebuild).
    known_names_refresh_s: float = 60.0
    # How many access scopes' known names are kept between refreshes (the least recently used go first).
    known_names_scopes: int = 32


@dataclass(frozen=True, slots=True)
class SourcedChunk:
    chunk: Chunk
    source: str  # the document's source system (wiki, tickets, ...): the tier-3 policy ranks by it


@dataclass(slots=True)
class ExtractionReport:
    """What one call did; the CLI, the handler's outcome and a run's receipt are built from it."""

    chunks: int = 0
    cache_hits: int = 0
    by_tier: dict[int, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    llm_calls: int = 0
    llm_chunks: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    pending_llm: int = 0
    quarantined: int = 0
    items: int = 0
    dropped: DropCounts = field(default_factory=DropCounts)
    results: list[ChunkExtraction] = field(default_factory=list)

    def add(self, result: ChunkExtraction) -> None:
        self.results.append(result)
        self.by_tier[int(result.tier)] = self.by_tier.get(int(result.tier), 0) + 1
        if result.skip_reason is not None:
            self.skipped[result.skip_reason.value] = self.skipped.get(result.skip_reason.value, 0) + 1
        self.pending_llm += int(result.pending_llm)
        self.items += result.item_count
        self.dropped.add(result.tier, result.dropped)


class Extractor:
    def __init__(
        self,
        *,
        store: ExtractionStore,
        ontology: Ontology,
        mapping: MappingRules,
        recognizer: MentionRecognizer | None,
        llm: LlmExtractor | None,
        policy: Tier3Policy,
        count_tokens: Callable[[str], int],
        settings: ExtractionSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.ontology = ontology
        self.mapping = mapping
        self.recognizer = recognizer
        self.llm = llm
        self.policy = policy
        self.count_tokens = count_tokens
        self.settings = settings or ExtractionSettings()
        self._clock = clock
        # ACL class id -> (loaded at, the names chunks of that class gave), least recently used first.
        self._known_names: dict[str, tuple[float, dict[str, str]]] = {}

    def version_for(self, label: str | None = None) -> str:
        """The extractor version in the cache key: the configured label plus the NER model and the LLM with
        its prompt version, so changing any of them (or configuring an LLM at all) misses the cache, while
        an unchanged setup never pays twice."""
        ner = self.recognizer.version if self.recognizer is not None else "no-ner"
        llm = self.llm.version if self.llm is not None else "no-llm"
        return f"{label or self.settings.extractor_version}|{ner}|{llm}"

    def key_for(self, chunk: Chunk, extractor_version: str | None = None) -> ExtractionKey:
        """`extractor_version` is a label (as configured or as a re-extraction run names it).

        The chunk's ACL class is part of the key: tier 2 extracts a chunk with what chunks of its own class
        taught the ruler, so the same text in another class may be extracted differently, and a result must
        never be reused in a scope whose knowledge it was not extracted with (docs/security.md, section 4)."""
        version = f"{self.version_for(extractor_version)}|acl:{chunk.acl_class_id}"
        return ExtractionKey(chunk.content_hash, version, self.ontology.version)

    def use_ontology(self, ontology: Ontology) -> None:
        """Switch to a new ontology version: later extractions validate against it and record its version."""
        self.ontology = ontology
        if self.llm is not None:
            self.llm.ontology = ontology

    def llm_wanted(self, source: str, lower: Items) -> bool:
        """The tier-3 policy on a chunk's lower-tier (validated) items; the preview asks the same question."""
        return self.policy.reason(source, lower) is not None

    def extract(
        self,
        chunks: Sequence[SourcedChunk],
        *,
        extractor_version: str | None = None,
        llm_chunk_ids: frozenset[str] | None = None,
    ) -> ExtractionReport:
        """Extract, validate and store. `llm_chunk_ids`, when given, replaces the policy's choice of which
        chunks reach tier 3 (a re-extraction run does exactly what its preview planned)."""
        report = ExtractionReport(chunks=len(chunks))
        version = extractor_version or self.settings.extractor_version
        keys = {c.chunk.chunk_id: self.key_for(c.chunk, version) for c in chunks}
        cached = self.store.cached(list(set(keys.values())))
        todo: list[SourcedChunk] = []
        for item in chunks:
            hit = cached.get(keys[item.chunk.chunk_id])
            if hit is not None:
                report.cache_hits += 1
                report.add(replace(hit, chunk_id=item.chunk.chunk_id))
            else:
                todo.append(item)
        self._extract_misses(todo, keys, report, llm_chunk_ids)
        self.store.save(report.results)
        return report

    # --- the tiers --------------------------------------------------------------------------------------

    def _extract_misses(
        self,
        todo: list[SourcedChunk],
        keys: dict[str, ExtractionKey],
        report: ExtractionReport,
        llm_chunk_ids: frozenset[str] | None,
    ) -> None:
        text_chunks: list[SourcedChunk] = []
        records: list[SourcedChunk] = []
        for item in todo:
            reason = classify_chunk(item.chunk.text)
            if reason is not None:
                report.add(
                    ChunkExtraction(item.chunk.chunk_id, keys[item.chunk.chunk_id], Tier.FILTER, skip_reason=reason)
                )
            elif parse_record(item.chunk.text) is not None:
                # Records skip deduplication: mapping them is free, and two short rows differing in one value
                # look near-identical to MinHash, so the second row's own value would be lost.
                records.append(item)
            else:
                text_chunks.append(item)
        duplicates = find_duplicates(
            [c.chunk for c in text_chunks], self.store, threshold=self.settings.dedup_threshold
        )
        originals = records + [c for c in text_chunks if c.chunk.chunk_id not in duplicates]
        self._extract_originals(originals, keys, report, llm_chunk_ids)
        copies = [c for c in text_chunks if c.chunk.chunk_id in duplicates]
        sources = self._representative_results({duplicates[c.chunk.chunk_id][1] for c in copies}, report)
        # A copy whose representative's result is not at hand (it is owed its tier-3 pass, so it was never
        # cached) is read by tier 2 itself: free, and it keeps the copy's facts its own, whatever becomes
        # of the representative. Tier 3 is still spent only on the representative.
        alone = [c for c in copies if duplicates[c.chunk.chunk_id][1] not in sources]
        own = self._tier2(alone)
        for item in copies:
            chunk_id = item.chunk.chunk_id
            reason, representative = duplicates[chunk_id]
            source = sources.get(representative)
            if source is not None:
                items: Items = (list(source.entities), list(source.relations), list(source.claims))
            else:
                items = own[chunk_id]
            result = self._validated(item.chunk, keys, Tier.FILTER, items)
            report.add(
                replace(
                    result,
                    skip_reason=reason,
                    representative_chunk_id=representative,
                    pending_llm=source.pending_llm if source is not None else False,
                )
            )

    def _extract_originals(
        self,
        originals: list[SourcedChunk],
        keys: dict[str, ExtractionKey],
        report: ExtractionReport,
        llm_chunk_ids: frozenset[str] | None,
    ) -> None:
        results: dict[str, ChunkExtraction] = {}
        prose: list[SourcedChunk] = []
        for item in originals:
            if parse_record(item.chunk.text) is not None:
                items = map_record(item.chunk.text, self.mapping)
                results[item.chunk.chunk_id] = self._validated(item.chunk, keys, Tier.MAPPING, items)
            else:
                prose.append(item)
        lower = self._tier2(prose)
        wanted: list[SourcedChunk] = []
        for item in prose:
            items = lower[item.chunk.chunk_id]
            result = self._validated(item.chunk, keys, Tier.NER, items)
            results[item.chunk.chunk_id] = result
            if llm_chunk_ids is not None:
                wants = item.chunk.chunk_id in llm_chunk_ids
            else:
                wants = self.llm_wanted(
                    item.source, (list(result.entities), list(result.relations), list(result.claims))
                )
            if wants:
                wanted.append(item)
        for chunk_id, llm_result in self._tier3(wanted, keys, report).items():
            results[chunk_id] = _merge(results[chunk_id], llm_result)
        for result in results.values():
            report.add(result)

    def _tier2(self, prose: list[SourcedChunk]) -> dict[str, Items]:
        if not prose:
            return {}
        if self.recognizer is None:
            return {c.chunk.chunk_id: ([], [], []) for c in prose}
        # One access scope at a time: a chunk of class C is extracted with the names chunks of class C gave,
        # so nothing a restricted document taught the ruler types a name in a public one (and vice versa).
        by_class: dict[str, list[SourcedChunk]] = {}
        for item in prose:
            by_class.setdefault(item.chunk.acl_class_id, []).append(item)
        out: dict[str, Items] = {}
        for acl_class_id in sorted(by_class):
            group = by_class[acl_class_id]
            found = self.recognizer.recognize([c.chunk.text for c in group], self._names_known_in(acl_class_id))
            for c, mentions in zip(group, found, strict=True):
                out[c.chunk.chunk_id] = propose(c.chunk.text, mentions, self.ontology)
        return out

    def _tier3(
        self, wanted: list[SourcedChunk], keys: dict[str, ExtractionKey], report: ExtractionReport
    ) -> dict[str, ChunkExtraction]:
        """LLM results for the chunks that got one; chunks left out are marked pending (never silently done)."""
        out: dict[str, ChunkExtraction] = {}
        if not wanted:
            return out
        if self.llm is None:
            for item in wanted:
                out[item.chunk.chunk_id] = ChunkExtraction(
                    item.chunk.chunk_id, keys[item.chunk.chunk_id], Tier.NER, pending_llm=True
                )
            return out
        batches = build_batches(
            [c.chunk for c in wanted],
            max_chunks=self.settings.llm_batch_chunks,
            max_input_tokens=self.settings.llm_max_input_tokens,
            count_tokens=self.count_tokens,
        )
        quarantined: list[Quarantined] = []
        for batch in batches:
            outcome = self.llm.extract(batch)
            report.llm_calls += outcome.calls
            report.input_tokens += outcome.input_tokens
            report.output_tokens += outcome.output_tokens
            if outcome.quarantined is not None:
                quarantined.append(outcome.quarantined)
            for chunk in batch:
                items = outcome.items.get(chunk.chunk_id)
                if items is None:  # quarantined or the model was unavailable: retried on the next run
                    out[chunk.chunk_id] = ChunkExtraction(
                        chunk.chunk_id, keys[chunk.chunk_id], Tier.NER, pending_llm=True
                    )
                    continue
                report.llm_chunks += 1
                result = self._validated(chunk, keys, Tier.LLM, items)
                dropped = outcome.dropped.get(chunk.chunk_id, ())
                out[chunk.chunk_id] = replace(result, dropped=result.dropped + tuple(dropped))
        if quarantined:
            report.quarantined += len(quarantined)
            self.store.quarantine(quarantined)
        return out

    def _validated(self, chunk: Chunk, keys: dict[str, ExtractionKey], tier: Tier, items: Items) -> ChunkExtraction:
        entities, relations, claims = items
        checked = validate(
            chunk.chunk_id, chunk.text, entities, relations, claims, self.ontology, context=chunk.section_path
        )
        return ChunkExtraction(
            chunk.chunk_id,
            keys[chunk.chunk_id],
            tier,
            entities=tuple(checked.entities),
            relations=tuple(checked.relations),
            claims=tuple(checked.claims),
            dropped=tuple(checked.dropped),
        )

    def _representative_results(
        self, representatives: set[str], report: ExtractionReport
    ) -> dict[str, ChunkExtraction]:
        """The results duplicates reuse: from this batch, else from the cache under the representative's own
        key. A duplicate takes its representative's items, each re-checked against the duplicate's own text
        and stored under the duplicate's chunk, so every copy carries its own verified evidence."""
        found = {r.chunk_id: r for r in report.results if r.chunk_id in representatives}
        missing = sorted(representatives - set(found))
        if not missing:
            return found
        rep_keys = {
            chunk_id: ExtractionKey(state.content_hash, state.extractor_version, state.ontology_version)
            for chunk_id, state in self.store.states(missing).items()
        }
        cached = self.store.cached(list(set(rep_keys.values()))) if rep_keys else {}
        for chunk_id, key in rep_keys.items():
            hit = cached.get(key)
            if hit is not None:
                found[chunk_id] = hit
        return found

    def _names_known_in(self, acl_class_id: str) -> dict[str, str]:
        """The names chunks of this ACL class gave, reloaded after `known_names_refresh_s`."""
        now = self._clock()
        cached = self._known_names.pop(acl_class_id, None)
        if cached is None or now - cached[0] >= self.settings.known_names_refresh_s:
            cached = (now, self.store.known_names(acl_class_id=acl_class_id))
        self._known_names[acl_class_id] = cached  # re-inserted: most recently used last
        while len(self._known_names) > self.settings.known_names_scopes:
            del self._known_names[next(iter(self._known_names))]
        return cached[1]


def _merge(lower: ChunkExtraction, upper: ChunkExtraction) -> ChunkExtraction:
    """Tier 3 adds to what the lower tier found; the chunk is recorded as handled by the highest tier.

    Where both tiers name the same span with different types, the model read it in context and NER guessed
    from its shape ("Harbor" the system typed as a company, "LEJ-2" as a person): the lower tier's items
    that use that name with the other type are left out, or they would found a namesake entity of the wrong
    type that no merge may join (type conflicts never merge)."""
    if upper.pending_llm:
        return replace(lower, pending_llm=True)
    typed = {_name_key(e.name): e.type for e in upper.entities}

    def agrees(name: str, type_: str) -> bool:
        return typed.get(_name_key(name), type_) == type_

    return replace(
        upper,
        entities=_unique(tuple(e for e in lower.entities if agrees(e.name, e.type)) + upper.entities),
        relations=_unique(
            tuple(r for r in lower.relations if agrees(r.subject, r.subject_type) and agrees(r.object, r.object_type))
            + upper.relations
        ),
        claims=_unique(tuple(c for c in lower.claims if agrees(c.entity, c.entity_type)) + upper.claims),
        dropped=lower.dropped + upper.dropped,
    )


def _name_key(name: str) -> str:
    return " ".join(name.casefold().split())


_T = TypeVar("_T")


def _unique(items: tuple[_T, ...]) -> tuple[_T, ...]:
    return tuple(dict.fromkeys(items))
