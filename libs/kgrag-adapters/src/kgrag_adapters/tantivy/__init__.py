"""tantivy."""
