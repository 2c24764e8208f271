-- Buzz Orchestra's own registry (orchestrator.md §5.6): maps relay channels back to trials.
-- Idempotent; applied after every stack bring-up. Never holds a secret.
CREATE SCHEMA IF NOT EXISTS benchmark;

CREATE TABLE IF NOT EXISTS benchmark.trial_manifest (
    run_id        text        NOT NULL,
    trial_id      text        NOT NULL,
    manifest_hash text        NOT NULL,
    task_name     text        NOT NULL,
    channel_id    text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    archived_at   timestamptz,
    PRIMARY KEY (run_id, trial_id)
);
