-- 0006_content_keys: crypto-shredding (docs/adr/0008-crypto-shredding.md).
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

-- Per store: what the deletion did there (purged / shredded / deleted / failed), when, and a note.
ALTER TABLE deletion_log ADD COLUMN purges JSONB NOT NULL DEFAULT '[]';
