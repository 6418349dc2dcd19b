"""kgrag_adapters."""
