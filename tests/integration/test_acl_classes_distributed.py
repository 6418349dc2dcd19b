"""ACL class ids on the distributed runtime (docs/security.md, section 5): Kafka payloads, OpenSearch and the
Redis answer cache, on the real servers with the chunk-indexer and acl-propagator as consumer groups.

A `documents.changed` record whose ACL smuggles U+001F into a group name (the old collision with
`["finance", "zz"]`) is refused by the chunk-indexer with INVALID_PRINCIPAL and nothing of it is stored or
indexed, while the real two-group document is read by a finance member and a zz member and not by an
outsider (positive control), through OpenSearch and the hybrid search alike. Answers are cached in Redis
per caller scope (the class id of the caller's principals): the outsider is never served the finance
member's cached answer. An `acl.changed` record naming a smuggled principal makes the document private
(admin only), in PostgreSQL and OpenSearch, and the members' cached answers are no longer served.
"""

from __future__ import annotations

import uuid

import pytest
import redis

from kgrag_core.acl import PRIVATE_ACL, Caller, readable_classes
from kgrag_core.errors import ErrorCode
from kgrag_core.events import ACL_CHANGED, DOCUMENTS_CHANGED, document_changed_from_source
from kgrag_core.handlers.acl_propagator import AclPropagatorHandler
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.ingest import IngestStatus
from kgrag_runtime.app import KgragApp
from kgrag_runtime.distributed import DistributedStores, producer, query_app
from kgrag_runtime.kafka.codec import encode
from kgrag_runtime.settings import KgragSettings
from tests.integration.conftest import Workers, wait_for
from tests.pipeline.corpus import doc

pytestmark = pytest.mark.integration
FINANCE = Caller(user="fin", groups=("finance",))
ZZ = Caller(user="zed", groups=("zz",))
OUTSIDER = Caller(user="sam", groups=("engineering",))
ADMIN = Caller(admin=True)
SMUGGLED = "group:finance\x1fgroup:zz"


def _finds(kg: KgragApp, stores: DistributedStores, token: str, caller: Caller, doc_id: str) -> tuple[bool, bool]:
    """Whether `caller` finds `doc_id` by `token`: (OpenSearch alone, the hybrid search)."""
    known = stores.store.acl_classes()
    classes = [c.acl_class_id for c in known] if caller.admin else readable_classes(known, caller)
    hits = {h.chunk_id for h in stores.keywords.search(token, classes, 10)} if classes else set()
    in_keyword = any(c.chunk_id in hits for c in stores.store.chunks_of(doc_id))
    return in_keyword, any(h.doc_id == doc_id for h in kg.search(token, caller).hits)


def _outcome(stores: DistributedStores, doc_id: str, status: IngestStatus) -> bool:
    return any(o.status is status for o in stores.store.outcomes_for(doc_id))


def test_smuggled_principals_are_refused_on_kafka_and_caches_keep_scopes_apart(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> None:
    settings = distributed_settings
    indexer = stores.indexer(settings)
    log = stores.store
    workers.start("chunk-indexer", ChunkIndexerHandler(indexer, topics=(DOCUMENTS_CHANGED,)), outcome_log=log)
    workers.start("acl-propagator", AclPropagatorHandler(indexer), outcome_log=log)
    kg = query_app(settings, stores, llm=None)
    token = "zq" + uuid.uuid4().hex[:12]
    text = f"# Ledger\n\nThe ledger code for the quarter is {token}.\n"
    kg.ingest([doc("two-groups", text, acl={"groups": ["finance", "zz"]})])
    # The smuggled ACL goes straight onto Kafka, as a producer that does not validate would send it.
    event = document_changed_from_source(doc("smuggled", text, acl={"groups": ["finance"]})).model_dump(mode="json")
    event["acl_principals"] = [SMUGGLED]
    raw = producer(settings, "test")
    raw.produce_raw(DOCUMENTS_CHANGED, "smuggled", encode(DOCUMENTS_CHANGED, event))
    raw.flush()
    wait_for(lambda: _outcome(stores, "two-groups", IngestStatus.INDEXED), what="the two-group document indexed")
    wait_for(lambda: _outcome(stores, "smuggled", IngestStatus.REJECTED), what="the smuggled record refused")

    [refused] = [o for o in stores.store.outcomes_for("smuggled") if o.status is IngestStatus.REJECTED]
    assert refused.error_code is ErrorCode.INVALID_PRINCIPAL
    assert stores.store.get_document("smuggled") is None
    assert stores.keywords.ids_for_doc("smuggled") == [] and stores.vectors.ids_for_doc("smuggled") == []
    assert all("\x1f" not in p for c in stores.store.acl_classes() for p in c.principals)
    # Positive control: each group's member reads the two-group document; the outsider does not.
    assert _finds(kg, stores, token, FINANCE, "two-groups") == (True, True)
    assert _finds(kg, stores, token, ZZ, "two-groups") == (True, True)
    assert _finds(kg, stores, token, OUTSIDER, "two-groups") == (False, False)

    # The Redis answer cache: one entry per caller scope; the outsider never gets the member's answer.
    question = "What is the ledger code for the quarter?"
    first = kg.ask(question, FINANCE)
    assert first["answered"] is True and first["cached"] is False
    again = kg.ask(question, FINANCE)
    assert again["cached"] is True and token in str(again)  # positive control: cached and served to its scope
    outsider = kg.ask(question, OUTSIDER)
    assert outsider["cached"] is False and outsider["answered"] is False and token not in str(outsider)
    client = redis.Redis.from_url(settings.redis_url.get_secret_value() if settings.redis_url else "")
    keys = [k.decode() for k in client.scan_iter(match=f"{settings.redis_namespace}:e:*")]
    client.close()
    scopes = {k.split(":")[3] for k in keys}
    assert FINANCE.scope_key() in scopes and OUTSIDER.scope_key() in scopes and len(keys) == len(scopes) == 2
    assert all(token not in k and "ledger" not in k for k in keys)  # keys hold a digest, never the question

    # acl.changed naming a smuggled principal: private (admins only), failing closed, in every projection.
    bad = {"event_type": ACL_CHANGED, "doc_id": "two-groups", "acl_principals": [SMUGGLED], "acl_malformed": False}
    raw.produce_raw(ACL_CHANGED, "two-groups", encode(ACL_CHANGED, bad))
    raw.flush()
    wait_for(lambda: _outcome(stores, "two-groups", IngestStatus.REJECTED), what="the smuggled ACL change refused")
    private = stores.store.get_document("two-groups")
    assert private is not None and private.acl_class_id == PRIVATE_ACL.acl_class_id
    for member in (FINANCE, ZZ):
        assert _finds(kg, stores, token, member, "two-groups") == (False, False)
        assert token not in str(kg.ask(question, member))  # not served from the cache the change invalidated
    assert _finds(kg, stores, token, ADMIN, "two-groups") == (True, True)  # positive control: it is there
