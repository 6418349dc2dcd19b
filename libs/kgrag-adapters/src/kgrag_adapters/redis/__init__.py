"""redis: distributed-mode adapters on a Redis server (needs the `redis` extra, `redis`)."""
