"""KEK rotation: re-wrap every data key under the ring's primary KEK, without touching any content.

Run it with the new KEK first in the ring and the old one after it; when it returns 0 keys left, the
old KEK can be destroyed (delete its key file / remove it from KGRAG_KEK_PREVIOUS). From then on, every
copy of a data key wrapped under the old KEK (dead tuples of deleted documents, WAL, backups) is
unreadable: that is what completes a compliance deletion in backups (docs/operations.md).
"""

from __future__ import annotations

from kgrag_adapters.crypto.envelope import key_context
from kgrag_adapters.crypto.kek import KeyRing
from kgrag_core.shredding import KeyStore, WrappedKey


def rotate(keys: KeyStore, ring: KeyRing, *, batch: int = 500) -> int:
    """Re-wrap every key not under `ring.kek_id`; return how many were re-wrapped."""
    done = 0
    while True:
        pending = keys.wrapped_keys_not_under(ring.kek_id, batch)
        if not pending:
            return done
        rewrapped = []
        for k in pending:
            context = key_context(k.doc_id, k.key_id)
            data_key = ring.unwrap(k.wrapped, kek_id=k.kek_id, context=context)
            rewrapped.append(WrappedKey(k.doc_id, k.key_id, ring.kek_id, ring.wrap(data_key, context=context)))
        changed = keys.replace_wrapping(rewrapped)
        done += changed
        if changed == 0:  # every pending key vanished meanwhile (deleted): nothing left to do
            return done
