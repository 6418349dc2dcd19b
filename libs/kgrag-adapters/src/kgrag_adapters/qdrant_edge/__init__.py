"""qdrant_edge."""
