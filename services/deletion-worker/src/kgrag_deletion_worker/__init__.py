"""deletion-worker: documents.deleted → removed from every store and cache, with an audit record."""
