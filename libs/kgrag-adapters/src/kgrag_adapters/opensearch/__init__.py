"""opensearch: distributed-mode adapters on an OpenSearch 2.x cluster (needs the `opensearch` extra)."""
