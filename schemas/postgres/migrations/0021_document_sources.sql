-- 0021_document_sources: a search filtered by source (filters.sources, POST /v1/ask and /v1/search) first
-- checks that each named source has an active document the caller may read (an unknown one is a 422
-- INVALID_FILTER). This keeps that check an index probe per named source, not a scan of every document.
CREATE INDEX documents_active_source ON documents (source, acl_class_id) WHERE status = 'ACTIVE';
