"""kgrag_runtime."""
