"""`S3ObjectStore` against the ObjectStore contract on a real S3-compatible server, plus S3-only behaviour.

The server is the SeaweedFS S3 gateway of scripts/dev-services/services.sh: $KGRAG_TEST_S3_ENDPOINT and
$KGRAG_TEST_S3_ACCESS_KEY/_SECRET_KEY (set by `source .cache/dev-services/env.sh`), else that script's
defaults. The keys reach the adapter through the standard AWS variables, as in production. An
unreachable server FAILS these tests (it never skips them).

This module creates one bucket (through `S3ObjectStore.connect`, which is under test) and gives every
contract test a fresh prefix of it; the objects are removed after each test and the bucket after the
module. Server behaviour is never faked: where a test needs a failure the server will not produce (a
per-key DeleteObjects error), a botocore event hook edits the real response.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import boto3  # type: ignore[import-untyped]  # no stubs for boto3/botocore in the lock
import pytest
from botocore.config import Config  # type: ignore[import-untyped]
from botocore.exceptions import (  # type: ignore[import-untyped]
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
)

from kgrag_adapters.s3 import object_store as s3_module
from kgrag_adapters.s3.object_store import S3ObjectStore
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_testing.contracts.object_store import (
    ALL_KEYS,
    KEY_A1,
    KEY_A2,
    KEY_AB,
    KEY_B,
    OTHER,
    ObjectStoreContract,
    fill,
)

pytestmark = pytest.mark.integration

ENDPOINT = os.environ.get("KGRAG_TEST_S3_ENDPOINT", "http://127.0.0.1:8333")
ACCESS_KEY = os.environ.get("KGRAG_TEST_S3_ACCESS_KEY", "kgragdev")
SECRET_KEY = os.environ.get("KGRAG_TEST_S3_SECRET_KEY", "kgragdevsecret")
REGION = os.environ.get("KGRAG_TEST_S3_REGION", "us-east-1")
START_HINT = "bash scripts/dev-services/services.sh start s3  (then: source .cache/dev-services/env.sh)"


def new_bucket_name() -> str:
    return f"kgrag-test-{uuid.uuid4().hex[:12]}"


def raw_keys(client: Any, bucket: str, prefix: str = "") -> list[str]:
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys.extend(entry["Key"] for entry in page.get("Contents", []))
    return sorted(keys)


def raw_empty(client: Any, bucket: str, prefix: str = "") -> None:
    """Delete objects without the adapter, so cleanup does not depend on the code under test."""
    for key in raw_keys(client, bucket, prefix):
        client.delete_object(Bucket=bucket, Key=key)


def drop_bucket(client: Any, bucket: str) -> None:
    raw_empty(client, bucket)
    client.delete_bucket(Bucket=bucket)


@pytest.fixture(scope="module")
def aws_env() -> Iterator[None]:
    """The dev server's keys as the standard AWS variables, read by `connect` through boto3's chain."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        mp.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        mp.delenv("AWS_SESSION_TOKEN", raising=False)
        mp.delenv("AWS_PROFILE", raising=False)
        mp.setenv("AWS_CONFIG_FILE", os.devnull)  # no developer's ~/.aws settings leak into the tests
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
        yield


@pytest.fixture(scope="module")
def module_store(aws_env: None) -> Iterator[S3ObjectStore]:
    """The module's bucket, created by `connect`; the store's client is shared by the tests."""
    bucket = new_bucket_name()
    problem = None
    try:
        store = S3ObjectStore.connect(ENDPOINT, bucket, region=REGION)
    except BotoCoreError as exc:  # connection refused, timeouts: no server there
        problem = exc
    if problem is not None:  # failed outside the `except`, so the report is the hint, not a chained traceback
        pytest.fail(f"S3 at {ENDPOINT} is not reachable ({problem}). Start it: {START_HINT}", pytrace=False)
    yield store
    drop_bucket(store._client, bucket)
    store.close()


@pytest.fixture(scope="module")
def client(module_store: S3ObjectStore) -> Any:
    return module_store._client


@pytest.fixture(scope="module")
def bucket(module_store: S3ObjectStore) -> str:
    return module_store.bucket


@pytest.fixture
def store_prefix(client: Any, bucket: str) -> Iterator[str]:
    # (not `prefix`: the contract parametrizes its tests with an argument of that name)
    name = f"t-{uuid.uuid4().hex[:12]}/"
    yield name
    raw_empty(client, bucket, name)


@pytest.fixture
def object_store(client: Any, bucket: str, store_prefix: str) -> S3ObjectStore:
    return S3ObjectStore(client, bucket, store_prefix)


class TestS3ObjectStore(ObjectStoreContract):
    pass


def test_objects_live_under_the_store_prefix(object_store: S3ObjectStore, client: Any, bucket: str) -> None:
    object_store.put(KEY_A1, b"body")
    assert raw_keys(client, bucket, object_store.prefix) == [object_store.prefix + KEY_A1]
    got = client.get_object(Bucket=bucket, Key=object_store.prefix + KEY_A1)
    assert got["Body"].read() == b"body"
    got["Body"].close()


def test_stores_whose_prefixes_share_a_start_are_isolated(client: Any, bucket: str) -> None:
    base = f"t-{uuid.uuid4().hex[:12]}"
    one, ten = S3ObjectStore(client, bucket, f"{base}1/"), S3ObjectStore(client, bucket, f"{base}10/")
    try:
        one.put(KEY_A1, b"one")
        ten.put(KEY_A1, b"ten")
        assert (one.get(KEY_A1), ten.get(KEY_A1)) == (b"one", b"ten")
        assert one.list_keys("") == ten.list_keys("") == [KEY_A1]
        assert one.delete_prefix("") == [KEY_A1]
        assert ten.get(KEY_A1) == b"ten"
    finally:
        raw_empty(client, bucket, base)


@pytest.mark.parametrize("bad_prefix", ["t1", "/t1/", "../", "t1/../", "t1//", "t1/.hidden/", "t1\\x/"])
def test_rejects_a_store_prefix_that_is_not_a_folder_of_valid_keys(client: Any, bucket: str, bad_prefix: str) -> None:
    with pytest.raises(ValueError, match=r"prefix|key"):
        S3ObjectStore(client, bucket, bad_prefix)


def test_names_that_are_not_valid_keys_are_never_listed(object_store: S3ObjectStore, client: Any, bucket: str) -> None:
    # Written by other tools: a console's folder marker, a hidden name. `get` would reject both.
    for foreign in ("docs/", "docs/aaaa/.partial"):
        client.put_object(Bucket=bucket, Key=object_store.prefix + foreign, Body=b"")
    object_store.put(KEY_A1, b"x")
    assert object_store.list_keys("") == [KEY_A1]
    assert object_store.delete_prefix("docs/") == [KEY_A1]
    assert object_store.prefix + "docs/aaaa/.partial" in raw_keys(client, bucket, object_store.prefix)


def test_listing_and_deleting_page_through_the_server(
    object_store: S3ObjectStore, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3_module, "LIST_PAGE_SIZE", 2)
    monkeypatch.setattr(s3_module, "DELETE_BATCH", 2)
    list_calls: list[int] = []
    delete_batches: list[int] = []

    def on_list(params: dict[str, Any], **_: Any) -> None:
        list_calls.append(1)

    def on_delete(params: dict[str, Any], **_: Any) -> None:
        delete_batches.append(params["body"].count(b"<Key>"))

    client.meta.events.register("before-call.s3.ListObjectsV2", on_list)
    client.meta.events.register("before-call.s3.DeleteObjects", on_delete)
    try:
        fill(object_store)
        assert object_store.list_keys("") == ALL_KEYS
        assert len(list_calls) == 3  # 5 keys, 2 a page
        assert object_store.delete_prefix("") == ALL_KEYS
        assert delete_batches == [2, 2, 1]
        assert object_store.list_keys("") == []
    finally:
        client.meta.events.unregister("before-call.s3.ListObjectsV2", on_list)
        client.meta.events.unregister("before-call.s3.DeleteObjects", on_delete)


def test_a_key_the_server_did_not_delete_raises(object_store: S3ObjectStore, client: Any) -> None:
    fill(object_store)

    def report_one_failure(parsed: dict[str, Any], **_: Any) -> None:
        # What S3 answers when, say, object lock or a bucket policy protects one key of the batch.
        parsed["Errors"] = [{"Key": object_store.prefix + KEY_A2, "Code": "AccessDenied", "Message": "Access Denied"}]

    client.meta.events.register("after-call.s3.DeleteObjects", report_one_failure)
    try:
        with pytest.raises(KgragError) as caught:
            object_store.delete_prefix("docs/aaaa/")
    finally:
        client.meta.events.unregister("after-call.s3.DeleteObjects", report_one_failure)
    assert caught.value.code is ErrorCode.INDEX_WRITE_FAILED
    assert KEY_A2 in caught.value.message
    assert "AccessDenied" in caught.value.message
    assert object_store.list_keys("") == sorted([KEY_AB, KEY_B, OTHER])  # the retry finds nothing left
    assert object_store.delete_prefix("docs/aaaa/") == []


def test_writes_carry_a_content_md5_that_the_server_checks(object_store: S3ObjectStore, client: Any) -> None:
    sent: list[str] = []

    def capture(params: dict[str, Any], **_: Any) -> None:
        sent.append(params["headers"]["Content-MD5"])

    def corrupt(params: dict[str, Any], **_: Any) -> None:
        params["headers"]["Content-MD5"] = "AAAAAAAAAAAAAAAAAAAAAA=="  # the MD5 of other bytes

    client.meta.events.register("before-call.s3.PutObject", capture)
    try:
        object_store.put(KEY_A1, b"hello")
    finally:
        client.meta.events.unregister("before-call.s3.PutObject", capture)
    assert sent == ["XUFAKrxLKna5cZ2REBfFkg=="]  # base64 of md5(b"hello")

    client.meta.events.register("before-call.s3.PutObject", corrupt)
    try:
        with pytest.raises(ClientError) as caught:
            object_store.put(KEY_A2, b"hello")
    finally:
        client.meta.events.unregister("before-call.s3.PutObject", corrupt)
    assert caught.value.response["Error"]["Code"] == "BadDigest"
    assert object_store.get(KEY_A2) is None  # a corrupted upload is refused, never stored


def test_only_a_missing_key_reads_as_none(client: Any) -> None:
    missing_bucket = S3ObjectStore(client, new_bucket_name())
    with pytest.raises(ClientError) as caught:
        missing_bucket.get(KEY_A1)
    assert caught.value.response["Error"]["Code"] == "NoSuchBucket"
    with pytest.raises(ClientError):
        missing_bucket.list_keys("")


def test_wrong_credentials_raise_rather_than_read_as_missing(bucket: str) -> None:
    wrong = boto3.session.Session(aws_access_key_id=ACCESS_KEY, aws_secret_access_key="not-the-secret").client(
        "s3", endpoint_url=ENDPOINT, region_name=REGION, config=Config(s3={"addressing_style": "path"})
    )
    try:
        with pytest.raises(ClientError) as caught:
            S3ObjectStore(wrong, bucket).get(KEY_A1)
        assert caught.value.response["Error"]["Code"] != "NoSuchKey"
    finally:
        wrong.close()


def test_connect_creates_a_missing_bucket_and_reuses_an_existing_one(aws_env: None) -> None:
    name = new_bucket_name()
    with S3ObjectStore.connect(ENDPOINT, name, region=REGION) as store:  # the whole bucket: no prefix
        try:
            fill(store)
            assert store.list_keys("") == ALL_KEYS
            with S3ObjectStore.connect(ENDPOINT, name, region=REGION) as again:  # exists: nothing to create
                assert again.get(KEY_B) == KEY_B.encode()
            assert store.delete_prefix("") == ALL_KEYS
            assert raw_keys(store._client, name) == []
        finally:
            drop_bucket(store._client, name)


def test_a_bucket_created_concurrently_is_tolerated(client: Any, bucket: str) -> None:
    # Two processes start at once: both see no bucket, one creates it, the other gets BucketAlreadyOwnedByYou
    # from the (real) server, which must not fail its start.
    class LateToCreate:
        def __getattr__(self, name: str) -> Any:
            return getattr(client, name)

        def head_bucket(self, **kwargs: Any) -> None:
            raise ClientError({"Error": {"Code": "404", "Message": "Not Found"}}, "HeadBucket")

    S3ObjectStore(LateToCreate(), bucket)._ensure_bucket(REGION)


def test_connect_to_an_unreachable_endpoint_raises(aws_env: None) -> None:
    with pytest.raises(EndpointConnectionError):
        S3ObjectStore.connect("http://127.0.0.1:1", new_bucket_name())


def test_closing_leaves_a_client_passed_in_open(client: Any, bucket: str) -> None:
    S3ObjectStore(client, bucket).close()
    client.head_bucket(Bucket=bucket)  # still usable
