"""Retrieval: routes, fusion and the hybrid search use case."""
