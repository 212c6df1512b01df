-- Version 5: when each item started and completed (thread/items/list's startedAtMs and
-- completedAtMs), unix milliseconds; the same columns as SQLite's schema version 6. Rows
-- written before have NULL: their times were not recorded.
ALTER TABLE items ADD COLUMN started_at_ms BIGINT;
ALTER TABLE items ADD COLUMN completed_at_ms BIGINT;
