"""Settings for the embedded runtime and the CLI, read from `KGRAG_*` environment variables.

Read once by the process's wiring function and passed down; nothing reads settings at import time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class KgragSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KGRAG_", extra="ignore")

    data_dir: Path = Field(Path(".kgrag"), description="Where the embedded stores live; one index per folder.")
    pg_dsn: SecretStr | None = Field(None, description="Use this PostgreSQL instead of the embedded one.")
    pg_idle_shutdown_s: float = Field(
        300.0,
        ge=0,
        description="The embedded PostgreSQL stays up this long after the last kgrag command used the data dir, "
        "so the next command attaches instead of starting it (0: stop it when the last process exits).",
    )
    pg_pool_size: int = Field(
        8, ge=1, le=256, description="PostgreSQL connections per process; concurrent requests lease one each."
    )
    http_threads: int = Field(
        40, ge=1, le=1024, description="Worker threads of the HTTP API; each runs one request at a time."
    )

    max_document_bytes: int = Field(5_000_000, ge=1)
    # At most 240: MiniLM reads 256 word pieces, and the breadcrumb is embedded with the chunk.
    chunk_max_tokens: int = Field(200, ge=16, le=240)
    chunk_overlap_tokens: int = Field(24, ge=0, le=128)
    ingest_batch_documents: int = Field(64, ge=1, le=1024)
    bus_partitions: int = Field(8, ge=1, le=256)

    embedder: Literal["onnx-minilm", "openai"] = "onnx-minilm"
    embed_threads: int | None = Field(None, ge=1, description="ONNX Runtime intra-op threads.")
    embed_batch_size: int = Field(32, ge=1, le=512)
    embeddings_base_url: str | None = None
    embeddings_model: str | None = None
    embeddings_api_key: SecretStr | None = None
    embeddings_dimension: int = Field(384, ge=8)

    llm_base_url: str | None = Field(None, description="OpenAI-compatible chat endpoint, e.g. http://host/v1")
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None
    llm_timeout_s: float = Field(60.0, gt=0)

    llm_replay_dir: Path | None = Field(
        None, description="Serve chat replies recorded under this folder instead of calling a model (tests, demos)."
    )
    llm_record_dir: Path | None = Field(None, description="Record every chat request and reply under this folder.")
    extraction_reply_book: Path | None = Field(
        None,
        description="Tier 3 reads its replies from this reply book (JSONL, one document's items per line) instead "
        "of a model: an offline stand-in for evaluation and demos; answering is unaffected.",
    )

    answer_cache_ttl_s: int = Field(300, ge=0)
    answer_style: Literal["composed", "sentences"] = Field(
        "composed",
        description="Without an LLM: composed (graph facts in words, then supporting sentences) or sentences "
        "(the best supporting sentences only, the answerer before facts reached answers).",
    )

    # --- content encryption (crypto-shredding, docs/adr/0008-crypto-shredding.md) ----------------------
    content_encryption: bool = Field(
        True,
        description="Seal every document's content under its own data key, so a deletion shreds it. Off only "
        "for the benchmark's baseline: a deletion then leaves the text in dead tuples, WAL and backups.",
    )
    kek: SecretStr | None = Field(
        None, description="The key-encryption key (base64 of 32 random bytes); wraps every document's data key."
    )
    kek_previous: SecretStr | None = Field(
        None, description="Comma-separated older KEKs that still unwrap (during a rotation; see docs/operations.md)."
    )
    kek_dir: Path | None = Field(
        None,
        description="A folder of KEK files (kek-NNNNNN.key, the highest is the primary), e.g. a mounted secret. "
        "Default in embedded mode: <data_dir>/keys, created 0600 on first start.",
    )

    # --- extraction (issue: tiered, evidence-bound knowledge extraction) ----------------------------------
    extraction_enabled: bool = Field(True, description="Run tiers 0-3 on every changed chunk.")
    extractor_version: str = Field("1", description="Part of the extraction cache key; bump it to re-extract.")
    ontology_file: Path | None = Field(None, description="Ontology YAML; default: the bundled schemas/ontology.")
    mapping_file: Path | None = Field(None, description="Tier-1 record mapping rules; default: the bundled ones.")
    extraction_priority_sources: list[str] = Field(
        default_factory=lambda: ["incidents", "meetings"], description="Sources whose chunks always reach tier 3."
    )
    extraction_llm_min_entities: int = Field(6, ge=1, description="A chunk naming this many entities reaches tier 3.")
    extraction_llm_below_confidence: float = Field(
        0.35, ge=0, le=1, description="A lower-tier item below this confidence sends its chunk to tier 3."
    )
    extraction_llm_batch_chunks: int = Field(6, ge=1, le=64)
    extraction_llm_max_input_tokens: int = Field(6_000, ge=500)
    llm_tokenizer_file: Path | None = Field(
        None, description="tokenizer.json of the chat model: token counts in previews are then counted, not estimated."
    )
    llm_price_input_per_mtok: float | None = Field(None, ge=0, description="Price per million input tokens.")
    llm_price_output_per_mtok: float | None = Field(None, ge=0, description="Price per million output tokens.")
    llm_price_currency: str = "USD"
    # --- knowledge graph: resolution and graph-assisted retrieval --------------------------------------
    graph_retrieval: bool = Field(
        False, description="Search and ask through the graph layer by default (per call: --graph / graph=true)."
    )
    text_graph: bool = Field(
        False,
        description="Build the text graph with ingest (entities, noun phrases, titles, links over passages) and "
        "search through it by default (per call: text_graph=true/false); docs/knowledge-graph.md, 'Text graph'.",
    )
    text_graph_noun_phrases: bool = Field(
        True,
        description="With a spaCy extractor (KGRAG_TEXT_GRAPH_EXTRACTOR parser or tagger), noun phrases join the "
        "text graph's nodes; off: NER and links only.",
    )
    text_graph_extractor: Literal["patterns", "parser", "tagger", "ner"] = Field(
        "patterns",
        description="What finds the text graph's nodes at ingest: 'patterns' (no model: capitalised names, titles "
        "and links; the same dev multi-hop recall as spaCy at a fraction of the ingest cost, docs/benchmarks.md "
        "section 11), or spaCy's NER plus noun phrases from the parser ('parser') or the tagger ('tagger'), "
        "or NER only ('ner').",
    )
    text_graph_timeout_s: float = Field(
        1.0, gt=0, description="Budget of the text-graph walk and bridges; over it the answer is hybrid's, degraded."
    )
    graph_expansion_budget_s: float = Field(
        0.25, gt=0, description="Wall-clock budget of the graph walk; over it the walk stops with what it found."
    )
    graph_timeout_s: float = Field(
        1.0, gt=0, description="Budget of the whole graph layer; over it the answer is hybrid's, flagged degraded."
    )
    router: Literal["rules", "learned"] = Field(
        "learned",
        description="Question router of the graph layer: a classifier over the embedding model (the default: the "
        "shipped fit of the bundled sets, or trained once per process from router_questions_file), or the "
        "pattern list (rules).",
    )
    router_questions_file: Path | None = Field(
        None,
        description="The learned router's training set; unset: the bundled corpora/router/questions.jsonl plus "
        "questions-bundled-dev.jsonl, with their shipped fit.",
    )
    resolution_enabled: bool = Field(True, description="Resolve entities after every extraction.")
    entity_id_key: SecretStr | None = Field(
        None,
        min_length=16,
        description="Secret that keys entity ids (at least 16 characters); unset: the key PostgreSQL generated "
        "once (kg_installation). Settable only before the first entity is stored, or to the key already in use.",
    )
    resolution_hub_min_degree: int = Field(25, ge=2, description="Entities with this many edges are hubs.")
    resolution_full_pass_every_s: float = Field(
        3600.0,
        ge=0,
        description="After documents change, resolution compares only what they could merge with; the first pass "
        "after a start and one this often compares everything (0: never automatically; `kgrag entities resolve-pass`).",
    )
    resolution_overrides_file: Path | None = Field(
        None, description="Hand decisions (must_merge / must_not_merge); default: schemas/resolution/overrides.yaml."
    )
    # --- communities (docs/communities.md) -------------------------------------------------------------
    communities_enabled: bool = Field(
        True, description="Keep communities over the entity graph after every resolution pass (embedded)."
    )
    communities_rebuild_every_s: float = Field(
        0.0,
        ge=0,
        description="A full community rebuild this often (0: only the affected communities after a change, and "
        "a full rebuild on demand: `kgrag communities rebuild`).",
    )
    communities_seed: int = Field(42, description="Leiden's seed: one graph always gives the same communities.")
    communities_max_levels: int = Field(3, ge=1, le=6, description="Levels of the community hierarchy.")
    communities_split_above: int = Field(
        30, ge=2, description="A community with more members than this gets children one level down."
    )
    global_on_router: bool = Field(
        True,
        description="AUTO asks the router calls global take the GLOBAL route (themes fused with the hybrid answer); "
        "false: they are answered from hybrid (or graph) search as before, and only mode GLOBAL takes the route.",
    )
    llm_seconds_per_call: float = Field(8.0, gt=0, description="Assumed latency of one extraction call (previews).")
    eval_suites_dir: Path | None = Field(
        None, description="Folder of the bundled evaluation suites (a copy of corpora/); default: the repository's."
    )

    # --- query traces and feedback (docs/http-api.md, "Traces and feedback") --------------------------
    traces_enabled: bool = Field(
        True, description="Record a trace (ids, hashes, timings; no document text) of every search and ask."
    )
    trace_retention_days: int = Field(
        30, ge=1, le=3650, description="Traces older than this are purged (hourly), unless feedback on them is open."
    )

    # --- distributed runtime (KGRAG_RUNTIME=distributed) ---------------------------------------------
    runtime: Literal["embedded", "distributed"] = "embedded"
    kafka_bootstrap: str | None = Field(None, description="host:port[,host:port] of the Kafka brokers.")
    kafka_group_prefix: str = Field("kgrag", description="Consumer groups are <prefix>.<service>.")
    kafka_topic_partitions: int = Field(12, ge=1, le=1024)
    kafka_replication_factor: int = Field(1, ge=1, le=5)
    kafka_topic_prefix: str = Field("", description="Prepended to every topic name (isolates environments).")
    kafka_ack_timeout_s: float = Field(
        5.0, gt=0, le=120, description="An ingest call waits this long for Kafka's acknowledgement, then answers 503."
    )
    redis_namespace: str = Field("kgrag", description="Prefix of every Redis key this deployment writes.")
    opensearch_url: str | None = None
    opensearch_user: str | None = None
    opensearch_password: SecretStr | None = None
    opensearch_index: str = Field(
        "kgrag-chunks",
        # The index template (schemas/opensearch/chunks-template.json) applies to kgrag-chunks* only; an
        # index outside it would get OpenSearch's default mapping and search would quietly degrade.
        pattern=r"^kgrag-chunks[a-z0-9._-]*$",
        description="OpenSearch index of the chunks: kgrag-chunks followed by lowercase letters, digits, . _ -.",
    )
    opensearch_purge_wait_s: float = Field(
        45.0,
        ge=0.0,
        le=600.0,
        description="How long a deletion's purge waits for OpenSearch to drop soft deletes its retention lease"
        " still holds (the lease moves on about every 30 s); 0: record 'deleted' with the count and go on.",
    )
    qdrant_url: str | None = Field(None, description="Qdrant server URL.")
    qdrant_path: Path | None = Field(None, description="qdrant-client local mode (tests only).")
    qdrant_api_key: SecretStr | None = None
    qdrant_collection: str = "kgrag_chunks"
    neo4j_uri: str | None = None
    neo4j_user: str | None = None
    neo4j_password: SecretStr | None = None
    neo4j_namespace: str = Field(
        "kg",
        pattern=r"^[A-Za-z0-9._-]{1,64}$",
        description="Stamped on every node and relationship this deployment writes to Neo4j, and matched by "
        "every query, so deployments (or tests) sharing one database never see each other's graph.",
    )
    neo4j_database: str | None = Field(
        None, description="Neo4j database (Enterprise: one per deployment); unset: the server's default."
    )
    graph_reads: Literal["neo4j", "postgres"] = Field(
        "neo4j",
        description="Distributed query API: serve graph reads from the Neo4j projection while its watermark "
        "has reached PostgreSQL's graph version (else from PostgreSQL), or always from PostgreSQL. Without "
        "KGRAG_NEO4J_URI every read goes to PostgreSQL.",
    )
    redis_url: SecretStr | None = None
    s3_endpoint: str | None = Field(None, description="S3-compatible endpoint; unset means AWS S3.")
    s3_bucket: str = "kgrag-documents"
    ops_host: str = Field("127.0.0.1", description="Bind address of a worker's /healthz, /readyz, /metrics.")
    ops_port: int = Field(9100, ge=0, le=65535)
    ready_max_lag: int = Field(10_000, ge=0, description="Readiness fails above this consumer lag.")

    @model_validator(mode="after")
    def _overlap_below_cap(self) -> KgragSettings:
        if self.chunk_overlap_tokens >= self.chunk_max_tokens:
            raise ValueError("KGRAG_CHUNK_OVERLAP_TOKENS must be smaller than KGRAG_CHUNK_MAX_TOKENS")
        return self

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url and self.llm_model)
