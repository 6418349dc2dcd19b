"""The local int8 ONNX all-MiniLM-L6-v2 embedder: shape, norm, determinism, batching, semantics."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kgrag_adapters.embeddings.onnx_minilm import MAX_SEQ_LENGTH, OnnxMiniLmEmbedder
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ports import Embedder, TokenCounter

SENTENCES = [
    "How do I reset my password?",
    "Steps to change a forgotten password",
    "The warehouse in Rotterdam closed in May",
    "ok",
    "Quarterly revenue grew 12% driven by subscription renewals in EMEA, partly offset by churn in APAC.",
    "Invoices older than ninety days are escalated to the collections team every Monday morning.",
]
LONG_TEXT = " ".join(["The retrieval pipeline merges keyword and vector hits before reranking."] * 60)


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLmEmbedder:
    # Batch size 2 so the batch-vs-single and ordering tests cross batch boundaries.
    return OnnxMiniLmEmbedder(batch_size=2)


def _dot(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_satisfies_ports(embedder: OnnxMiniLmEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert isinstance(embedder, TokenCounter)
    assert embedder.model_id == "all-MiniLM-L6-v2-onnx-int8"
    assert embedder.dimension == 384


def test_vectors_are_384d_and_unit_norm(embedder: OnnxMiniLmEmbedder) -> None:
    vectors = embedder.embed_documents(SENTENCES)
    assert len(vectors) == len(SENTENCES)
    for v in vectors:
        assert len(v) == 384
        assert all(isinstance(x, float) and math.isfinite(x) for x in v)
        assert math.sqrt(_dot(v, v)) == pytest.approx(1.0, abs=1e-5)


def test_deterministic(embedder: OnnxMiniLmEmbedder) -> None:
    assert embedder.embed_documents(SENTENCES) == embedder.embed_documents(SENTENCES)
    assert embedder.embed_query(SENTENCES[0]) == embedder.embed_query(SENTENCES[0])


def test_batched_equals_one_by_one(embedder: OnnxMiniLmEmbedder) -> None:
    texts = [*SENTENCES, LONG_TEXT]  # the long text forces heavy padding of its batch-mates
    batched = OnnxMiniLmEmbedder(batch_size=32).embed_documents(texts)
    for text, vec in zip(texts, batched, strict=True):
        single = embedder.embed_query(text)
        assert max(abs(a - b) for a, b in zip(vec, single, strict=True)) < 1e-5


def test_order_preserved_despite_length_sorting(embedder: OnnxMiniLmEmbedder) -> None:
    # Longest first, so the internal length sort really permutes the inputs.
    texts = sorted(SENTENCES, key=len, reverse=True)
    vectors = embedder.embed_documents(texts)
    for text, vec in zip(texts, vectors, strict=True):
        assert _dot(vec, embedder.embed_query(text)) == pytest.approx(1.0, abs=1e-6)
    assert embedder.embed_documents([]) == []


def test_paraphrase_closer_than_unrelated(embedder: OnnxMiniLmEmbedder) -> None:
    question, paraphrase, unrelated = embedder.embed_documents(SENTENCES[:3])
    close, far = _dot(question, paraphrase), _dot(question, unrelated)
    assert close > 0.6
    assert far < 0.3
    assert close - far > 0.4


def test_long_text_is_truncated_not_rejected(embedder: OnnxMiniLmEmbedder) -> None:
    assert embedder.count_tokens(LONG_TEXT) > 2 * MAX_SEQ_LENGTH
    vec = embedder.embed_query(LONG_TEXT)
    assert len(vec) == 384
    assert math.sqrt(_dot(vec, vec)) == pytest.approx(1.0, abs=1e-5)
    # Only the first 256 tokens count: extra text past the window changes nothing.
    assert embedder.embed_query(LONG_TEXT + " Completely different tail about volcanoes.") == vec


def test_count_tokens(embedder: OnnxMiniLmEmbedder) -> None:
    assert embedder.count_tokens("") == 0
    assert embedder.count_tokens("hello world") == 2  # no [CLS]/[SEP]
    assert embedder.count_tokens("Hello, World!") == 4  # lower-cased; punctuation splits
    assert embedder.count_tokens("tokenization") == 2  # token ##ization
    assert embedder.count_tokens("word " * 1000) == 1000  # never truncated


def test_checksum_mismatch_is_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"not a model")
    with pytest.raises(KgragError) as info:
        OnnxMiniLmEmbedder(model_path=bogus)
    assert info.value.code is ErrorCode.EMBEDDING_FAILED
    assert "checksum mismatch" in info.value.message
    assert info.value.hint


def test_rejects_a_bare_string(embedder: OnnxMiniLmEmbedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed_documents("not a list")
