-- Version 1: threads, turns, items, attachments and compaction summaries; the same model as
-- the SQLite store's schema version 2 (crates/server/src/store/sqlite.rs). Values that are
-- only ever read whole are the JSON text of their protocol types (text, not jsonb: jsonb
-- reorders keys and would not round-trip an item byte for byte).
CREATE TABLE threads (
    id              TEXT PRIMARY KEY,
    name            TEXT,
    preview         TEXT NOT NULL,
    ephemeral       BOOLEAN NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    status          TEXT NOT NULL,
    cwd             TEXT NOT NULL,
    source          TEXT NOT NULL,
    source_kind     TEXT NOT NULL,
    forked_from_id  TEXT,
    model           TEXT,
    model_provider  TEXT NOT NULL,
    cli_version     TEXT NOT NULL,
    approval_policy TEXT NOT NULL,
    dynamic_tools   TEXT NOT NULL,
    config          TEXT NOT NULL,
    archived_at     BIGINT
);
CREATE INDEX threads_by_creation ON threads (created_at, id);

CREATE TABLE turns (
    thread_id    TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    id           TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    status       TEXT NOT NULL,
    items_view   TEXT NOT NULL,
    error        TEXT,
    started_at   BIGINT,
    completed_at BIGINT,
    duration_ms  BIGINT,
    PRIMARY KEY (thread_id, id),
    UNIQUE (thread_id, seq)
);

CREATE TABLE items (
    thread_id TEXT NOT NULL,
    turn_id   TEXT NOT NULL,
    idx       BIGINT NOT NULL,
    item      TEXT NOT NULL,
    PRIMARY KEY (thread_id, turn_id, idx),
    FOREIGN KEY (thread_id, turn_id) REFERENCES turns (thread_id, id) ON DELETE CASCADE
);

CREATE TABLE attachments (
    thread_id       TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    position        BIGSERIAL NOT NULL,
    id              TEXT NOT NULL,
    attachment_type TEXT NOT NULL,
    identity_key    TEXT NOT NULL,
    payload         TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (thread_id, attachment_type, identity_key),
    UNIQUE (thread_id, id)
);

CREATE TABLE compactions (
    thread_id TEXT NOT NULL,
    turn_id   TEXT NOT NULL,
    summary   TEXT NOT NULL,
    PRIMARY KEY (thread_id, turn_id),
    FOREIGN KEY (thread_id, turn_id) REFERENCES turns (thread_id, id) ON DELETE CASCADE
);
