"""chunk-indexer: documents.changed → chunks in PostgreSQL, Qdrant and OpenSearch → chunks.changed."""
