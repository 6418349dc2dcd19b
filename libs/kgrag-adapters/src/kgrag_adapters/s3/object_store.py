"""`ObjectStore` on S3 or an S3-compatible server (SeaweedFS, MinIO, Ceph RGW) through boto3.

The distributed twin of `kgrag_adapters.localfs.object_store.LocalObjectStore`, with the same semantics:
the same key and prefix validation (imported from it, so both stores accept exactly the same keys),
prefixes are plain string prefixes, listings are sorted, `get` of a missing key is None.

The store may live under a `prefix` of the bucket (`"kgrag/"`): object `a/b` is then `kgrag/a/b`, and
the store never sees, lists or deletes anything outside it. Listings skip names that are not valid keys
(e.g. the `folder/` markers some consoles create), as the local store skips its hidden files, so every
listed key can be passed back to `get`.

Writes send a Content-MD5, which the server verifies (a corrupted upload is refused with BadDigest, not
stored). botocore's own default checksums are limited to the operations that require one
(`request_checksum_calculation="when_required"`), as several S3-compatible servers reject the newer
flexible-checksum headers.

boto3 has no type stubs here, so the client is `Any` inside this module; every value that leaves it is
converted to a plain, typed one at this boundary.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from typing import Any, Self

import boto3  # type: ignore[import-untyped]  # boto3 ships no type hints and no stubs are locked
from botocore.config import Config  # type: ignore[import-untyped]  # ditto (botocore)
from botocore.exceptions import ClientError  # type: ignore[import-untyped]  # ditto

from kgrag_adapters.lifecycle import Closeable
from kgrag_adapters.localfs.object_store import (
    _check_key,  # the local store's validators, so both stores accept exactly the same keys
    _check_prefix,
)
from kgrag_core.errors import ErrorCode, KgragError

__all__ = ["S3ObjectStore"]

# S3's limits: at most 1,000 keys per ListObjectsV2 page and per DeleteObjects request.
LIST_PAGE_SIZE = 1000
DELETE_BATCH = 1000

_NO_SUCH_KEY = "NoSuchKey"
_BUCKET_OWNED = "BucketAlreadyOwnedByYou"


class S3ObjectStore(Closeable):
    def __init__(self, client: Any, bucket: str, prefix: str = "") -> None:
        """Use `client` (a boto3 S3 client) on an existing `bucket`; see `connect` to create both.

        `prefix` is "" (the whole bucket) or a valid key prefix ending in '/', so that stores under
        "t1/" and "t10/" cannot see each other's objects.
        """
        if not bucket:
            raise ValueError("bucket must not be empty")
        if prefix:
            if not prefix.endswith("/"):
                raise ValueError(f"invalid store prefix {prefix!r}: must end with '/'")
            _check_key(prefix[:-1])
        self._client = client
        self._owns_client = False
        self.bucket = bucket
        self.prefix = prefix

    @classmethod
    def connect(cls, endpoint_url: str | None, bucket: str, *, region: str = "us-east-1", prefix: str = "") -> Self:
        """Open a client and create the bucket if it is missing.

        `endpoint_url` None means AWS S3 itself (virtual-hosted addressing); any other endpoint is taken
        to be an S3-compatible server and addressed path-style (`http://host:port/bucket/key`), since
        `bucket.host` rarely resolves there. Credentials come from the standard AWS chain (environment,
        shared config/credentials files, instance or container role). The client is owned by the store:
        `close()` closes it.
        """
        config = Config(
            region_name=region,
            s3={"addressing_style": "auto" if endpoint_url is None else "path"},
            request_checksum_calculation="when_required",
            response_checksum_validation="when_supported",
            retries={"mode": "standard", "max_attempts": 3},
            connect_timeout=5,
            read_timeout=60,
        )
        client = boto3.session.Session().client("s3", endpoint_url=endpoint_url, config=config)
        try:
            store = cls(client, bucket, prefix)
            store._ensure_bucket(region)
        except BaseException:
            client.close()
            raise
        store._owns_client = True
        return store

    def put(self, key: str, data: bytes) -> None:
        """Write one object; S3 makes it visible atomically (readers get the old or the new bytes)."""
        name = self._name(key)
        digest = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode("ascii")
        self._client.put_object(Bucket=self.bucket, Key=name, Body=data, ContentMD5=digest)

    def get(self, key: str) -> bytes | None:
        """The object's bytes; None only when S3 says NoSuchKey (any other error propagates)."""
        name = self._name(key)
        try:
            response = self._client.get_object(Bucket=self.bucket, Key=name)
        except ClientError as exc:
            if _error_code(exc) == _NO_SUCH_KEY:
                return None
            raise  # NoSuchBucket, AccessDenied, throttling...: a broken setup is not a missing object
        body = response["Body"]
        try:
            data = body.read()
        finally:
            body.close()
        if not isinstance(data, bytes):
            raise TypeError(f"expected bytes from S3, got {type(data).__name__}")
        return data

    def delete_prefix(self, prefix: str) -> list[str]:
        """Delete every object under the prefix; return the deleted keys, sorted.

        Lists first, then deletes in batches of `DELETE_BATCH`. If S3 reports any key it could not delete,
        raises KgragError(INDEX_WRITE_FAILED) naming them; the objects of earlier batches are gone, and
        calling again (the call is idempotent) retries the rest.
        """
        keys = self.list_keys(prefix)
        for start in range(0, len(keys), DELETE_BATCH):
            batch = keys[start : start + DELETE_BATCH]
            response = self._client.delete_objects(
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": self.prefix + key} for key in batch], "Quiet": True},
            )
            errors = response.get("Errors") or []
            if errors:
                failed = [f"{e.get('Key')} ({e.get('Code')}: {e.get('Message')})" for e in errors]
                raise KgragError(
                    ErrorCode.INDEX_WRITE_FAILED,
                    f"S3 did not delete {len(errors)} of {len(batch)} objects in bucket {self.bucket!r}: "
                    + "; ".join(failed[:5])
                    + (" ..." if len(failed) > 5 else ""),
                    hint="check the credentials' s3:DeleteObject permission and any object lock, then retry",
                )
        return keys

    def list_keys(self, prefix: str) -> list[str]:
        """Keys starting with `prefix` (a string prefix, not a folder), sorted."""
        _check_prefix(prefix)
        return sorted(self._iter_keys(prefix))

    def close(self) -> None:
        """Close the client if `connect` opened it; a client passed in stays its owner's to close."""
        if self._owns_client:
            self._client.close()

    def _iter_keys(self, prefix: str) -> Iterator[str]:
        paginator = self._client.get_paginator("list_objects_v2")
        pages = paginator.paginate(
            Bucket=self.bucket, Prefix=self.prefix + prefix, PaginationConfig={"PageSize": LIST_PAGE_SIZE}
        )
        for page in pages:
            for entry in page.get("Contents", []):
                name = entry["Key"]
                if not isinstance(name, str) or not name.startswith(self.prefix):
                    continue
                key = name[len(self.prefix) :]
                if _is_valid_key(key):
                    yield key

    def _ensure_bucket(self, region: str) -> None:
        try:
            self._client.head_bucket(Bucket=self.bucket)
            return
        except ClientError as exc:
            # HEAD has no body: a missing bucket is only the status (botocore reports the code "404").
            if _error_code(exc) not in {"404", "NoSuchBucket", "NotFound"}:
                raise  # 403: the bucket exists but is not ours to use, or the keys are wrong
        params: dict[str, Any] = {"Bucket": self.bucket}
        if region != "us-east-1":  # us-east-1 is the default location and must not be named
            params["CreateBucketConfiguration"] = {"LocationConstraint": region}
        try:
            self._client.create_bucket(**params)
        except ClientError as exc:
            if _error_code(exc) != _BUCKET_OWNED:  # another process created it in between: fine
                raise

    def _name(self, key: str) -> str:
        _check_key(key)
        return self.prefix + key


def _error_code(exc: Any) -> str:
    code = exc.response.get("Error", {}).get("Code", "")
    return str(code)


def _is_valid_key(key: str) -> bool:
    try:
        _check_key(key)
    except ValueError:
        return False
    return True
