-- 0014_chunk_embedding_keys: each chunk names its vector in embedding_cache.
--
-- Entity resolution compares entities by the context they are mentioned in. That context vector is the
-- mean of the vectors of the chunks that mention the entity, which the indexer already computed and
-- cached (embedding_cache, keyed by the hash of the text it embedded: the heading path and the chunk's
-- text). The key cannot be recomputed in SQL (the heading path and the text are sealed), so the indexer
-- stores it with the chunk. Rows written before this migration have none; resolution embeds those
-- entities' contexts with the model, as before, until their documents are indexed again.
ALTER TABLE chunks ADD COLUMN embedding_key TEXT;
