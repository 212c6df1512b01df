-- Version 3: idempotency keys (issue 17, docs/protocol.md "Idempotent requests"), the same
-- table as SQLite's schema version 3. No foreign key to threads: `thread/start` keys have no
-- thread, and a key must outlive a failed thread creation long enough to be released;
-- deleting a thread deletes its scope's keys explicitly. `created_at` (unix seconds) is
-- indexed for the age pruning every claim runs.
CREATE TABLE idempotency_keys (
    scope       TEXT NOT NULL,
    key         TEXT NOT NULL,
    method      TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    result      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (scope, key)
);

CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
CREATE INDEX idempotency_keys_by_scope_age ON idempotency_keys (scope, created_at);
