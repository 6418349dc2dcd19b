-- Event times for ordering across topics.
--
-- documents.changed and documents.deleted are different topics consumed by different groups, so Kafka
-- orders each document's events within a topic but not across them. Each event carries the time its
-- producer observed the change; the store keeps the newest one it applied and when a document was
-- deleted, so a late event that is older than what the store already reflects is skipped instead of
-- resurrecting a deleted document or deleting a newer version.
ALTER TABLE documents ADD COLUMN observed_at TIMESTAMPTZ;
ALTER TABLE documents ADD COLUMN deleted_at TIMESTAMPTZ;
