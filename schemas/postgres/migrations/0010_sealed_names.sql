-- 0010_sealed_names: entity names, surface forms, strong identifiers and claim values are sealed or blinded
-- (issue 9 class 6; docs/adr/0008-crypto-shredding.md, "Names").
--
-- Before this, a deleted document's entity names stayed plaintext in dead tuples and WAL because SQL
-- searched them. Now every name-like value a document contributes is stored on a row of that document's
-- evidence, sealed under its data key (deterministically, so equal values of one document seal equal and
-- primary keys still dedupe), and SQL finds names through keyed blind indexes: HMAC-SHA256 under the
-- installation key (`kg_installation.entity_id_key`, which already keys entity ids) of the normalised name
-- (`name_key`), of each name token of two characters or more (`name_tokens`) and of each strong identifier
-- value. A blind index is a fixed-length keyed hash: it says two rows name the same thing and nothing about
-- the name, so once the document's key is destroyed nothing in its rows, dead tuples or WAL opens.
--
-- The entity row keeps no name: a reader is shown a name from evidence it may read (security.md sections
-- 1 and 3), and an entity that only relation or claim evidence names takes the name that evidence gives
-- (`kg_relation_evidence.subject_name` / `object_name`, `kg_claim_evidence.entity_name`). A claim's value
-- moves to its evidence rows too (`kg_claim_evidence.value`); the claim id already keys the normalised
-- value, so the claim row needs none.
--
-- Rows written before this migration get their names in the unencrypted sealed form (0x00 | UTF-8), as
-- 0009 did for content: readable as before, sealed when their chunk is extracted again.

-- HMAC-SHA256 over the installation key, the blind index kgrag_core.extraction.identity.blind computes:
-- the first 32 hex digits of HMAC(key, 'kgrag-blind' 0x1f domain 0x1f value). Only this migration uses it.
CREATE FUNCTION pg_temp.kg_blind(key BYTEA, domain TEXT, value TEXT) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    k BYTEA := key;
    ipad BYTEA;
    opad BYTEA;
    msg BYTEA := convert_to('kgrag-blind' || E'\x1f' || domain || E'\x1f' || value, 'UTF8');
BEGIN
    IF length(k) > 64 THEN
        k := sha256(k);
    END IF;
    k := k || decode(repeat('00', 64 - length(k)), 'hex');
    ipad := k;
    opad := k;
    FOR i IN 0..63 LOOP
        ipad := set_byte(ipad, i, get_byte(k, i) # 54);
        opad := set_byte(opad, i, get_byte(k, i) # 92);
    END LOOP;
    RETURN left(encode(sha256(opad || sha256(ipad || msg)), 'hex'), 32);
END
$$;

CREATE FUNCTION pg_temp.kg_blind_tokens(key BYTEA, norm TEXT) RETURNS TEXT[] LANGUAGE sql IMMUTABLE AS $$
    SELECT COALESCE(array_agg(DISTINCT pg_temp.kg_blind(key, 'token', t) ORDER BY pg_temp.kg_blind(key, 'token', t)),
                    '{}')
    FROM unnest(string_to_array(norm, ' ')) AS t WHERE length(t) >= 2
$$;

CREATE FUNCTION pg_temp.kg_blind_ids(key BYTEA, ids JSONB) RETURNS JSONB LANGUAGE sql IMMUTABLE AS $$
    SELECT COALESCE(jsonb_agg(DISTINCT jsonb_build_array(lower(btrim(p->>0)),
                    pg_temp.kg_blind(key, 'id:' || lower(btrim(p->>0)), lower(btrim(p->>1))))), '[]'::jsonb)
    FROM jsonb_array_elements(ids) AS p
$$;

-- --- evidence rows get the names they give -------------------------------------------------------------

ALTER TABLE kg_relation_evidence ADD COLUMN subject_name BYTEA, ADD COLUMN object_name BYTEA;
UPDATE kg_relation_evidence ev
SET subject_name = '\x00'::bytea || convert_to(s.name, 'UTF8'),
    object_name = '\x00'::bytea || convert_to(o.name, 'UTF8')
FROM kg_relations r, kg_entities s, kg_entities o
WHERE r.relation_id = ev.relation_id AND s.entity_id = r.subject_id AND o.entity_id = r.object_id;
ALTER TABLE kg_relation_evidence ALTER COLUMN subject_name SET NOT NULL, ALTER COLUMN object_name SET NOT NULL;

ALTER TABLE kg_claim_evidence ADD COLUMN entity_name BYTEA, ADD COLUMN value BYTEA;
UPDATE kg_claim_evidence ev
SET entity_name = '\x00'::bytea || convert_to(e.name, 'UTF8'),
    value = '\x00'::bytea || convert_to(cl.value, 'UTF8')
FROM kg_claims cl, kg_entities e
WHERE cl.claim_id = ev.claim_id AND e.entity_id = cl.entity_id;
ALTER TABLE kg_claim_evidence ALTER COLUMN entity_name SET NOT NULL, ALTER COLUMN value SET NOT NULL;
ALTER TABLE kg_claims DROP COLUMN value;

-- --- mentions: sealed surface form and strong identifiers, blinded name --------------------------------

ALTER TABLE kg_mentions ADD COLUMN name_key TEXT, ADD COLUMN name_tokens TEXT[];
UPDATE kg_mentions SET name_key = pg_temp.kg_blind(k.entity_id_key, 'name', norm_name),
                       name_tokens = pg_temp.kg_blind_tokens(k.entity_id_key, norm_name)
FROM kg_installation k;
ALTER TABLE kg_mentions ALTER COLUMN name_key SET NOT NULL, ALTER COLUMN name_tokens SET NOT NULL;
-- (drops kg_mentions_norm_name and the GIN index over its tokens)
ALTER TABLE kg_mentions DROP COLUMN norm_name;
-- The surface form is part of the primary key; deterministic sealing keeps equal names equal.
ALTER TABLE kg_mentions ALTER COLUMN name TYPE BYTEA USING '\x00'::bytea || convert_to(name, 'UTF8');
-- A mention's identifiers are shown to readers: sealed, a JSON array of [kind, value] pairs inside; NULL
-- when it carried none (most mentions), so reads skip those without opening anything.
ALTER TABLE kg_mentions ALTER COLUMN strong_ids DROP DEFAULT, ALTER COLUMN strong_ids DROP NOT NULL;
ALTER TABLE kg_mentions ALTER COLUMN strong_ids TYPE BYTEA
    USING CASE WHEN strong_ids = '[]'::jsonb THEN NULL ELSE '\x00'::bytea || convert_to(strong_ids::text, 'UTF8') END;
CREATE INDEX kg_mentions_name_key ON kg_mentions (name_key);
CREATE INDEX kg_mentions_name_tokens ON kg_mentions USING gin (name_tokens);

-- --- entities: no name, a blinded one; strong identifiers blinded (resolution compares them for equality) -

ALTER TABLE kg_entities ADD COLUMN name_key TEXT, ADD COLUMN name_tokens TEXT[];
UPDATE kg_entities SET name_key = pg_temp.kg_blind(k.entity_id_key, 'name', norm_name),
                       name_tokens = pg_temp.kg_blind_tokens(k.entity_id_key, norm_name),
                       strong_ids = pg_temp.kg_blind_ids(k.entity_id_key, strong_ids)
FROM kg_installation k;
ALTER TABLE kg_entities ALTER COLUMN name_key SET NOT NULL, ALTER COLUMN name_tokens SET NOT NULL;
-- (drops kg_entities_norm_name and kg_entities_name_tokens)
ALTER TABLE kg_entities DROP COLUMN name, DROP COLUMN norm_name;
CREATE INDEX kg_entities_name_key ON kg_entities (name_key);
CREATE INDEX kg_entities_name_tokens ON kg_entities USING gin (name_tokens);
