-- 0008_duplicates_outlive_representatives: a duplicate never depends on its representative's lifetime.
--
-- Tier 0 records, for an exact or near duplicate, the chunk it copies (chunk_extractions.representative_chunk_id,
-- deliberately without a foreign key). When that chunk goes, the duplicate's own evidence stays (it was
-- verified against the duplicate's text and stored under its chunk ID), but the pointer would name a chunk
-- that no longer exists: later chunks would become duplicates of nothing and re-extraction would skip the
-- copy for good. So, in the deleting transaction, every pointer at a deleted chunk is cleared. A row with a
-- duplicate skip reason and no representative is an *orphaned duplicate*: tier 0 counts it as an original,
-- and the extractor handler re-extracts it right after the deletion (the first orphan becomes the new
-- representative, the other copies its duplicates), see kgrag_core.handlers.extractor.

CREATE FUNCTION chunk_extractions_representatives_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE chunk_extractions x SET representative_chunk_id = NULL
    WHERE x.representative_chunk_id IN (SELECT g.chunk_id FROM gone g);
    RETURN NULL;
END
$$;

CREATE TRIGGER chunks_gone_representatives AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION chunk_extractions_representatives_gone();

-- Serves the trigger's look-up by representative.
CREATE INDEX chunk_extractions_representative ON chunk_extractions (representative_chunk_id)
    WHERE representative_chunk_id IS NOT NULL;

-- Serves the handler's look-up of orphaned duplicates (a handful at a time, usually none).
CREATE INDEX chunk_extractions_orphaned ON chunk_extractions (chunk_id)
    WHERE representative_chunk_id IS NULL AND skip_reason IN ('exact_duplicate', 'near_duplicate');

-- Duplicates left orphaned before this migration (their representative already deleted) are found too.
UPDATE chunk_extractions x SET representative_chunk_id = NULL
WHERE x.representative_chunk_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.chunk_id = x.representative_chunk_id);
