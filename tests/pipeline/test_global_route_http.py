"""The GLOBAL route end to end on the embedded runtime over HTTP (issue 12): real PostgreSQL, communities built
by the embedded pipeline (hierarchical Leiden), the caller's views and themes; an outsider against a finance
reader (the positive control).

The graph comes from tier-3 extraction with a FAKE scripted model (labelled: kgrag_testing.scripted_llm) that
states one relation per sentence below; the strongest facts of the Atlas community and the whole Vault
community rest on finance-only documents.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kgrag_adapters.postgres.communities import PostgresCommunityStore
from kgrag_core.acl import Caller
from kgrag_core.extraction.tier3 import rendered_chunks
from kgrag_core.ports import ChatMessage
from kgrag_query_api.api import create_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from kgrag_testing.scripted_llm import ScriptedChatModel, extraction_reply, relation
from tests.conftest import fresh_database
from tests.pipeline.corpus import doc

VERIFIER = TokenVerifier(key="test-key-" + "g" * 32, issuer="kgrag-test", audience="kgrag", algorithm="HS256")
OUTSIDER = {"Authorization": f"Bearer {VERIFIER.issue('sam', groups=['engineering'], scopes=['search'])}"}
FINANCE = {"Authorization": f"Bearer {VERIFIER.issue('fay', groups=['finance'], scopes=['search'])}"}
QUESTION = "What are the recurring causes of delays?"

# sentence -> (subject, type), relation, (object, type): what the scripted model extracts from it.
FACTS = {
    "The Routing team owns Atlas.": (("Routing", "Team"), "OWNS", ("Atlas", "System")),
    "Atlas delays at the Leipzig hub came from late carrier scans, so Atlas uses Relay for scans.": (
        ("Atlas", "System"),
        "USES",
        ("Relay", "System"),
    ),
    "Jordan Blake leads Project Quartz because the delays cost a key customer.": (
        ("Jordan Blake", "Person"),
        "LEADS",
        ("Project Quartz", "Project"),
    ),
    "The Routing team owns Project Quartz.": (("Routing", "Team"), "OWNS", ("Project Quartz", "Project")),
    "Vault Ledger delays came from its Orion dependency, as Vault Ledger depends on Orion.": (
        ("Vault Ledger", "System"),
        "DEPENDS_ON",
        ("Orion", "System"),
    ),
}
SECRET_WORDS = ("Quartz", "Jordan", "Vault", "Orion", "customer")


# Until the last test turns it on, the FAKE model answers a community-summary request with an unusable
# reply (an extraction reply), so summaries and themes are the extractive ones, flagged.
SUMMARISE = {"on": False}
SUMMARY_ASK = "Summarise what the sources say about"
PREFIX = "A recurring theme: "
UNFAITHFUL = "Atlas is run from Berlin."  # fluent, cites a real quote, and no quote says it


def scripted_summary(prompt: str) -> str:
    """FAKE model summary: each fact a numbered source holds, restated after PREFIX and citing it, then the
    unfaithful sentence (which verification must remove)."""
    blocks = re.split(r"^\[(\d+)\] ", prompt.split("\n\nQuestion:")[0], flags=re.MULTILINE)
    sentences: list[dict[str, Any]] = []
    for number, body in zip(blocks[1::2], blocks[2::2], strict=True):
        for fact in FACTS:
            if fact in body:
                evidence = [{"source": int(number), "quote": fact.rstrip(".")}]
                sentences.append({"text": PREFIX + fact, "evidence": evidence})
    if sentences:
        sentences.append({"text": UNFAITHFUL, "evidence": sentences[0]["evidence"]})
    return json.dumps({"insufficient_evidence": False, "sentences": sentences})


def scripted_extraction(messages: Sequence[ChatMessage]) -> str:
    if SUMMARISE["on"] and SUMMARY_ASK in messages[-1].content:
        return scripted_summary(messages[-1].content)
    items = []
    for chunk_id, text in rendered_chunks(messages[-1].content):
        for sentence, (subject, name, obj) in FACTS.items():
            if sentence in text:
                items.append(relation(chunk_id, subject, name, obj, sentence, confidence=0.95))
    return extraction_reply(relations=items)


@pytest.fixture(scope="module")
def client(
    tmp_path_factory: pytest.TempPathFactory, pg_server_dsn: str, embedder: Any
) -> Iterator[tuple[TestClient, Any]]:
    """One embedded app for the module (its tests only ask): the corpus ingested, communities built."""
    sentences = list(FACTS)
    docs = [
        doc("atlas-delays", f"# Atlas delays\n\n{sentences[0]} {sentences[1]}\n", title="Atlas delays"),
        doc(
            "quartz-plan",
            f"# Quartz plan\n\n{sentences[2]} {sentences[3]}\n",
            title="Quartz plan",
            acl={"groups": ["finance"]},
        ),
        doc("vault-review", f"# Vault review\n\n{sentences[4]}\n", title="Vault review", acl={"groups": ["finance"]}),
    ]
    model = ScriptedChatModel(scripted_extraction)
    with fresh_database(pg_server_dsn) as pg_dsn:
        settings = KgragSettings(
            data_dir=tmp_path_factory.mktemp("global-http") / "index",
            pg_dsn=pg_dsn,
            extraction_priority_sources=["*"],
            answer_cache_ttl_s=0,
        )
        with open_embedded(settings, embedder=embedder, llm=model) as kg, TestClient(create_app(kg, VERIFIER)) as c:
            outcomes = kg.ingest(docs)
            assert all(o.error_code is None for o in outcomes), [o.as_dict() for o in outcomes]
            yield c, kg


def ask(c: TestClient, headers: dict[str, str], mode: str = "GLOBAL") -> dict[str, Any]:
    response = c.post("/v1/ask", json={"question": QUESTION, "mode": mode}, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_global_answers_with_cited_themes_and_an_outsider_sees_nothing_restricted(
    client: tuple[TestClient, Any],
) -> None:
    c, kg = client
    # The embedded pipeline built the communities after resolution (the community builder); no rebuild here.
    assert PostgresCommunityStore(kg.graph.store.pool).communities(0)

    outsider = ask(c, OUTSIDER)
    assert outsider["global_fallback"] is False
    assert outsider["strategy_used"]["route"] == "global" and outsider["strategy_used"]["communities"]
    assert outsider["themes"], outsider
    cited = {x["doc_id"] for x in outsider["citations"]}
    assert cited == {"atlas-delays"}
    for theme in outsider["themes"]:
        assert set(theme["doc_ids"]) == {"atlas-delays"}
        for point in theme["points"]:
            quoted = [x for x in outsider["citations"] if x["id"] in point["citations"]]
            assert quoted and all(q["quote"] == point["text"] for q in quoted)
    text = json.dumps(outsider)
    for word in SECRET_WORDS:
        assert word not in text, word
    trace = kg.traces.get(outsider["trace_id"], Caller(admin=True))
    assert trace.body["answer"]["communities"] == outsider["strategy_used"]["communities"]

    # Positive control: the finance reader's themes rest on the restricted documents too.
    reader = ask(c, FINANCE)
    reader_docs = {x["doc_id"] for x in reader["citations"]}
    assert {"quartz-plan", "vault-review"} & reader_docs
    assert any(w in json.dumps(reader["themes"]) for w in ("Quartz", "Vault"))

    # GET /v1/communities/{id}: the caller's summary, from the caller's view only (the reader's is the control).
    restricted_seen, outsider_shown = False, 0
    for community_id in reader["strategy_used"]["communities"]:
        theirs = c.get(f"/v1/communities/{community_id}", headers=FINANCE)
        assert theirs.status_code == 200, theirs.text
        docs = set(theirs.json()["summary"]["doc_ids"])
        restricted_seen |= bool({"quartz-plan", "vault-review"} & docs)
        mine = c.get(f"/v1/communities/{community_id}", headers=OUTSIDER)
        if docs <= {"quartz-plan", "vault-review"}:
            assert mine.status_code == 404, mine.text  # wholly restricted: as if it did not exist
            continue
        assert mine.status_code == 200, mine.text
        outsider_shown += 1
        assert set(mine.json()["summary"]["doc_ids"]) == {"atlas-delays"}
        for word in SECRET_WORDS:
            assert word not in json.dumps(mine.json()), word
    assert restricted_seen and outsider_shown


EVENT = re.compile(r"event: (\w+)\ndata: (.*)\n\n")


def streamed(c: TestClient, headers: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    response = c.post("/v1/ask", json={"question": QUESTION, "options": {"stream": True}}, headers=headers)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    return [(m.group(1), json.loads(m.group(2))) for m in EVENT.finditer(response.text)]


def test_auto_takes_the_routers_global_route_plain_and_streamed_and_never_on_restricted_documents(
    client: tuple[TestClient, Any],
) -> None:
    c, kg = client
    for headers, restricted_expected in ((OUTSIDER, False), (FINANCE, True)):
        plain = ask(c, headers, mode="AUTO")
        strategy = plain["strategy_used"]
        assert strategy["mode"] == "AUTO" and strategy["route"] == "global" and strategy["communities"], strategy
        assert "communities" in strategy["strategies"] and plain["global_fallback"] is False
        assert plain["themes"] and all(t["doc_ids"] for t in plain["themes"])
        theme_docs = {d for t in plain["themes"] for d in t["doc_ids"]}
        cited = {x["doc_id"] for x in plain["citations"]}
        assert theme_docs <= cited
        # The outsider's themes rest on the one document it may read; the finance reader's (the positive
        # control) on the restricted ones too.
        assert bool(theme_docs & {"quartz-plan", "vault-review"}) is restricted_expected, theme_docs
        if not restricted_expected:
            assert cited == {"atlas-delays"}
            for word in SECRET_WORDS:
                assert word not in json.dumps(plain), word

        events = streamed(c, headers)
        names = [name for name, _ in events]
        assert names[:3] == ["route", "citations", "themes"] and names[-1] == "done", names
        assert events[0][1]["global"] is True
        sentences = [data for name, data in events if name == "sentence"]
        done = events[-1][1]
        assert done["streamed"] is True and done["trace_id"]
        # The same answer as the plain ask: its themes, sentences, citations and communities.
        assert events[2][1]["themes"] == done["themes"] == plain["themes"]
        assert [s["text"] for s in sentences] == [s["text"] for s in plain["sentences"]]
        spans = [(x["id"], x["chunk_id"], x["span"]) for x in plain["citations"]]
        assert [(x["id"], x["chunk_id"], x["span"]) for s in sentences for x in s["citations"]] == spans
        assert done["citations"] == plain["citations"]
        assert done["strategy_used"]["communities"] == strategy["communities"]
        trace = kg.traces.get(done["trace_id"], Caller(admin=True))
        assert trace.body["answer"]["communities"] == strategy["communities"]
        if not restricted_expected:
            for word in SECRET_WORDS:
                assert word not in json.dumps(events), word

    # graph=false keeps AUTO on hybrid search (the setting's per-call escape), as before this route existed.
    hybrid = c.post("/v1/ask", json={"question": QUESTION, "graph": False}, headers=FINANCE).json()
    assert "themes" not in hybrid and "communities" not in hybrid["strategy_used"]


def test_with_a_model_summaries_and_themes_are_its_verified_cached_summaries_of_each_callers_view(
    client: tuple[TestClient, Any],
) -> None:
    """Runs last: from here on the FAKE model writes community summaries (the app's chat model)."""
    c, kg = client
    model = kg.llm
    SUMMARISE["on"] = True
    try:
        reader = ask(c, FINANCE)
        points = [p["text"] for t in reader["themes"] for p in t["points"]]
        assert any(p.startswith(PREFIX) for p in points), points
        assert UNFAITHFUL not in json.dumps(reader)  # the model wrote it; verification removed it
        assert any(w in json.dumps(reader["themes"]) for w in ("Quartz", "Vault"))  # positive control
        calls = summary_calls(model)  # the hybrid answer under the themes asks the model too: not counted
        again = ask(c, FINANCE)
        assert again["themes"] == reader["themes"] and summary_calls(model) == calls  # from the cache

        outsider = ask(c, OUTSIDER)
        assert any(p["text"].startswith(PREFIX) for t in outsider["themes"] for p in t["points"])
        assert {x["doc_id"] for x in outsider["citations"]} == {"atlas-delays"}
        for word in SECRET_WORDS:
            assert word not in json.dumps(outsider), word

        for community_id in outsider["strategy_used"]["communities"]:
            mine = ok_json(c.get(f"/v1/communities/{community_id}", headers=OUTSIDER))["summary"]
            assert mine["mode"] == "llm" and all(s["text"].startswith(PREFIX) for s in mine["summary"])
            for word in SECRET_WORDS:
                assert word not in json.dumps(mine), word
        theirs = [
            ok_json(c.get(f"/v1/communities/{cid}", headers=FINANCE))["summary"]
            for cid in reader["strategy_used"]["communities"]
        ]
        assert any(s["mode"] == "llm" and "Quartz" in json.dumps(s["summary"]) for s in theirs)
    finally:
        SUMMARISE["on"] = False


def ok_json(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def summary_calls(model: Any) -> int:
    return sum(SUMMARY_ASK in call.messages[-1].content for call in model.calls)
