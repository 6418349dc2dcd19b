"""One embedding per question within a search: the router and the dense route ask for the same vector.

A text-graph search routes the question (the learned router embeds it) and then runs hybrid's dense route
(which embeds it again): two model calls, the most expensive step of a search on CPU, for one vector. Inside
`one_embedding_per_search()`, an embedder wrapped in `SearchScopedEmbedder` embeds each query text once and
hands the same vector to every later ask in that search. Nothing outlives the scope, so no search ever sees
another's vector (a benchmark's configurations, or two callers, each pay their own embedding).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from kgrag_core.ports import Embedder

_SCOPE: ContextVar[dict[str, tuple[float, ...]] | None] = ContextVar("kgrag_query_vectors", default=None)


@contextmanager
def one_embedding_per_search() -> Iterator[None]:
    """Query vectors asked for inside the block are computed once per text (a nested scope joins the outer)."""
    if _SCOPE.get() is not None:
        yield
        return
    token = _SCOPE.set({})
    try:
        yield
    finally:
        _SCOPE.reset(token)


class SearchScopedEmbedder:
    """`inner`, with `embed_query` remembered for the length of the current search scope only."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> tuple[float, ...]:
        scope = _SCOPE.get()
        if scope is None:
            return self.inner.embed_query(text)
        vector = scope.get(text)
        if vector is None:
            vector = scope[text] = self.inner.embed_query(text)
        return vector

    def __getattr__(self, name: str) -> object:
        # Optional capabilities of the wrapped model (a tokenizer's `count_tokens`, `close`) stay visible, so a
        # runtime check such as `isinstance(embedder, TokenCounter)` answers as it would for `inner`.
        if name == "inner":  # not set yet (during unpickling or copying): never recurse
            raise AttributeError(name)
        return getattr(self.inner, name)
