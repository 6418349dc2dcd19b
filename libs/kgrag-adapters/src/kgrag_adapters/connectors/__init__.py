"""connectors."""
