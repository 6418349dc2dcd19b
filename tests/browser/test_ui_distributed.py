"""The web app on the DISTRIBUTED runtime, in Chromium: the query API wired on the dev servers' stores (Kafka,
PostgreSQL, OpenSearch, Neo4j, Redis, S3), served on a real socket, with the documents indexed, extracted and
resolved by Kafka consumer groups (chunk-indexer, extractor, entity-resolver), projected into Neo4j (the
graph-writer's knowledge projection, which the entity pages then read) and clustered (community-builder),
under names of this module's own.

A streamed cited answer whose citation opens the source at the quoted bytes (`GET /v1/documents/{id}` reads
the body from S3 here), an entity page walked to a neighbour, an outsider who finds no restricted
document or entity anywhere while a member of its group does (the positive control), themes under the same
rule, and an admin's split and merge reaching the entity pages through Kafka and Neo4j, then a re-extraction
preview.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from kgrag_adapters.connectors import iter_path
from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_adapters.neo4j.knowledge_graph import Neo4jKnowledgeGraph
from kgrag_adapters.postgres.knowledge_source import PostgresKnowledgeSource
from kgrag_core.events import CHUNKS_CHANGED, DOCUMENTS_CHANGED, ENTITIES_CHANGED, GRAPH_CHANGED
from kgrag_core.extraction.records import RerunScope
from kgrag_core.graph.routing import Route, RoutedGraphReader
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.handlers.extractor import ExtractorHandler
from kgrag_core.handlers.knowledge_projection import KnowledgeProjectionHandler
from kgrag_query_api.api import create_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.communities import build_communities, build_community_handler
from kgrag_runtime.distributed import DistributedStores, open_stores, query_app
from kgrag_runtime.extraction import build_extractor
from kgrag_runtime.graph import build_resolution, build_resolver_handler
from kgrag_runtime.kafka.runner import ConsumerRunner
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_key_ring
from tests.browser.admin_steps import (
    merge_by_hand,
    preview_community_rebuild,
    preview_reextraction,
    run_community_rebuild,
    split_merge_of,
)
from tests.browser.pages import ask_streamed, rate_and_open_trace, record_timing, sign_in, tap_node
from tests.browser.server import CORPUS, Server
from tests.browser.test_ui_entities_admin import RECORDS, _graph_labels, _ingest, _resolve
from tests.browser.test_ui_visibility import ask, search, source_view
from tests.browser.theme_steps import THEMES_MS, community_of, open_first_theme, open_theme, themes_page
from tests.conftest import fresh_database
from tests.integration.conftest import Workers, drop_server_side, settings_of_own, wait_for, wait_until_quiet
from tests.neo4j_lock import neo4j_held
from tests.socket_server import serving_api

pytestmark = pytest.mark.integration

# The on-call handover (quotes with non-ASCII names), Atlas, and the leadership-only acquisition.
DOCUMENTS = ("atlas", "oncall", "osprey")
RESTRICTED_DOC, SECRET_WORD = "email-osprey-board-prep", "Osprey"
RESTRICTED_ENTITY = "Gannet Capital"  # known only from a leadership-only record
QUESTION = "Who is the current on-call owner of Atlas?"
OSPREY_QUESTION = "What is Project Osprey, the possible acquisition discussed for the board?"
OSPREY_SEARCH = "Project Osprey board preparation acquisition"
SETTLE_S = 240.0


def _documents(folder: Path) -> tuple[Path, set[str]]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines(keepends=True)
    chosen = [line for line in lines if any(s in json.loads(line)["id"] for s in DOCUMENTS)]
    path = folder / "documents.jsonl"
    path.write_text("".join(chosen), encoding="utf-8")
    return path, {json.loads(line)["id"] for line in chosen}


@dataclass(frozen=True)
class Distributed:
    server: Server
    ids: dict[str, str]  # tern, gannet, site: entity ids
    graph_reads: RoutedGraphReader  # the query API's: which store answered its graph reads


def _start_workers(
    workers: Workers, settings: KgragSettings, stores: DistributedStores, projection: KnowledgeProjectionHandler
) -> list[ConsumerRunner]:
    extractor = build_extractor(settings, store=stores.extraction, llm=None)
    resolution = build_resolution(settings, store=stores.store, embedder=stores.embedder)
    communities = build_communities(settings, stores.store.pool)
    indexer = ChunkIndexerHandler(stores.indexer(settings), topics=(DOCUMENTS_CHANGED,))
    return [
        workers.start("chunk-indexer", indexer, outcome_log=stores.store),
        workers.start("extractor", ExtractorHandler(stores.store, extractor, topics=(CHUNKS_CHANGED,))),
        workers.start("entity-resolver", build_resolver_handler(settings, resolution)),
        workers.start("graph-writer", projection),
        workers.start("community-builder", build_community_handler(settings, communities)),
    ]


@contextmanager
def _projection(settings: KgragSettings) -> Iterator[KnowledgeProjectionHandler]:
    """The graph-writer's knowledge projection into the deployment's Neo4j namespace, sealed as the service
    writes it; the namespace is dropped afterwards. Holds the Neo4j test lock (suites that wipe it wait)."""
    dsn = settings.pg_dsn.get_secret_value() if settings.pg_dsn else ""
    with (
        neo4j_held(settings.neo4j_uri or "") as uri,
        PostgresKnowledgeSource.connect(dsn, kek=build_key_ring(settings)) as source,
        Neo4jKnowledgeGraph.connect(
            uri, namespace=settings.neo4j_namespace, cipher=source.cipher, name_index=source.name_index
        ) as neo,
    ):
        try:
            yield KnowledgeProjectionHandler(source, neo, topics=(CHUNKS_CHANGED, GRAPH_CHANGED, ENTITIES_CHANGED))
        finally:
            neo.drop_namespace()


@pytest.fixture(scope="module")
def distributed(pg_server_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Distributed]:
    """The query API on the distributed stores with its workers on threads, the documents and records
    ingested through Kafka and settled; (server, entity ids). Everything it made on the shared servers is
    removed afterwards."""
    started = time.perf_counter()
    folder = tmp_path_factory.mktemp("ui-distributed")
    with ExitStack() as stack:  # unwound in reverse: server, workers, stored objects, stores, server side, database
        env = stack.enter_context(pytest.MonkeyPatch.context())
        env.setenv("AWS_ACCESS_KEY_ID", os.environ.get("KGRAG_TEST_S3_ACCESS_KEY", "kgragdev"))
        env.setenv("AWS_SECRET_ACCESS_KEY", os.environ.get("KGRAG_TEST_S3_SECRET_KEY", "kgragdevsecret"))
        settings = settings_of_own(folder, stack.enter_context(fresh_database(pg_server_dsn)))
        stack.callback(drop_server_side, settings)
        stores = stack.enter_context(open_stores(settings, embedder=OnnxMiniLmEmbedder()))
        stack.callback(stores.objects.delete_prefix, "")
        stack.callback(stores.cache.invalidate_all)
        projection = stack.enter_context(_projection(settings))
        workers = Workers(settings)
        stack.callback(workers.stop_all)
        runners = _start_workers(workers, settings, stores, projection)
        kg = query_app(settings, stores, llm=None)
        verifier = TokenVerifier(secrets.token_urlsafe(32), "kgrag-local", "kgrag", "HS256")
        url = stack.enter_context(serving_api(create_app(kg, verifier)))
        server = Server(url, verifier, 0.0)
        path, ids = _documents(folder)
        kg.ingest(list(iter_path(path)))
        for record in RECORDS:
            _ingest(server, record)  # POST /v1/ingest/documents: onto Kafka
        ids |= {str(r["doc_id"]) for r in RECORDS}

        def extracted() -> bool:
            chunks = stores.extraction.chunks_in_scope(RerunScope(doc_ids=tuple(ids)))
            states = stores.extraction.states([c.chunk_id for c in chunks])
            return {c.doc_id for c in chunks} == ids and all(c.chunk_id in states for c in chunks)

        wait_for(extracted, timeout_s=SETTLE_S, what="every document indexed and extracted on Kafka")
        wait_until_quiet(runners, timeout_s=SETTLE_S)  # resolution's passes done
        [tern] = _resolve(server, "Tern Foods", server.admin)
        [gannet] = _resolve(server, RESTRICTED_ENTITY, server.admin)
        [site] = [c for c in _resolve(server, "TRN-1", server.admin) if c["type"] == "Site"]
        ids = {"tern": tern["entity_id"], "gannet": gannet["entity_id"], "site": site["entity_id"]}
        yield Distributed(Server(url, verifier, time.perf_counter() - started), ids, stores.routed_graph)


def _outsider(server: Server) -> str:
    return server.token("sam.ortiz", groups=("engineering",))


def _member(server: Server) -> str:
    return server.token("grace.oneill", groups=("leadership",))


def test_a_streamed_cited_answer_opens_its_source_from_s3_at_the_quoted_bytes(
    page: Page, distributed: Distributed
) -> None:
    server = distributed.server
    sign_in(page, server, _outsider(server))
    expect(page.locator("#who")).to_contain_text("sam.ortiz")
    record_timing(page, "distributed: first page /ui")
    ask_streamed(page, QUESTION)
    assert "Kenji Watanabe" in page.locator("#answer-text").inner_text()
    expect(page.locator("#answer-meta")).to_contain_text("Route:")

    first = page.locator("#answer-text .cite").first
    quote = page.locator(f"#citation-{first.inner_text().strip('[]')} q").inner_text()
    first.click()
    page.wait_for_url("**/ui/documents/**")
    # The body the page cuts is the one the chunk-indexer stored in S3; the span is in UTF-8 bytes.
    expect(page.locator("mark#cited")).to_have_text(quote)
    expect(page.locator("#doc-title")).not_to_be_empty()
    expect(page.locator(".facts")).to_contain_text("Version")
    record_timing(page, "distributed: source page /ui/documents")

    # Feedback and traces are kept in PostgreSQL on this runtime.
    page.goto(f"{server.url}/ui")
    ask_streamed(page, QUESTION)
    rate_and_open_trace(page)


def test_an_entity_page_walks_to_a_neighbour(page: Page, distributed: Distributed) -> None:
    server, graph = distributed.server, distributed.ids
    sign_in(page, server, _outsider(server))
    projected = distributed.graph_reads.counts[Route.PROJECTION]
    page.goto(f"{server.url}/ui/entities?name=Tern%20Foods")
    page.get_by_role("link", name="Tern Foods").click()
    page.wait_for_url(f"**/ui/entities/{graph['tern']}")
    expect(page.locator("section.conflicts")).to_contain_text("99.5%")  # two records disagree, same day
    expect(page.locator("section.relations")).to_contain_text("SERVED_AT")
    assert "TRN-1" in _graph_labels(page)
    record_timing(page, "distributed: entity")
    tap_node(page, graph["site"])
    page.wait_for_url(f"**/ui/entities/{graph['site']}**")
    expect(page.locator("article.entity h1")).to_contain_text("TRN-1")
    expect(page.locator("section.relations")).to_contain_text("Tern Foods")
    # Neo4j's projection, caught up with PostgreSQL, answered these pages' graph reads (not the fallback).
    assert distributed.graph_reads.counts[Route.PROJECTION] > projected, distributed.graph_reads.counts


def test_an_outsider_sees_no_restricted_document_or_entity_and_a_member_does(
    page: Page, distributed: Distributed
) -> None:
    server, graph = distributed.server, distributed.ids
    sign_in(page, server, _outsider(server))
    assert SECRET_WORD not in ask(page, OSPREY_QUESTION)
    hits = search(page, OSPREY_SEARCH)
    assert hits, "the outsider's search found nothing at all: the test would prove nothing"
    assert not [h for h in hits if RESTRICTED_DOC in h] and SECRET_WORD not in page.locator("#results").inner_text()
    shown, unknown = source_view(page, server, RESTRICTED_DOC), source_view(page, server, "no-such-document")
    assert "DOCUMENT_NOT_FOUND" in shown and SECRET_WORD not in shown
    assert shown.replace(RESTRICTED_DOC, "ID") == unknown.replace("no-such-document", "ID")
    page.goto(f"{server.url}/ui/entities/{graph['site']}?depth=2")
    expect(page.locator("section.relations")).to_contain_text("Tern Foods")  # the page did load
    assert RESTRICTED_ENTITY not in _graph_labels(page) and RESTRICTED_ENTITY not in page.content()
    page.goto(f"{server.url}/ui/entities?name={RESTRICTED_ENTITY}")
    expect(page.locator("#candidates")).to_contain_text("No entity named")
    page.goto(f"{server.url}/ui/entities/{graph['gannet']}")
    expect(page.locator(".error")).to_contain_text("ENTITY_NOT_FOUND")

    # Positive control: a member of leadership sees both, on the same pages.
    sign_in(page, server, _member(server))
    assert SECRET_WORD in ask(page, OSPREY_QUESTION)
    assert [h for h in search(page, OSPREY_SEARCH) if RESTRICTED_DOC in h]
    assert "Project Osprey: board preparation" in source_view(page, server, RESTRICTED_DOC)
    page.goto(f"{server.url}/ui/entities/{graph['site']}?depth=2")
    expect(page.locator("section.relations")).to_contain_text(RESTRICTED_ENTITY)
    assert RESTRICTED_ENTITY in _graph_labels(page)
    page.goto(f"{server.url}/ui/entities/{graph['gannet']}")
    expect(page.locator("article.entity h1")).to_contain_text(RESTRICTED_ENTITY)


def test_themes_on_the_distributed_runtime_show_a_member_what_an_outsider_may_not_see(
    page: Page, distributed: Distributed
) -> None:
    """The community-builder keeps the communities on Kafka's graph changes; the admin previews and runs a
    rebuild in the query API; a theme cites its sources, and Gannet Capital's theme lists Gannet for a member
    of leadership only."""
    server, graph = distributed.server, distributed.ids
    sign_in(page, server, server.admin)
    run_community_rebuild(page, preview_community_rebuild(page, server))
    gannet_theme = community_of(server, graph["gannet"])

    sign_in(page, server, _outsider(server))
    assert RESTRICTED_ENTITY not in themes_page(page, server)
    open_first_theme(page, "Routing")  # public documents' theme (Atlas is owned by the Routing team)
    open_theme(page, server, gannet_theme)
    assert RESTRICTED_ENTITY not in page.content()

    sign_in(page, server, _member(server))
    open_theme(page, server, gannet_theme)
    expect(page.locator("article.theme ul.members")).to_contain_text(RESTRICTED_ENTITY, timeout=THEMES_MS)


def _projected(reads: RoutedGraphReader) -> None:
    """Until the graph-writer has projected every graph change into Neo4j (the watermark is PostgreSQL's)."""
    wait_for(lambda: reads.lag() == 0, timeout_s=SETTLE_S, what="the Neo4j projection caught up")


def test_an_admins_split_and_merge_reach_the_entity_pages_through_kafka_and_neo4j(
    page: Page, distributed: Distributed
) -> None:
    """A decision in the admin pages is announced on Kafka; the graph-writer projects it, and the entity page,
    read from Neo4j, shows it. Last in the module: it changes the graph the other tests read."""
    server, reads = distributed.server, distributed.graph_reads
    sign_in(page, server, server.admin)
    [heron] = _resolve(server, "Heron Freight", server.admin)
    assert len(heron["members"]) == 2  # resolution merged the two spellings on its own
    profile = page.locator("article.entity")
    page.goto(f"{server.url}/ui/entities/{heron['entity_id']}")
    expect(profile).to_contain_text("Merged from")

    split_merge_of(page, server, heron["entity_id"])
    _projected(reads)
    projected = reads.counts[Route.PROJECTION]
    page.goto(f"{server.url}/ui/entities/{heron['entity_id']}")
    expect(profile.locator("h1")).to_contain_text("Heron Freight")
    expect(profile).not_to_contain_text("Merged from")
    assert reads.counts[Route.PROJECTION] > projected, reads.counts

    page.goto(f"{server.url}/ui/admin/merges")
    kept = merge_by_hand(page, heron["members"], "one haulier, two spellings").locator("a").first
    canonical = str(kept.get_attribute("href")).rsplit("/", 1)[-1]
    assert canonical in heron["members"]
    _projected(reads)
    page.goto(f"{server.url}/ui/entities/{canonical}")
    expect(profile).to_contain_text("Merged from")

    # The re-extraction preview runs in the query API's process, on the distributed stores.
    preview_reextraction(page, server, source="records", at_least=len(RECORDS))
