"""KEK rotation for both runtimes (ADR 0008): re-wrap every data key under the primary KEK of the ring."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kgrag_adapters.crypto.rotation import rotate
from kgrag_adapters.postgres.embedded import EmbeddedPostgres
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_key_ring


@contextmanager
def _dsn(settings: KgragSettings) -> Iterator[str]:
    if settings.pg_dsn is not None:
        yield settings.pg_dsn.get_secret_value()
        return
    with EmbeddedPostgres(settings.data_dir.expanduser().resolve() / "postgres") as pg:
        yield pg.dsn


def rotate_keys(settings: KgragSettings) -> dict[str, object]:
    """Re-wrap the data keys still under an older KEK; report the keys by KEK before and after.

    When `remaining_under_other_keks` is 0, the older KEKs can be destroyed (docs/operations.md).
    """
    ring = build_key_ring(settings)
    with _dsn(settings) as dsn, PostgresStore.connect(dsn, kek=ring) as store:
        before = store.keys.count_wrapped_keys()
        rewrapped = rotate(store.keys, ring)
        after = store.keys.count_wrapped_keys()
    return {
        "primary_kek": ring.kek_id,
        "keys_before": before,
        "rewrapped": rewrapped,
        "keys_after": after,
        "remaining_under_other_keks": sum(n for kek, n in after.items() if kek != ring.kek_id),
    }
