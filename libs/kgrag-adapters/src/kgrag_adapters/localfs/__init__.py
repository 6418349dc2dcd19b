"""localfs."""
