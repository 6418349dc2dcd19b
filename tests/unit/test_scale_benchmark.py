"""The 1M-chunk benchmark's corpus and derived vectors (benchmarks/scale.py): what docs/benchmarks.md says they are."""

from __future__ import annotations

import numpy as np

from kgrag_runtime.benchmarks.scale import CHUNKS_PER_DOC, ScaleConfig, _derived_vectors, _documents


def test_the_corpus_streams_the_requested_chunks_with_a_finance_quarter() -> None:
    docs = list(_documents(ScaleConfig(chunks=95)))
    assert sum(len(texts) for _, _, texts in docs) == 95
    assert [len(texts) for _, _, texts in docs[:-1]] == [CHUNKS_PER_DOC] * 9
    finance = [doc_id for doc_id, acl, _ in docs if acl.principals != docs[0][1].principals]
    assert finance == ["scale-0000003", "scale-0000007"]
    assert len({t for _, _, texts in docs for t in texts}) > 90  # distinct paragraphs, not one repeated


def test_derived_vectors_are_the_pool_then_noised_unit_copies_deterministically() -> None:
    rng = np.random.default_rng(0)
    pool = rng.standard_normal((4, 8)).astype(np.float32)
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    first = _derived_vectors(pool, 0, 10, 0.02, seed=1)
    np.testing.assert_allclose(first[:4], pool, rtol=1e-6, atol=1e-7)  # real vectors where they exist
    assert not np.array_equal(first[4:8], pool)  # copies carry noise
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-5)
    cosines = np.sum(first[4:8] * pool, axis=1)
    assert np.all(cosines > 0.99)  # small noise on 8 dimensions: close to their pool vector
    np.testing.assert_array_equal(_derived_vectors(pool, 0, 10, 0.02, seed=1), first)
