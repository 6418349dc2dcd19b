"""The KeyStore port in a dict: for unit tests and the cipher benchmark (the runtimes use PostgreSQL)."""

from __future__ import annotations

from collections.abc import Sequence

from kgrag_core.shredding import WrappedKey


class MemoryKeyStore:
    def __init__(self) -> None:
        self.rows: dict[str, WrappedKey] = {}

    def wrapped_key(self, doc_id: str) -> WrappedKey | None:
        return self.rows.get(doc_id)

    def add_wrapped_key(self, key: WrappedKey) -> WrappedKey:
        return self.rows.setdefault(key.doc_id, key)

    def destroy_wrapped_key(self, doc_id: str) -> bool:
        return self.rows.pop(doc_id, None) is not None

    def wrapped_keys_not_under(self, kek_id: str, limit: int) -> list[WrappedKey]:
        return sorted((k for k in self.rows.values() if k.kek_id != kek_id), key=lambda k: k.doc_id)[:limit]

    def replace_wrapping(self, keys: Sequence[WrappedKey]) -> int:
        changed = 0
        for k in keys:
            held = self.rows.get(k.doc_id)
            if held is not None and held.key_id == k.key_id:
                self.rows[k.doc_id] = k
                changed += 1
        return changed

    def count_wrapped_keys(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for k in self.rows.values():
            out[k.kek_id] = out.get(k.kek_id, 0) + 1
        return out
