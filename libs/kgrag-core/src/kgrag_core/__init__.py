"""kgrag_core."""
