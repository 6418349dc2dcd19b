"""What extraction learns stays in its access scope on the distributed runtime too (docs/security.md, section 4).

The scenario of tests/pipeline/test_extraction_scopes.py, with the chunk-indexer, the acl-propagator and the
extractor run as Kafka consumer groups on the real servers, and the caller's view read through the query
API's own wiring (`query_app`): a restricted record teaches tier 2's ruler that "Brackenfold" is a Site;
public text naming it is typed by spaCy, never by the ruler, while the same words in a document of the
record's class are typed Site (positive control). Then the restricted memo is made public through Kafka: the
acl-propagator's chunks.changed makes the extractor extract it again with what public chunks taught, so the
ruler's Site goes with the old class. No model is configured: tiers 0-2 only.
"""

from __future__ import annotations

import psycopg
import pytest

from kgrag_core.acl import AclClass
from kgrag_core.events import CHUNKS_CHANGED, DOCUMENTS_CHANGED
from kgrag_core.extraction.model import Tier
from kgrag_core.extraction.records import RerunScope
from kgrag_core.extraction.tier2 import SOURCE_CONFIDENCE
from kgrag_core.handlers.acl_propagator import AclPropagatorHandler
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.handlers.extractor import ExtractorHandler
from kgrag_runtime.app import KgragApp
from kgrag_runtime.distributed import DistributedStores, query_app
from kgrag_runtime.extraction import build_extractor
from kgrag_runtime.settings import KgragSettings
from tests.integration.conftest import Workers, wait_for
from tests.pipeline.test_extraction_scopes import (
    LEADER,
    LEADERSHIP_ACL,
    OUTSIDER,
    PUBLIC_ACL,
    SECRET_SITE,
    SENTENCE,
    _doc,
    _mentions,
    _types,
)

pytestmark = pytest.mark.integration
RULER = SOURCE_CONFIDENCE["ruler"]


def _extracted(stores: DistributedStores, doc_id: str) -> bool:
    chunks = stores.extraction.chunks_in_scope(RerunScope(doc_ids=(doc_id,)))
    states = stores.extraction.states([c.chunk_id for c in chunks])
    return bool(chunks) and all(c.chunk_id in states for c in chunks)


@pytest.fixture
def pipeline(distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers) -> KgragApp:
    settings = distributed_settings
    indexer = stores.indexer(settings)
    workers.start("chunk-indexer", ChunkIndexerHandler(indexer, name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)))
    workers.start("acl-propagator", AclPropagatorHandler(indexer))
    extractor = build_extractor(settings, store=stores.extraction, llm=None)
    workers.start("extractor", ExtractorHandler(stores.store, extractor, name="extractor", topics=(CHUNKS_CHANGED,)))
    return query_app(settings, stores, llm=None)


def _ingest_one(kg: KgragApp, stores: DistributedStores, doc_id: str, body: str, acl: AclClass) -> None:
    """One at a time, each extracted before the next is sent: what the ruler knows depends on the order."""
    kg.ingest([_doc(doc_id, body, acl)])
    wait_for(lambda: _extracted(stores, doc_id), what=f"{doc_id} extracted on Kafka")


def test_the_distributed_extractor_keeps_the_ruler_in_its_scope_through_an_acl_change(
    pipeline: KgragApp, stores: DistributedStores, pg_dsn: str
) -> None:
    kg = pipeline
    kg.ingest([SECRET_SITE])
    wait_for(lambda: _extracted(stores, SECRET_SITE.doc_id), what="the restricted record extracted")
    _ingest_one(kg, stores, "wiki-night-shift", SENTENCE, PUBLIC_ACL)
    _ingest_one(kg, stores, "memo-night-shift", SENTENCE, LEADERSHIP_ACL)

    public = _mentions(pg_dsn, "wiki-night-shift", "Brackenfold")
    assert public, "the public text's name was not extracted at all: the probe would prove nothing"
    assert all(t != "Site" and conf != RULER for t, _, conf in public), public
    # Positive control: the same words in the record's class are typed by the ruler the record taught.
    assert ("Site", int(Tier.NER), RULER) in _mentions(pg_dsn, "memo-night-shift", "Brackenfold")
    assert _types(kg, "Brackenfold", OUTSIDER) and "Site" not in _types(kg, "Brackenfold", OUTSIDER)
    assert "Site" in _types(kg, "Brackenfold", LEADER)
    # The extraction cache holds one entry per class for the one text, each keyed by its class.
    [chunk] = stores.store.chunks_of("wiki-night-shift")
    with psycopg.connect(pg_dsn) as conn:
        versions = conn.execute(
            "SELECT extractor_version FROM extraction_cache WHERE content_hash = %s", (chunk.content_hash,)
        ).fetchall()
    classes = {str(v).rsplit("|acl:", 1)[1] for (v,) in versions}
    assert classes == {PUBLIC_ACL.acl_class_id, LEADERSHIP_ACL.acl_class_id}, versions

    # The memo goes public on Kafka: extracted again with public knowledge, the ruler's Site is gone.
    kg.change_acl("memo-night-shift", PUBLIC_ACL)
    wait_for(
        lambda: _mentions(pg_dsn, "memo-night-shift", "Brackenfold") == public,
        timeout_s=45,
        what="the memo re-extracted under its new (public) class",
    )
    assert "Site" not in _types(kg, "Brackenfold", OUTSIDER)
    assert "Site" in _types(kg, "Brackenfold", LEADER)  # the record itself still says Site to its readers
