-- Who decided a merge and who split it: the admin token's `sub` (NULL for resolution's own merges, the CLI,
-- and every merge logged before this column).
ALTER TABLE er_merge_log ADD COLUMN decided_by_sub TEXT, ADD COLUMN reverted_by_sub TEXT;
