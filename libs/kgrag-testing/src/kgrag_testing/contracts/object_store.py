"""Contract suite for `ObjectStore` adapters (local directory now, S3 later).

Subclass `ObjectStoreContract` in a `Test*` class and provide an `object_store` fixture that yields a
fresh, empty store. Keys are `/`-separated; prefixes are plain string prefixes, as in S3.
"""

from __future__ import annotations

import pytest

from kgrag_core.ports import ObjectStore

# Shaped like the keys the indexer writes: docs/<doc hash>/<body hash>.
KEY_A1 = "docs/aaaa/sha256-0001"
KEY_A2 = "docs/aaaa/sha256-0002"
KEY_AB = "docs/aaaabbbb/sha256-0003"
KEY_B = "docs/bbbb/sha256-0004"
OTHER = "exports/2024/report.json"
ALL_KEYS = sorted([KEY_A1, KEY_A2, KEY_AB, KEY_B, OTHER])

# Keys no adapter may accept: they could name something outside the store on a file system.
INVALID_KEYS = ["../escape", "docs/../../escape", "docs/..", "/etc/passwd", "docs\\aaaa\\x", "docs/a\\..\\b"]


def fill(store: ObjectStore) -> None:
    for key in ALL_KEYS:
        store.put(key, key.encode("utf-8"))


class ObjectStoreContract:
    def test_implements_the_port(self, object_store: ObjectStore) -> None:
        assert isinstance(object_store, ObjectStore)

    def test_new_store_is_empty(self, object_store: ObjectStore) -> None:
        assert object_store.get(KEY_A1) is None
        assert object_store.list_keys("") == []
        assert object_store.delete_prefix("docs/") == []

    def test_put_then_get(self, object_store: ObjectStore) -> None:
        payload = bytes(range(256)) * 64  # every byte value, and more than one small buffer
        object_store.put(KEY_A1, payload)
        object_store.put(KEY_A2, b"")
        assert object_store.get(KEY_A1) == payload
        assert object_store.get(KEY_A2) == b""  # an empty object exists, unlike a missing one
        assert object_store.get(KEY_B) is None

    def test_keys_with_colons_and_unicode(self, object_store: ObjectStore) -> None:
        key = "docs/naïve-文書/sha256:0123abcd"
        object_store.put(key, b"body")
        assert object_store.get(key) == b"body"
        assert object_store.list_keys("docs/") == [key]

    def test_put_overwrites(self, object_store: ObjectStore) -> None:
        object_store.put(KEY_A1, b"first version, rather long")
        object_store.put(KEY_A1, b"second")
        assert object_store.get(KEY_A1) == b"second"
        assert object_store.list_keys("") == [KEY_A1]

    def test_a_prefix_of_keys_is_not_an_object(self, object_store: ObjectStore) -> None:
        object_store.put(KEY_A1, b"x")
        assert object_store.get("docs/aaaa") is None
        assert object_store.get("docs") is None

    def test_list_keys_is_sorted_and_filtered_by_string_prefix(self, object_store: ObjectStore) -> None:
        fill(object_store)
        assert object_store.list_keys("") == ALL_KEYS
        assert object_store.list_keys("docs/") == [KEY_A1, KEY_A2, KEY_AB, KEY_B]
        assert object_store.list_keys("docs/aaaa/") == [KEY_A1, KEY_A2]
        # a string prefix, as in S3: "docs/aaaa" also matches "docs/aaaabbbb/..."
        assert object_store.list_keys("docs/aaaa") == [KEY_A1, KEY_A2, KEY_AB]
        assert object_store.list_keys("docs/aaaa/sha256-0002") == [KEY_A2]
        assert object_store.list_keys("docs/cccc/") == []
        assert object_store.list_keys("nothing") == []

    def test_delete_prefix_returns_the_deleted_keys_sorted(self, object_store: ObjectStore) -> None:
        fill(object_store)
        assert object_store.delete_prefix("docs/aaaa/") == [KEY_A1, KEY_A2]
        assert object_store.get(KEY_A1) is None
        assert object_store.get(KEY_A2) is None
        assert object_store.list_keys("") == sorted([KEY_AB, KEY_B, OTHER])  # the rest is untouched
        assert object_store.delete_prefix("docs/aaaa/") == []  # nothing left to delete

    def test_delete_prefix_of_a_single_key(self, object_store: ObjectStore) -> None:
        fill(object_store)
        assert object_store.delete_prefix(KEY_B) == [KEY_B]
        assert object_store.list_keys("docs/bbbb/") == []

    def test_delete_everything_then_write_again(self, object_store: ObjectStore) -> None:
        fill(object_store)
        assert object_store.delete_prefix("") == ALL_KEYS
        assert object_store.list_keys("") == []
        object_store.put(KEY_A1, b"again")  # the folders the delete removed come back as needed
        assert object_store.get(KEY_A1) == b"again"

    @pytest.mark.parametrize("key", INVALID_KEYS)
    def test_rejects_keys_that_could_escape(self, object_store: ObjectStore, key: str) -> None:
        with pytest.raises(ValueError, match="key"):
            object_store.put(key, b"x")
        with pytest.raises(ValueError, match="key"):
            object_store.get(key)

    @pytest.mark.parametrize("prefix", ["../", "docs/../", "/", "/etc", "docs\\"])
    def test_rejects_prefixes_that_could_escape(self, object_store: ObjectStore, prefix: str) -> None:
        with pytest.raises(ValueError, match="prefix"):
            object_store.list_keys(prefix)
        with pytest.raises(ValueError, match="prefix"):
            object_store.delete_prefix(prefix)
