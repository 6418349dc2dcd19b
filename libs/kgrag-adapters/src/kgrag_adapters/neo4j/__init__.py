"""neo4j: distributed-mode graph adapters on a Neo4j 5 server (needs the `neo4j` extra, the official driver)."""
