"""The search's embedder, keeping the vectors of the last few queries: one ask embeds its question once,
although hybrid search, the learned router and the GLOBAL route's relevance each ask for it (the embedding
model is deterministic, so a kept vector is the one the model would give again)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from kgrag_core.ports import Embedder


class QueryVectorCache:
    """An Embedder: `embed_query` from a small LRU, everything else (documents, token counting, the model's
    own attributes) passed to `inner`. `capacity` 0 turns the cache off (a benchmark's baseline)."""

    def __init__(self, inner: Embedder, capacity: int = 64) -> None:
        self.inner = inner
        self.capacity = capacity
        self.hits = 0
        self._vectors: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._lock = threading.Lock()  # served asks share it

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> tuple[float, ...]:
        with self._lock:
            kept = self._vectors.get(text)
            if kept is not None:
                self._vectors.move_to_end(text)
                self.hits += 1
                return kept
        vector = self.inner.embed_query(text)
        if self.capacity > 0:
            with self._lock:
                self._vectors[text] = vector
                while len(self._vectors) > self.capacity:
                    self._vectors.popitem(last=False)
        return vector

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()

    def __getattr__(self, name: str) -> Any:
        # Only reached for what this class lacks (count_tokens, batch_size, ...): the inner embedder's, so
        # a runtime check such as `isinstance(embedder, TokenCounter)` answers as it would for `inner`.
        if name == "inner":  # not set yet (during unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.inner, name)
