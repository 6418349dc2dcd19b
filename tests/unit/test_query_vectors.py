"""One embedding per question within a search scope, and none shared across scopes."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from kgrag_core.ports import Embedder
from kgrag_core.retrieval.query_vectors import SearchScopedEmbedder, one_embedding_per_search


class _Hashed:
    """A deterministic stand-in for the embedding port that counts its calls (the scope's effect is the count)."""

    model_id = "hashed-4"
    dimension = 4

    def __init__(self) -> None:
        self.calls: list[str] = []

    def embed_query(self, text: str) -> tuple[float, ...]:
        self.calls.append(text)
        digest = hashlib.sha256(text.encode()).digest()
        return tuple(float(b) for b in digest[:4])

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        return [self.embed_query(t) for t in texts]

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_a_question_is_embedded_once_per_search_and_again_in_the_next() -> None:
    inner = _Hashed()
    scoped = SearchScopedEmbedder(inner)
    assert isinstance(scoped, Embedder)
    with one_embedding_per_search():
        first = scoped.embed_query("who owns quillon")
        with one_embedding_per_search():  # a nested scope (a searcher calling another) joins the outer one
            assert scoped.embed_query("who owns quillon") == first
        other = scoped.embed_query("who leads zephyr")
    assert inner.calls == ["who owns quillon", "who leads zephyr"]
    assert other != first
    with one_embedding_per_search():
        assert scoped.embed_query("who owns quillon") == first
    assert inner.calls.count("who owns quillon") == 2  # the next search pays its own embedding


def test_outside_a_search_every_call_reaches_the_model_and_documents_are_never_kept() -> None:
    inner = _Hashed()
    scoped = SearchScopedEmbedder(inner)
    scoped.embed_query("atlas")
    scoped.embed_query("atlas")
    with one_embedding_per_search():
        scoped.embed_documents(["atlas", "atlas"])
    assert inner.calls == ["atlas"] * 4
    assert scoped.count_tokens("two words") == 2  # type: ignore[attr-defined]  # the model's extras stay visible
    assert (scoped.model_id, scoped.dimension) == ("hashed-4", 4)


def test_concurrent_searches_do_not_share_vectors() -> None:
    inner = _Hashed()
    scoped = SearchScopedEmbedder(inner)

    def search(_: int) -> tuple[float, ...]:
        with one_embedding_per_search():
            return scoped.embed_query("same question")

    with ThreadPoolExecutor(2) as pool:
        vectors = list(pool.map(search, range(4)))
    assert len(set(vectors)) == 1 and inner.calls == ["same question"] * 4
