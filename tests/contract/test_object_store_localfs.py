"""LocalObjectStore against the ObjectStore contract, plus what only a directory shows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kgrag_adapters.localfs.object_store import LocalObjectStore
from kgrag_testing.contracts.object_store import KEY_A1, KEY_A2, KEY_B, ObjectStoreContract, fill


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "objects"


@pytest.fixture
def object_store(root: Path) -> LocalObjectStore:
    return LocalObjectStore(root)


class TestLocalObjectStore(ObjectStoreContract):
    pass


def all_paths(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_objects_are_files_under_the_root(object_store: LocalObjectStore, root: Path) -> None:
    object_store.put(KEY_A1, b"body")
    assert (root / "docs" / "aaaa" / "sha256-0001").read_bytes() == b"body"
    assert all_paths(root) == ["docs", "docs/aaaa", "docs/aaaa/sha256-0001"]  # no temp file left behind


def test_objects_survive_a_new_instance(object_store: LocalObjectStore, root: Path) -> None:
    fill(object_store)
    again = LocalObjectStore(root)
    assert again.list_keys("") == object_store.list_keys("")
    assert again.get(KEY_B) == KEY_B.encode()


def test_delete_prefix_removes_emptied_folders(object_store: LocalObjectStore, root: Path) -> None:
    object_store.put(KEY_A1, b"1")
    object_store.put(KEY_A2, b"2")
    object_store.put(KEY_B, b"3")
    object_store.delete_prefix("docs/aaaa/")
    assert all_paths(root) == ["docs", "docs/bbbb", "docs/bbbb/sha256-0004"]
    object_store.delete_prefix("")
    assert all_paths(root) == []
    assert root.is_dir()  # the root itself stays


def test_a_failed_write_keeps_the_old_object(
    object_store: LocalObjectStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    object_store.put(KEY_A1, b"old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        object_store.put(KEY_A1, b"new")
    monkeypatch.undo()
    assert object_store.get(KEY_A1) == b"old"
    assert all_paths(root) == ["docs", "docs/aaaa", "docs/aaaa/sha256-0001"]  # the temp file is gone


def test_in_flight_temp_files_are_not_listed(object_store: LocalObjectStore, root: Path) -> None:
    object_store.put(KEY_A1, b"1")
    (root / "docs" / "aaaa" / ".sha256-0002.x1y2.tmp").write_bytes(b"partial")
    assert object_store.list_keys("") == [KEY_A1]


@pytest.mark.parametrize("key", ["", "docs/", "docs//x", "./docs/x", "docs/.hidden", "a\x00b"])
def test_rejects_keys_that_are_not_plain_relative_paths(object_store: LocalObjectStore, key: str) -> None:
    with pytest.raises(ValueError, match="key"):
        object_store.put(key, b"x")


def test_an_object_cannot_also_be_a_folder(object_store: LocalObjectStore) -> None:
    # S3 allows both "a" and "a/b"; a file system cannot. The clash is an error, never a lost object.
    object_store.put("docs/aaaa", b"file")
    with pytest.raises(OSError):  # noqa: PT011 - FileExistsError or NotADirectoryError by platform
        object_store.put("docs/aaaa/child", b"x")
    assert object_store.get("docs/aaaa") == b"file"
