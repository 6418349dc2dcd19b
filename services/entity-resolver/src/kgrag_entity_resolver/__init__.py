"""The entity-resolver service: consumes graph.changed, resolves entities, keeps the merge log and hubs."""
