"""Wiring of the extraction use case, shared by the embedded runtime, the extractor service and the admin API.

The ontology in force is the one PostgreSQL marks active; on first start the bundled (or configured) file
is loaded, validated and stored as a version. Files are read here, never in the core.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from kgrag_core.chunking import estimate_tokens
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.ontology import Cardinality, Ontology, ontology_to_dict, parse_ontology
from kgrag_core.extraction.pipeline import ExtractionReport, ExtractionSettings, Extractor
from kgrag_core.extraction.policy import Tier3Policy
from kgrag_core.extraction.rerun import CostModel, RerunService
from kgrag_core.extraction.tier1 import MappingRules, load_mapping_rules
from kgrag_core.extraction.tier3 import LlmExtractor
from kgrag_core.ports import ChatModel, DocumentStore, ExtractionStore
from kgrag_runtime.quality_metrics import ExtractionUsageMetrics
from kgrag_runtime.settings import KgragSettings

SCHEMAS = Path(__file__).resolve().parent / "schemas"
DEFAULT_ONTOLOGY = SCHEMAS / "ontology" / "ontology.yaml"
DEFAULT_MAPPING = SCHEMAS / "mappings" / "records.yaml"


def read_yaml(path: Path) -> object:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise KgragError(
            ErrorCode.CONFIGURATION_INVALID,
            f"Cannot read {path}: {err.strerror}.",
            hint="Check the path in KGRAG_ONTOLOGY_FILE / KGRAG_MAPPING_FILE.",
        ) from err
    except yaml.YAMLError as err:
        raise KgragError(
            ErrorCode.ONTOLOGY_INVALID,
            f"{path} is not valid YAML: {err}",
            hint="Fix the file's syntax and load it again.",
        ) from err


def install_ontology(store: ExtractionStore, ontology: Ontology) -> bool:
    """Store and activate a new ontology version; False when this exact version is already active.

    A version label is immutable: reusing one for different content is refused, so every stored
    extraction's ontology version keeps meaning what it meant.
    """
    active = store.active_ontology()
    if active is not None:
        current = parse_ontology(active)
        if current.version == ontology.version:
            if current.fingerprint != ontology.fingerprint:
                raise KgragError(
                    ErrorCode.ONTOLOGY_INVALID,
                    f"Ontology version {ontology.version!r} already exists with other content.",
                    hint="Give the changed ontology a new version label.",
                )
            return False
    if ontology.version in store.ontology_versions() and active is not None:
        raise KgragError(
            ErrorCode.ONTOLOGY_INVALID,
            f"Ontology version {ontology.version!r} was used before.",
            hint="Give the changed ontology a new version label.",
        )
    store.save_ontology(ontology.version, ontology_to_dict(ontology), activate=True)
    return True


def active_ontology(settings: KgragSettings, store: ExtractionStore) -> Ontology:
    if settings.ontology_file is not None:
        ontology = parse_ontology(read_yaml(settings.ontology_file))
        install_ontology(store, ontology)
        return ontology
    stored = store.active_ontology()
    if stored is not None:
        return parse_ontology(stored)
    ontology = parse_ontology(read_yaml(DEFAULT_ONTOLOGY))
    install_ontology(store, ontology)
    return ontology


def mapping_rules(settings: KgragSettings, ontology: Ontology) -> MappingRules:
    return load_mapping_rules(read_yaml(settings.mapping_file or DEFAULT_MAPPING), ontology)


def build_extractor(
    settings: KgragSettings, *, store: ExtractionStore, llm: ChatModel | None, ontology: Ontology | None = None
) -> Extractor:
    from kgrag_adapters.spacy_ner.recognizer import SpacyRecognizer

    onto = ontology or active_ontology(settings, store)
    count_tokens = prompt_token_counter(settings)
    return Extractor(
        store=store,
        ontology=onto,
        mapping=mapping_rules(settings, onto),
        recognizer=SpacyRecognizer(),
        llm=LlmExtractor(llm, onto, count_tokens=count_tokens) if llm is not None else None,
        policy=Tier3Policy(
            priority_sources=frozenset(settings.extraction_priority_sources),
            min_entities=settings.extraction_llm_min_entities,
            low_confidence=settings.extraction_llm_below_confidence,
            multi_valued_attributes=frozenset(
                a.name for a in onto.attributes.values() if a.cardinality is Cardinality.MULTI
            ),
        ),
        count_tokens=count_tokens,
        settings=ExtractionSettings(
            extractor_version=settings.extractor_version,
            llm_batch_chunks=settings.extraction_llm_batch_chunks,
            llm_max_input_tokens=settings.extraction_llm_max_input_tokens,
        ),
    )


def prompt_token_counter(settings: KgragSettings) -> Callable[[str], int]:
    """The chat model's own tokenizer when one is configured, else an estimate (previews label it so)."""
    if settings.llm_tokenizer_file is None:
        return estimate_tokens
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(settings.llm_tokenizer_file))

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    return count


def cost_model(settings: KgragSettings) -> CostModel:
    return CostModel(
        input_price_per_mtok=settings.llm_price_input_per_mtok,
        output_price_per_mtok=settings.llm_price_output_per_mtok,
        currency=settings.llm_price_currency,
        seconds_per_call=settings.llm_seconds_per_call,
        tokens_counted=settings.llm_tokenizer_file is not None,
    )


def usage_observer(settings: KgragSettings, metrics: ExtractionUsageMetrics) -> Callable[[ExtractionReport], None]:
    """Counts what tier 3 did in each extraction (calls, tokens, spend at the configured prices)."""
    prices = cost_model(settings)

    def observe(report: ExtractionReport) -> None:
        metrics.record(
            calls=report.llm_calls,
            input_tokens=report.input_tokens,
            output_tokens=report.output_tokens,
            cost=prices.cost(report.input_tokens, report.output_tokens),
            currency=prices.currency,
        )

    return observe


def build_rerun(settings: KgragSettings, *, documents: DocumentStore, extractor: Extractor) -> RerunService:
    return RerunService(
        documents=documents,
        extractor=extractor,
        cost=cost_model(settings),
    )
