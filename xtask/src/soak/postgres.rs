//! The PostgreSQL phase's store: the throwaway cluster of `tandem-test-support` (initdb and
//! pg_ctl on a unix socket under a temporary directory, stopped when the soak exits), one
//! fresh database per phase, and the fault that restarts the cluster (`pg_ctl restart -m
//! fast`, which ends every backend connection).
//!
//! The cluster helper does not expose its `pg_ctl`; the running postmaster names both what
//! the restart needs: its data directory (`SHOW data_directory`) and its binary
//! (`/proc/PID/exe` of the pid in `postmaster.pid`), whose directory holds `pg_ctl`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tandem_test_support::postgres::PostgresCluster;

use super::procfs;

/// One phase's database on the shared cluster.
#[derive(Debug)]
pub(crate) struct Postgres {
    url: String,
    data: PathBuf,
    pg_ctl: PathBuf,
}

impl Postgres {
    /// The cluster (started on first use) and a new database on it; `Err` says why there is
    /// none (PostgreSQL not installed: the helper printed why).
    pub(crate) fn start() -> Result<Self, String> {
        let cluster = PostgresCluster::shared()
            .ok_or_else(|| "PostgreSQL is not installed here".to_owned())?;
        let data = PathBuf::from(cluster.sql("SHOW data_directory")?);
        let pid_file = std::fs::read_to_string(data.join("postmaster.pid"))
            .map_err(|e| format!("cannot read postmaster.pid: {e}"))?;
        let postmaster: u32 = pid_file
            .lines()
            .next()
            .and_then(|line| line.trim().parse().ok())
            .ok_or("postmaster.pid names no pid")?;
        let exe = std::fs::read_link(format!("/proc/{postmaster}/exe"))
            .map_err(|e| format!("cannot find the postmaster's binary: {e}"))?;
        let pg_ctl = exe.with_file_name("pg_ctl");
        Ok(Self {
            url: cluster.create_database(),
            data,
            pg_ctl,
        })
    }

    /// The database's `store.url`.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// `pg_ctl restart -m fast`, waiting until the cluster accepts connections again.
    /// Blocking; returns how long the cluster was down.
    pub(crate) fn restart(&self) -> Result<Duration, String> {
        let began = Instant::now();
        // The cluster runs as the postgres user when the soak runs as root (PostgreSQL refuses
        // root), as the helper started it.
        let mut command = if procfs::is_root() {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(&self.pg_ctl);
            command
        } else {
            Command::new(&self.pg_ctl)
        };
        // `-l`: the new postmaster writes to the cluster's log, not to a pipe of ours that
        // would then never close.
        let log = self.data.with_file_name("log");
        let output = command
            .args(["restart", "-m", "fast", "-w", "-t", "60", "-D"])
            .arg(&self.data)
            .arg("-l")
            .arg(&log)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.pg_ctl.display()))?;
        if output.status.success() {
            Ok(began.elapsed())
        } else {
            Err(format!(
                "pg_ctl restart failed ({}): {}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }
}
