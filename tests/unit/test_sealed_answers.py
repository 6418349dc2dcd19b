"""Cached answers sealed under every cited document's key (kgrag_core.answering.sealed_cache); the Redis
side is in tests/contract/test_cache_redis.py."""

from __future__ import annotations

from kgrag_adapters.crypto.envelope import EnvelopeCipher, PlaintextCipher
from kgrag_adapters.crypto.kek import KeyRing, new_key
from kgrag_adapters.memory.keys import MemoryKeyStore
from kgrag_core.answering.sealed_cache import open_answer, seal_answer


def test_an_answer_citing_a_document_without_a_key_is_not_cached_and_makes_no_key() -> None:
    keys = MemoryKeyStore()
    cipher = EnvelopeCipher(keys, KeyRing([new_key()]))
    cipher.sealer("doc-a")
    assert seal_answer(cipher, ["doc-a", "doc-gone"], b"answer") is None
    assert keys.wrapped_key("doc-gone") is None  # deleted since the search ran: no fresh key for a copy
    # Without keys (KGRAG_CONTENT_ENCRYPTION=false) the layers are the unencrypted form and still open.
    plain = PlaintextCipher()
    sealed = seal_answer(plain, ["doc-a"], b"answer")
    assert sealed is not None and open_answer(plain, sealed) == b"answer"
    assert open_answer(cipher, b"not a sealed answer") is None
