"""S3 checks for services.sh, run with the dev-services tools venv (which has boto3).

    s3check.py health   ListBuckets with SigV4: proves the endpoint is up and checks the keys
    s3check.py smoke    create a bucket, put an object, get it back, delete both; also checks a bad key fails

Reads KGRAG_TEST_S3_ENDPOINT, KGRAG_TEST_S3_ACCESS_KEY, KGRAG_TEST_S3_SECRET_KEY, KGRAG_TEST_S3_REGION.
"""

from __future__ import annotations

import os
import sys
import uuid

import boto3
from botocore.config import Config


def client(secret: str | None = None):
    return boto3.client(
        "s3",
        endpoint_url=os.environ["KGRAG_TEST_S3_ENDPOINT"],
        aws_access_key_id=os.environ["KGRAG_TEST_S3_ACCESS_KEY"],
        aws_secret_access_key=secret or os.environ["KGRAG_TEST_S3_SECRET_KEY"],
        region_name=os.environ.get("KGRAG_TEST_S3_REGION", "us-east-1"),
        # Path-style: "bucket.127.0.0.1" is no host name; retries off so a health probe fails fast.
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, connect_timeout=2, read_timeout=10),
    )


def main() -> int:
    what = sys.argv[1] if len(sys.argv) > 1 else "health"
    s3 = client()
    if what == "health":
        s3.list_buckets()
        return 0
    if what == "smoke":
        bucket = f"kgrag-smoke-{uuid.uuid4().hex[:8]}"
        s3.create_bucket(Bucket=bucket)
        s3.put_object(Bucket=bucket, Key="dir/hello.txt", Body=b"hello from kgrag")
        body = s3.get_object(Bucket=bucket, Key="dir/hello.txt")["Body"].read()
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
        s3.delete_object(Bucket=bucket, Key="dir/hello.txt")
        s3.delete_bucket(Bucket=bucket)
        print(f"s3: put/get {body!r} via bucket {bucket}, listed {keys}")
        assert body == b"hello from kgrag", body
        try:
            client(secret="not-the-secret").list_buckets()
        except Exception as exc:  # noqa: BLE001 - any refusal will do
            print(f"s3: a wrong secret is refused ({type(exc).__name__})")
        else:
            print("s3: WARNING: a wrong secret was accepted (signatures not enforced)")
            return 1
        return 0
    print(f"unknown check {what!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
