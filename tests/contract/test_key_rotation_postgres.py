"""KEK rotation on PostgreSQL (ADR 0008): data keys re-wrapped, content untouched, the old KEK retired."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgrag_adapters.crypto.kek import file_key_ring, kek_files, new_key, write_key_file
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_runtime.keys import rotate_keys
from kgrag_runtime.settings import KgragSettings
from kgrag_testing.contracts.document_store import ENG, make_document


def test_rotation_rewraps_every_key_and_the_old_kek_can_go(pg_dsn: str, tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    old_ring = file_key_ring(keys)
    doc, chunks = make_document("doc-1", ["the rotation keeps this text readable"])
    with PostgresStore.connect(pg_dsn, kek=old_ring) as store:
        store.commit_document(doc, ENG, chunks)
        assert store.keys.count_wrapped_keys() == {old_ring.kek_id: 1}
    write_key_file(keys, new_key())
    settings = KgragSettings(pg_dsn=pg_dsn, kek_dir=keys, data_dir=tmp_path / "unused")
    report = rotate_keys(settings)
    assert report["rewrapped"] == 1 and report["remaining_under_other_keks"] == 0
    assert report["keys_before"] == {old_ring.kek_id: 1}
    kek_files(keys)[-1].unlink()  # destroy the old KEK (the lowest number)
    new_ring = file_key_ring(keys)
    assert new_ring.kek_ids == [report["primary_kek"]]
    with PostgresStore.connect(pg_dsn, kek=new_ring) as store:
        assert [c.text for c in store.chunks_of("doc-1")] == ["the rotation keeps this text readable"]
        assert store.get_document("doc-1") == doc
    # And the old KEK alone (what a thief of an old key backup holds) no longer opens anything.
    with PostgresStore.connect(pg_dsn, kek=old_ring) as store:
        stale = store.get_document("doc-1")
        assert stale is not None and stale.title == "" and stale.uri == ""
        with pytest.raises(RuntimeError, match="key that is gone"):
            store.chunks_of("doc-1")
