"""acl-propagator: acl.changed → PostgreSQL first (fail closed), then every projection."""
