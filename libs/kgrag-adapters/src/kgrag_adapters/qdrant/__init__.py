"""qdrant: distributed-mode adapters on a Qdrant server (needs the `qdrant` extra, `qdrant-client`)."""
