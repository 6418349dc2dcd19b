"""graph-writer: keeps the Neo4j projection equal to PostgreSQL."""
