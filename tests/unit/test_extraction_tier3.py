"""Tier 3 against the FAKE scripted chat model: schema, batching, parsing, retries, quarantine, pending."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from kgrag_core.documents import Chunk
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.llm_schema import extraction_json_schema
from kgrag_core.extraction.model import DropReason, Modality, Polarity
from kgrag_core.extraction.ontology import Ontology, parse_ontology
from kgrag_core.extraction.tier3 import (
    PROMPT_VERSION,
    LlmExtractor,
    build_batches,
    build_messages,
    estimate_tokens,
    parse_reply,
    render_chunk,
    request_tokens,
)
from kgrag_core.extraction.validation import validate
from kgrag_testing.scripted_llm import (
    BAD_JSON,
    ScriptedChatModel,
    claim,
    entity,
    extraction_reply,
    llm_timeout,
    rate_limited,
    relation,
)

ONTOLOGY_FILE = Path(__file__).resolve().parents[2] / "schemas" / "ontology" / "ontology.yaml"


@pytest.fixture(scope="module")
def ontology() -> Ontology:
    return parse_ontology(yaml.safe_load(ONTOLOGY_FILE.read_text(encoding="utf-8")))


def make_chunk(chunk_id: str, text: str, seq: int = 0, acl_class_id: str = "acl-public") -> Chunk:
    data = text.encode()
    return Chunk(
        chunk_id=chunk_id,
        doc_id="doc-1",
        seq=seq,
        breadcrumb=("Sites", "LEJ-2"),
        start_byte=0,
        end_byte=len(data),
        text=text,
        token_count=len(text.split()),
        content_hash=hashlib.sha256(data).hexdigest(),
        acl_class_id=acl_class_id,
    )


C1 = make_chunk("c1", "Priya Raman leads the Routing team. LEJ-2 no longer uses Harbor.")
C2 = make_chunk("c2", "LEJ-2 capacity is 24,500 pallets since June 2024. We might get back to 18,000.", 1)
BATCH = [C1, C2]

GOOD_REPLY = extraction_reply(
    entities=[entity("c1", "Priya Raman", "Person", "Priya Raman leads the Routing team")],
    relations=[
        relation("c1", ("Priya Raman", "Person"), "LEADS", ("Routing", "Team"), "Priya Raman leads the Routing team"),
        relation("c1", ("LEJ-2", "Site"), "USES", ("Harbor", "System"), "LEJ-2 no longer uses Harbor"),
    ],
    claims=[
        claim(
            "c2",
            ("LEJ-2", "Site"),
            "capacity_pallets",
            "24,500",
            "LEJ-2 capacity is 24,500 pallets since June 2024",
            valid_from="2024-06-01",
        ),
        claim("c2", ("LEJ-2", "Site"), "capacity_pallets", "18,000", "We might get back to 18,000"),
    ],
)


def no_sleep(seconds: float) -> None:
    raise AssertionError(f"unexpected sleep({seconds})")


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


# --- schema and messages ----------------------------------------------------------------------------------


def test_schema_is_a_valid_strict_draft_2020_12_schema(ontology: Ontology) -> None:
    schema = extraction_json_schema(ontology)
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    assert validator.is_valid(json.loads(GOOD_REPLY))
    relation_schema = schema["properties"]["relations"]["items"]
    assert relation_schema["additionalProperties"] is False
    assert set(relation_schema["required"]) == set(relation_schema["properties"])
    assert set(relation_schema["properties"]["relation"]["enum"]) == set(ontology.relation_types)
    bad = json.loads(GOOD_REPLY)
    bad["relations"][0]["relation"] = "ADMIRES"
    assert not validator.is_valid(bad)
    bad = json.loads(GOOD_REPLY)
    bad["entities"][0]["extra"] = "x"
    assert not validator.is_valid(bad)


def test_messages_are_deterministic_and_carry_chunk_ids(ontology: Ontology) -> None:
    first = build_messages(BATCH, ontology)
    assert first == build_messages(BATCH, ontology)
    assert [m.role for m in first] == ["system", "user"]
    assert "verbatim" in first[0].content and "Conversation mechanics" in first[0].content
    assert '<chunk id="c1" section="Sites > LEJ-2">' in first[1].content
    assert C2.text in first[1].content
    for name in ontology.relation_types:
        assert name in first[0].content
    assert PROMPT_VERSION


def test_batches_keep_order_and_respect_both_limits() -> None:
    chunks = [make_chunk(f"c{i}", "word " * (40 if i == 3 else 10), i) for i in range(7)]
    by_count = build_batches(chunks, max_chunks=3, max_input_tokens=10_000, count_tokens=estimate_tokens)
    assert [[c.chunk_id for c in b] for b in by_count] == [["c0", "c1", "c2"], ["c3", "c4", "c5"], ["c6"]]
    by_tokens = build_batches(chunks, max_chunks=10, max_input_tokens=60, count_tokens=estimate_tokens)
    flat = [c.chunk_id for b in by_tokens for c in b]
    assert flat == [c.chunk_id for c in chunks]
    for batch in by_tokens:
        cost = sum(estimate_tokens(render_chunk(c)) for c in batch)
        assert len(batch) == 1 or cost <= 60
    with pytest.raises(KgragError) as info:
        build_batches(chunks, max_chunks=0, max_input_tokens=1, count_tokens=estimate_tokens)
    assert info.value.code is ErrorCode.CONFIGURATION_INVALID


def test_a_batch_never_mixes_acl_classes() -> None:
    """The model reads a batch as one text: a restricted chunk must not be its context for a public one."""
    classes = ["acl-public", "acl-leadership", "acl-public", "acl-leadership", "acl-public"]
    chunks = [make_chunk(f"c{i}", "word " * 10, i, acl) for i, acl in enumerate(classes)]
    batches = build_batches(chunks, max_chunks=10, max_input_tokens=10_000, count_tokens=estimate_tokens)
    assert [[c.chunk_id for c in b] for b in batches] == [["c0", "c2", "c4"], ["c1", "c3"]]  # packed per class
    assert all(len({c.acl_class_id for c in b}) == 1 for b in batches)


# --- parsing ------------------------------------------------------------------------------------------------


def test_parse_reply_groups_items_by_chunk_and_drops_unknown_chunks() -> None:
    reply = json.loads(GOOD_REPLY)
    reply["entities"].append(entity("c9", "Ghost", "Person", "Ghost"))
    reply["claims"].append({**reply["claims"][0], "valid_from": "sometime"})
    reply["relations"].append({**reply["relations"][0], "modality": "certain"})
    parsed = parse_reply(json.dumps(reply), BATCH)
    entities, relations, _ = parsed.by_chunk["c1"]
    assert [e.name for e in entities] == ["Priya Raman"]
    assert [r.relation for r in relations] == ["LEADS", "USES"]
    assert [c.value for c in parsed.by_chunk["c2"][2]] == ["24,500", "18,000"]
    assert str(parsed.by_chunk["c2"][2][0].valid_from) == "2024-06-01"
    reasons = sorted(d.reason.value for ds in parsed.dropped.values() for d in ds)
    assert reasons == sorted(
        [DropReason.UNKNOWN_CHUNK.value, DropReason.VALUE_TYPE_INVALID.value, DropReason.MISSING_FIELD.value]
    )
    assert any("'c9'" in d.detail for d in parsed.dropped["c1"])


@pytest.mark.parametrize(
    "reply",
    [BAD_JSON, "[]", '{"entities": []}', '{"entities": [1], "relations": [], "claims": []}', "Sure! Here you go."],
)
def test_parse_reply_rejects_wrong_shapes(reply: str) -> None:
    with pytest.raises(KgragError) as info:
        parse_reply(reply, BATCH)
    assert info.value.code is ErrorCode.EXTRACTION_REPLY_INVALID


def test_parse_reply_accepts_a_fenced_block() -> None:
    parsed = parse_reply(f"```json\n{GOOD_REPLY}\n```", BATCH)
    assert len(parsed.by_chunk["c1"][1]) == 2


# --- the extractor ------------------------------------------------------------------------------------------------


def test_extract_then_validate_turns_negation_and_hedges_into_qualifiers(ontology: Ontology) -> None:
    model = ScriptedChatModel([GOOD_REPLY])
    result = LlmExtractor(model, ontology, sleep=no_sleep).extract(BATCH)
    assert result.quarantined is None and result.pending_chunk_ids == ()
    assert model.calls[0].json_schema == extraction_json_schema(ontology)
    assert result.calls == 1
    expected_in = request_tokens(build_messages(BATCH, ontology), extraction_json_schema(ontology), estimate_tokens)
    assert result.input_tokens == expected_in
    assert result.output_tokens == estimate_tokens(GOOD_REPLY)
    entities, relations, claims = result.items["c1"]
    checked = validate("c1", C1.text, entities, relations, claims, ontology)
    assert [(r.relation, r.polarity) for r in checked.relations] == [
        ("LEADS", Polarity.POSITIVE),
        ("USES", Polarity.NEGATIVE),
    ]
    entities, relations, claims = result.items["c2"]
    checked = validate("c2", C2.text, entities, relations, claims, ontology)
    assert [(c.value, c.modality) for c in checked.claims] == [
        ("24500", Modality.FACT),
        ("18000", Modality.HYPOTHETICAL),
    ]


def test_bad_quotes_and_disallowed_triples_are_dropped_by_validation(ontology: Ontology) -> None:
    reply = extraction_reply(
        relations=[
            relation("c1", ("Priya Raman", "Person"), "LEADS", ("Routing", "Team"), "Priya heads Routing"),
            relation("c1", ("Routing", "Team"), "LEADS", ("Priya Raman", "Person"), "Priya Raman leads the Routing"),
        ]
    )
    result = LlmExtractor(ScriptedChatModel([reply]), ontology, sleep=no_sleep).extract([C1])
    checked = validate("c1", C1.text, *result.items["c1"], ontology)
    assert checked.relations == ()
    assert [d.reason for d in checked.dropped] == [DropReason.QUOTE_NOT_FOUND, DropReason.TRIPLE_NOT_ALLOWED]


def test_bad_json_is_asked_once_more_then_accepted(ontology: Ontology) -> None:
    model = ScriptedChatModel([BAD_JSON, GOOD_REPLY])
    result = LlmExtractor(model, ontology, sleep=no_sleep).extract(BATCH)
    assert result.quarantined is None
    assert result.calls == 2
    retry = model.calls[1].messages
    assert retry[:2] == model.calls[0].messages
    assert retry[2].role == "assistant" and retry[2].content == BAD_JSON
    assert "not valid JSON" in retry[3].content
    assert len(result.items["c1"][1]) == 2


def test_bad_json_twice_is_quarantined_never_returned(ontology: Ontology) -> None:
    model = ScriptedChatModel([BAD_JSON, '["still", "wrong"]'])
    extractor = LlmExtractor(model, ontology, sleep=no_sleep)
    result = extractor.extract(BATCH)
    model.assert_exhausted()
    assert result.quarantined is not None
    assert result.quarantined.chunk_ids == ("c1", "c2")
    assert result.quarantined.reply == '["still", "wrong"]'
    assert "not valid JSON" in result.quarantined.reason and "not an object" in result.quarantined.reason
    assert result.quarantined.extractor_version == extractor.version == f"llm:scripted-fake:{PROMPT_VERSION}"
    assert result.items == {} and result.pending_chunk_ids == ()
    assert result.calls == 2


def test_rate_limit_waits_for_retry_after_via_the_injected_sleep(ontology: Ontology) -> None:
    sleeps = Sleeps()
    model = ScriptedChatModel([rate_limited(7.5), rate_limited(2.0), GOOD_REPLY])
    result = LlmExtractor(model, ontology, sleep=sleeps).extract(BATCH)
    assert sleeps == [7.5, 2.0]
    assert result.usage.rate_limited == 2 and result.calls == 1
    assert set(result.items) == {"c1", "c2"}


def test_rate_limit_beyond_the_bound_leaves_the_batch_pending(ontology: Ontology) -> None:
    sleeps = Sleeps()
    model = ScriptedChatModel([rate_limited(1.0)] * 3)
    result = LlmExtractor(model, ontology, max_retries_rate_limit=2, sleep=sleeps).extract(BATCH)
    model.assert_exhausted()
    assert sleeps == [1.0, 1.0]
    assert result.pending_chunk_ids == ("c1", "c2") and result.quarantined is None
    assert result.pending_reason is not None and "rate limited" in result.pending_reason
    too_long = LlmExtractor(ScriptedChatModel([rate_limited(3600)]), ontology, sleep=no_sleep, max_wait_s=60)
    assert too_long.extract(BATCH).pending_chunk_ids == ("c1", "c2")


def test_timeout_leaves_the_batch_pending_not_quarantined(ontology: Ontology) -> None:
    result = LlmExtractor(ScriptedChatModel([llm_timeout()]), ontology, sleep=no_sleep).extract(BATCH)
    assert result.pending_chunk_ids == ("c1", "c2")
    assert result.quarantined is None and result.items == {}
    assert result.calls == 0


def test_other_errors_are_not_swallowed(ontology: Ontology) -> None:
    error = KgragError(ErrorCode.CONFIGURATION_INVALID, "no model configured")
    with pytest.raises(KgragError) as info:
        LlmExtractor(ScriptedChatModel([error]), ontology, sleep=no_sleep).extract(BATCH)
    assert info.value is error


def test_a_new_ontology_changes_the_schema_sent(ontology: Ontology) -> None:
    model = ScriptedChatModel([GOOD_REPLY, GOOD_REPLY])
    extractor = LlmExtractor(model, ontology, sleep=no_sleep)
    extractor.extract(BATCH)
    smaller = parse_ontology(
        {
            "version": "2",
            "entity_types": {"Person": {}, "Team": {}},
            "relation_types": {"MEMBER_OF": {"subject": "Person", "object": "Team"}},
        }
    )
    extractor.ontology = smaller
    extractor.extract(BATCH)
    sent = model.calls[1].json_schema
    assert sent is not None and sent != model.calls[0].json_schema
    assert extractor.request_tokens(BATCH) == request_tokens(
        build_messages(BATCH, smaller), extraction_json_schema(smaller), estimate_tokens
    )
