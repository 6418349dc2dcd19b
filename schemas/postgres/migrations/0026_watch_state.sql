-- 0026_watch_state: what `kgrag watch` last delivered for each file under a watched folder, so a restarted
-- watcher re-sends nothing unchanged and deletes the documents of files removed while it was stopped.
-- `doc_ids` are the documents the file gave (a CSV file gives one per row; front matter may set the id);
-- `fingerprint` digests what was ingested (ids, content hashes, ACL classes), never the content itself.
CREATE TABLE watch_files (
    root          TEXT NOT NULL,
    relative_path TEXT NOT NULL,
    doc_ids       TEXT[] NOT NULL,
    fingerprint   TEXT NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (root, relative_path)
);
