-- Version 2: the writer lease of each thread (docs/scaling.md). One row per thread that was
-- ever leased, kept after release and after the thread is deleted, so that its epoch never
-- goes back. Expiry is on the database's clock. No foreign key: a lease row may outlive its
-- thread, and taking a lease must not wait on the thread row.
CREATE TABLE thread_leases (
    thread_id            TEXT PRIMARY KEY,
    owner                TEXT NOT NULL,
    epoch                BIGINT NOT NULL,
    expires_at           TIMESTAMPTZ NOT NULL,
    -- Set by a server that was refused the lease, so that the owner hands the thread over as
    -- soon as no turn runs on it.
    handoff_requested_by TEXT
);
