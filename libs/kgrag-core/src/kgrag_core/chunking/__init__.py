"""chunking."""
