"""kgrag_testing."""
