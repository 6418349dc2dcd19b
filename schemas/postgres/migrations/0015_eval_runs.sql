-- 0015_eval_runs: evaluation runs started over HTTP (POST /v1/admin/eval/run) or the CLI (`kgrag eval-runs`).
--
-- A run scores a bundled suite on an isolated, temporary index (never the serving one); what is kept here
-- is its configuration and its report: metrics per retrieval configuration and question type, latency and
-- cost per query. No document text is stored (the suite's own questions and ids only). One succeeded run
-- per suite may be its baseline; later runs of the suite report their regressions against it.
CREATE TABLE eval_runs (
    run_id      TEXT PRIMARY KEY,
    suite       TEXT NOT NULL,
    config      JSONB NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
    started_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at TIMESTAMPTZ,
    report      JSONB,
    error       JSONB,
    is_baseline BOOLEAN NOT NULL DEFAULT false,
    CHECK (NOT is_baseline OR status = 'succeeded')
);

-- At most one baseline per suite.
CREATE UNIQUE INDEX eval_runs_one_baseline ON eval_runs (suite) WHERE is_baseline;
-- Listing, newest first.
CREATE INDEX eval_runs_started_at ON eval_runs (started_at DESC, run_id);
