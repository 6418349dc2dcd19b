-- 0009_content_keys: crypto-shredding (docs/adr/0008-crypto-shredding.md).
--
-- Each document's content is sealed (AES-256-GCM) under its own data key; this table keeps the data
-- keys, each wrapped by a key-encryption key (KEK) that never enters the database. Deleting a document
-- deletes its row here in the same transaction as the tombstone: every sealed copy of its content (live
-- rows, dead tuples, WAL, backups, Kafka segments) is then ciphertext without a key. A dead tuple of this
-- row still holds the wrapped key; it opens only with a KEK that the next KEK rotation retires (see
-- docs/operations.md, "Key rotation").
CREATE TABLE document_keys (
    doc_id      TEXT PRIMARY KEY,
    -- random per key; every sealed value names it, so a value sealed under an earlier key of a document
    -- that was deleted and ingested again never opens under the new one.
    key_id      BYTEA NOT NULL,
    kek_id      TEXT NOT NULL,
    wrapped_key BYTEA NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Rotation reads the keys still wrapped under an old KEK.
CREATE INDEX document_keys_kek_id ON document_keys (kek_id);

-- Sealed columns hold `0x01 | key id | nonce | ciphertext`; `0x00 | UTF-8 text` is the unencrypted form,
-- which is what rows written before this migration become (readable as before; sealed when re-written).
-- Nothing in SQL searches these columns: text searches run in BM25 and over decrypted rows in Python.
ALTER TABLE documents ALTER COLUMN title TYPE BYTEA USING '\x00'::bytea || convert_to(title, 'UTF8');
ALTER TABLE documents ALTER COLUMN uri TYPE BYTEA USING '\x00'::bytea || convert_to(uri, 'UTF8');
ALTER TABLE chunks ALTER COLUMN text TYPE BYTEA USING '\x00'::bytea || convert_to(text, 'UTF8');
-- The heading breadcrumb (a JSON array) is sealed deterministically: equal breadcrumbs of one document
-- seal equal, so the chunk upsert can still skip unchanged rows by comparing it.
ALTER TABLE chunks ALTER COLUMN section_path TYPE BYTEA
    USING '\x00'::bytea || convert_to(array_to_json(section_path)::text, 'UTF8');

-- The ingest log's URI of each event (often a file path naming the content), sealed like the document's.
ALTER TABLE ingest_log ALTER COLUMN uri TYPE BYTEA USING '\x00'::bytea || convert_to(uri, 'UTF8');

-- Per store: what the deletion did there (purged / shredded / deleted / failed), when, and a note.
ALTER TABLE deletion_log ADD COLUMN purges JSONB NOT NULL DEFAULT '[]';

-- Evidence quotes are sealed under the data key of the document whose chunk they quote. Deterministic
-- sealing (equal quotes of one document seal equal), so quote_key, the md5 that keeps the primary keys
-- short, still tells a repeat from a new quote. A generated column's source cannot change type, so the
-- key column is dropped (its primary key with it) and made again over the sealed value.
ALTER TABLE kg_mentions DROP COLUMN quote_key;
ALTER TABLE kg_mentions ALTER COLUMN quote TYPE BYTEA USING '\x00'::bytea || convert_to(quote, 'UTF8');
ALTER TABLE kg_mentions ADD COLUMN quote_key TEXT GENERATED ALWAYS AS (md5(quote)) STORED;
ALTER TABLE kg_mentions ADD PRIMARY KEY (chunk_id, entity_id, name, quote_key);

ALTER TABLE kg_relation_evidence DROP COLUMN quote_key;
ALTER TABLE kg_relation_evidence ALTER COLUMN quote TYPE BYTEA USING '\x00'::bytea || convert_to(quote, 'UTF8');
ALTER TABLE kg_relation_evidence ADD COLUMN quote_key TEXT GENERATED ALWAYS AS (md5(quote)) STORED;
ALTER TABLE kg_relation_evidence ADD PRIMARY KEY (relation_id, chunk_id, quote_key);

ALTER TABLE kg_claim_evidence DROP COLUMN quote_key;
ALTER TABLE kg_claim_evidence ALTER COLUMN quote TYPE BYTEA USING '\x00'::bytea || convert_to(quote, 'UTF8');
ALTER TABLE kg_claim_evidence ADD COLUMN quote_key TEXT GENERATED ALWAYS AS (md5(quote)) STORED;
ALTER TABLE kg_claim_evidence ADD PRIMARY KEY (claim_id, chunk_id, quote_key);

-- A cached extraction (it quotes its text) is sealed under the key of the document whose chunk produced
-- it (key_doc_id). Identical texts of other documents share the entry; once that document is deleted the
-- entry no longer opens and counts as a miss, so a shared text is extracted again, never leaked.
ALTER TABLE extraction_cache ADD COLUMN key_doc_id TEXT;
ALTER TABLE extraction_cache ALTER COLUMN result TYPE BYTEA USING '\x00'::bytea || convert_to(result::text, 'UTF8');

-- A quarantined model reply may quote its chunks: sealed under the first chunk's document.
ALTER TABLE extraction_quarantine ADD COLUMN key_doc_id TEXT;
ALTER TABLE extraction_quarantine ALTER COLUMN reply TYPE BYTEA USING '\x00'::bytea || convert_to(reply, 'UTF8');
