"""s3: distributed-mode adapters on S3 or an S3-compatible server (needs the `s3` extra, `boto3`)."""
