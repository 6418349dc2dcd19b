"""The memo of opened entity profiles: a fingerprint match or nothing, bounded, forgets documents."""

from __future__ import annotations

import pytest

from kgrag_adapters.postgres.profile_memo import ProfileMemo, fingerprint
from kgrag_core.graph.model import EntityProfile


def _profile(entity_id: str) -> EntityProfile:
    return EntityProfile(entity_id=entity_id, type="Person", name=entity_id)


def test_a_kept_profile_is_returned_only_for_the_rows_it_was_opened_from() -> None:
    memo: ProfileMemo[EntityProfile] = ProfileMemo()
    rows = ("ent_a", b"sealed", ("doc-1",))
    memo.put("ent_a", _profile("ent_a"), fingerprint(rows), ["doc-1"])
    assert memo.get("ent_a", fingerprint(rows)) == _profile("ent_a")
    assert memo.get("ent_a", fingerprint(("ent_a", b"sealed2", ("doc-1",)))) is None  # a row changed
    assert memo.get("ent_b", fingerprint(rows)) is None
    assert (memo.hits, memo.misses) == (1, 2)


def test_bounded_least_recently_used_first() -> None:
    memo: ProfileMemo[EntityProfile] = ProfileMemo(max_entries=2)
    for entity in ("a", "b"):
        memo.put(entity, _profile(entity), fingerprint(entity), [])
    assert memo.get("a", fingerprint("a")) is not None  # a is now the most recent
    memo.put("c", _profile("c"), fingerprint("c"), [])
    assert len(memo) == 2
    assert memo.get("b", fingerprint("b")) is None and memo.get("a", fingerprint("a")) is not None
    with pytest.raises(ValueError, match="max_entries"):
        ProfileMemo(max_entries=0)


def test_forgetting_documents_and_keeping_only_some_entities() -> None:
    memo: ProfileMemo[EntityProfile] = ProfileMemo()
    memo.put("a", _profile("a"), fingerprint("a"), ["doc-1", "doc-2"])
    memo.put("b", _profile("b"), fingerprint("b"), ["doc-3"])
    memo.put("c", _profile("c"), fingerprint("c"), ["doc-3"])
    assert memo.documents_of("b") == {"doc-3"} and memo.documents_of("z") == frozenset()
    assert memo.forget_documents(["doc-2"]) == 1
    assert memo.get("a", fingerprint("a")) is None and memo.get("b", fingerprint("b")) is not None
    memo.keep_only(["c"])
    assert len(memo) == 1 and memo.get("c", fingerprint("c")) is not None
