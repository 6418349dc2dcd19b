"""Indexing: the fast path from a document to searchable chunks."""
