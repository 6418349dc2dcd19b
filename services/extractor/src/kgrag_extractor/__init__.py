"""The extractor service: consumes chunks.changed, runs extraction tiers 0-3, writes facts to PostgreSQL."""
