"""`kgrag eval`: run a question file against an index."""
