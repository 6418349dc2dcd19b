"""Communities over the resolved entity graph: detection (hierarchical Leiden behind a port), storage,
staleness and incremental refresh. Pure logic lives here; the clustering library lives in an adapter."""
