-- Version 4: file checkpoints (issue 29, point 9), the same table as SQLite's schema version
-- 5: per turn that changed files through patches, the JSON of its FileCheckpoint (each
-- file's content before the turn and a digest of what the turn left) and the bytes of
-- earlier content it keeps, which the per-thread bound adds up. It goes with its turn.
CREATE TABLE file_checkpoints (
    thread_id  TEXT NOT NULL,
    turn_id    TEXT NOT NULL,
    kept_bytes BIGINT NOT NULL,
    checkpoint TEXT NOT NULL,
    PRIMARY KEY (thread_id, turn_id),
    FOREIGN KEY (thread_id, turn_id) REFERENCES turns (thread_id, id) ON DELETE CASCADE
);
