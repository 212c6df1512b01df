//! A throwaway PostgreSQL cluster for tests of the PostgreSQL thread store (issue 20): one
//! cluster per test binary, started on first use with `initdb` and `pg_ctl` on a unix socket
//! only (no TCP port, so test binaries never collide), `fsync` off (a test's data needs no
//! durability), and a fresh database per test ([`PostgresCluster::create_database`]). A test
//! that restarts the database under load starts a cluster of its own
//! ([`PostgresCluster::private`], [`PostgresCluster::restart_fast`]), so the tests sharing the
//! binary's cluster never see it go away.
//!
//! Where no PostgreSQL is installed, [`PostgresCluster::shared`] returns `None` after printing
//! why, so the test can skip; with `TANDEM_REQUIRE_POSTGRES=1` (CI) it panics instead, so a
//! machine that lost PostgreSQL fails rather than passing without running the tests.
//!
//! PostgreSQL refuses to run as root: as root, the cluster runs as the `postgres` user
//! (`runuser`). A watcher process stops the cluster and removes its directory once the test
//! binary exits, since a `static` is never dropped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// Set to `1` to make a missing PostgreSQL fail the tests instead of skipping them.
pub const REQUIRE_ENV: &str = "TANDEM_REQUIRE_POSTGRES";

/// Names the directory holding `initdb`, `pg_ctl` and `psql`, when it is not one of the usual
/// places.
pub const BIN_ENV: &str = "TANDEM_POSTGRES_BIN";

/// The port number in the socket's file name (`.s.PGSQL.5432`); nothing listens on TCP.
const PORT: u16 = 5432;

/// A running throwaway cluster.
#[derive(Debug)]
pub struct PostgresCluster {
    bin: PathBuf,
    root: PathBuf,
    run_as_postgres: bool,
    databases: AtomicU32,
}

static SHARED: OnceLock<Result<PostgresCluster, String>> = OnceLock::new();

impl PostgresCluster {
    /// This test binary's cluster, started on first use; `None` (after printing why) where
    /// PostgreSQL is not installed or does not start, unless [`REQUIRE_ENV`] is `1`.
    pub fn shared() -> Option<&'static PostgresCluster> {
        match SHARED.get_or_init(|| Self::start(&format!("tandem-pg-{}", std::process::id()))) {
            Ok(cluster) => Some(cluster),
            Err(reason) => skip(reason),
        }
    }

    /// A cluster of the caller's own, for a test that stops or restarts it (see
    /// [`PostgresCluster::restart_fast`]) and so must not share the binary's cluster with the
    /// tests running beside it. Stopped and removed when dropped (or, should the test binary
    /// die first, by the same watcher as the shared one). `None` as for
    /// [`PostgresCluster::shared`].
    pub fn private() -> Option<PostgresCluster> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "tandem-pg-{}-own-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        match Self::start(&name) {
            Ok(cluster) => Some(cluster),
            Err(reason) => skip(&reason),
        }
    }

    /// Restarts the cluster with `pg_ctl restart -m fast`: every session is terminated, the
    /// server checkpoints and stops, then starts again with the same options; returns once it
    /// accepts connections again.
    pub fn restart_fast(&self) -> Result<(), String> {
        self.pg_ctl(&["-m", "fast", "restart"])
    }

    /// Stops the cluster with `pg_ctl stop -m fast` (sessions terminated, a checkpoint, then
    /// the server exits); [`PostgresCluster::start_again`] brings it back.
    pub fn stop_fast(&self) -> Result<(), String> {
        self.pg_ctl(&["-m", "fast", "stop"])
    }

    /// Starts the cluster (stopped by [`PostgresCluster::stop_fast`], or not yet started) with
    /// its options; returns once it accepts connections.
    pub fn start_again(&self) -> Result<(), String> {
        let options = self.options();
        self.pg_ctl(&["-o", &options, "start"])
    }

    /// `pg_ctl -D DATA -l LOG -w ARGS`.
    fn pg_ctl(&self, args: &[&str]) -> Result<(), String> {
        let data = self.root.join("data");
        let log = self.root.join("log");
        let mut all = vec!["-D", path_str(&data), "-l", path_str(&log), "-w"];
        all.extend_from_slice(args);
        self.run("pg_ctl", &all)
    }

    /// The server's command-line options: a unix socket only, no durability (see the module
    /// doc).
    fn options(&self) -> String {
        format!(
            "-k {} -c listen_addresses= -p {PORT} -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c max_connections=400",
            path_str(&self.socket_dir())
        )
    }

    fn start(name: &str) -> Result<Self, String> {
        let bin = find_bin().ok_or_else(|| {
            format!("no initdb found in ${BIN_ENV}, /usr/lib/postgresql/*/bin or PATH")
        })?;
        let run_as_postgres = is_root();
        let root = std::env::temp_dir().join(name);
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("socket"))
            .map_err(|error| format!("cannot create {}: {error}", root.display()))?;
        let cluster = Self {
            bin,
            root,
            run_as_postgres,
            databases: AtomicU32::new(0),
        };
        if run_as_postgres {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&cluster.root)
                .status()
                .map_err(|error| format!("cannot run chown: {error}"))?;
            if !status.success() {
                return Err("cannot give the cluster directory to the postgres user".to_owned());
            }
        }
        let data = cluster.root.join("data");
        cluster.run(
            "initdb",
            &[
                "-D",
                path_str(&data),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ],
        )?;
        // The watcher outlives this process by design: it stops the cluster once we exit.
        let watcher = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; \
             {pg_ctl} -D {data} -m immediate stop >/dev/null 2>&1; rm -rf {root}",
            pid = std::process::id(),
            pg_ctl = cluster.command_line("pg_ctl"),
            data = path_str(&data),
            root = path_str(&cluster.root),
        );
        Command::new("sh")
            .args(["-c", &watcher])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| format!("cannot start the cluster's watcher: {error}"))?;
        cluster.start_again()?;
        Ok(cluster)
    }

    /// The directory holding the server's socket.
    pub fn socket_dir(&self) -> PathBuf {
        self.root.join("socket")
    }

    /// The URL of `database` on this cluster, as `store.url` takes it.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@localhost:{PORT}/{database}?host={}",
            path_str(&self.socket_dir())
        )
    }

    /// Creates an empty database for one test and returns its URL.
    pub fn create_database(&self) -> String {
        self.create_named_database().1
    }

    /// Creates an empty database for one test and returns its name and URL.
    pub fn create_named_database(&self) -> (String, String) {
        let name = format!("test_{}", self.databases.fetch_add(1, Ordering::SeqCst) + 1);
        self.sql(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|error| panic!("cannot create database {name}: {error}"));
        let url = self.url(&name);
        (name, url)
    }

    /// Runs `sql` with `psql` on the `postgres` database as the superuser; returns what it
    /// printed (unaligned, tuples only).
    pub fn sql(&self, sql: &str) -> Result<String, String> {
        self.sql_in("postgres", sql)
    }

    /// Runs `sql` with `psql` on `database`; returns what it printed (unaligned, tuples only).
    pub fn sql_in(&self, database: &str, sql: &str) -> Result<String, String> {
        let output = Command::new(self.bin.join("psql"))
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-U",
                "postgres",
            ])
            .arg("-h")
            .arg(self.socket_dir())
            .args(["-p", &PORT.to_string(), "-d", database, "-c", sql])
            .output()
            .map_err(|error| format!("cannot run psql: {error}"))?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    }

    fn command_line(&self, program: &str) -> String {
        let program = self.bin.join(program);
        if self.run_as_postgres {
            format!("runuser -u postgres -- {}", path_str(&program))
        } else {
            path_str(&program).to_owned()
        }
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let mut command = if self.run_as_postgres {
            let mut command = Command::new("runuser");
            command
                .args(["-u", "postgres", "--"])
                .arg(self.bin.join(program));
            command
        } else {
            Command::new(self.bin.join(program))
        };
        let output = command
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|error| format!("cannot run {program}: {error}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program} failed: {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }
}

impl Drop for PostgresCluster {
    fn drop(&mut self) {
        // Only a private cluster is ever dropped (the shared one lives in a `static`).
        let data = self.root.join("data");
        let _ = self.run(
            "pg_ctl",
            &["-D", path_str(&data), "-m", "immediate", "stop"],
        );
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// `None` after printing why PostgreSQL is not usable, or a panic under [`REQUIRE_ENV`].
fn skip<T>(reason: &str) -> Option<T> {
    if std::env::var(REQUIRE_ENV).is_ok_and(|value| value == "1") {
        panic!("{REQUIRE_ENV}=1 but PostgreSQL is not usable: {reason}");
    }
    eprintln!("skipped: PostgreSQL is not usable here: {reason} (set {BIN_ENV})");
    None
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    // /proc/self belongs to the process's effective user.
    std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0)
}

/// The directory of `initdb`: [`BIN_ENV`], the newest `/usr/lib/postgresql/N/bin`, or `PATH`.
fn find_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(BIN_ENV) {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists())
    })
}
