-- Incremental resolution reads only the entities a changed document could merge with: those sharing a name
-- token (of a name or of a surface form) with the document's entities. These indexes answer "which names
-- hold one of these tokens" without reading every entity and mention.
CREATE INDEX kg_entities_name_tokens ON kg_entities USING gin (string_to_array(norm_name, ' '));
CREATE INDEX kg_mentions_name_tokens ON kg_mentions USING gin (string_to_array(norm_name, ' '));
