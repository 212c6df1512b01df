//! Samples the resident size and open descriptors of every server process of a phase once a
//! second. A restart (a new pid, or the same pid with another start time) begins a new life:
//! slopes are fitted per life, after its warm-up, and pooled (`stats::pooled_slope`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tandem_client::Client;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::procfs;
use super::record::lock;
use super::stats::{Sample, pooled_slope};

/// How often the servers are sampled.
const PERIOD: Duration = Duration::from_secs(1);

/// One life of one server process and its samples.
#[derive(Debug, Clone)]
pub(crate) struct Life {
    /// `ws0`, `stdio1`, ...
    pub(crate) owner: String,
    /// Its process id.
    pub(crate) pid: u32,
    start: u64,
    /// When the monitor first saw it.
    pub(crate) born: Instant,
    /// `(seconds since born, RSS in KiB, open descriptors)`.
    pub(crate) samples: Vec<(f64, u64, usize)>,
}

/// The server processes to sample: the websocket servers the phase registers, and the stdio
/// clients' children, found through their clients.
#[derive(Debug, Clone, Default)]
pub(crate) struct Targets {
    servers: Arc<Mutex<BTreeMap<String, Option<u32>>>>,
    stdio: Arc<Mutex<Vec<(String, Client)>>>,
}

impl Targets {
    /// Server `owner` now runs as `pid` (`None`: it is down).
    pub(crate) fn set_server(&self, owner: &str, pid: Option<u32>) {
        lock(&self.servers).insert(owner.to_owned(), pid);
    }

    /// Samples the server child of `client` as `owner`.
    pub(crate) fn add_stdio(&self, owner: &str, client: Client) {
        lock(&self.stdio).push((owner.to_owned(), client));
    }

    fn current(&self) -> Vec<(String, u32)> {
        let mut current: Vec<(String, u32)> = lock(&self.servers)
            .iter()
            .filter_map(|(owner, pid)| Some((owner.clone(), (*pid)?)))
            .collect();
        current.extend(
            lock(&self.stdio)
                .iter()
                .filter_map(|(owner, client)| Some((owner.clone(), client.child_pid()?))),
        );
        current
    }
}

/// The sampling task; its lives are read when it stops.
#[derive(Debug)]
pub(crate) struct Monitor {
    lives: Arc<Mutex<Vec<Life>>>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Monitor {
    /// Starts sampling `targets`.
    pub(crate) fn start(targets: Targets) -> Self {
        let lives = Arc::new(Mutex::new(Vec::new()));
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn({
            let lives = lives.clone();
            async move {
                let mut tick = tokio::time::interval(PERIOD);
                loop {
                    tokio::select! {
                        _ = tick.tick() => sample(&targets, &lives),
                        _ = stopped.changed() => return,
                    }
                }
            }
        });
        Self { lives, stop, task }
    }

    /// Stops sampling and returns every life seen.
    pub(crate) async fn finish(self) -> Vec<Life> {
        let _ = self.stop.send(true);
        let _ = self.task.await;
        lock(&self.lives).clone()
    }
}

fn sample(targets: &Targets, lives: &Mutex<Vec<Life>>) {
    for (owner, pid) in targets.current() {
        let Some(stat) = procfs::stat(pid) else {
            continue;
        };
        let (Some(rss), Some(fds)) = (procfs::rss_kib(pid), procfs::fd_count(pid)) else {
            continue;
        };
        let mut lives = lock(lives);
        let position = lives
            .iter()
            .position(|life| life.owner == owner && life.pid == pid && life.start == stat.start);
        let life = match position {
            Some(index) => &mut lives[index],
            None => {
                lives.push(Life {
                    owner,
                    pid,
                    start: stat.start,
                    born: Instant::now(),
                    samples: Vec::new(),
                });
                lives.last_mut().expect("just pushed")
            }
        };
        life.samples
            .push((life.born.elapsed().as_secs_f64(), rss, fds));
    }
}

/// The samples as CSV (`owner,pid,seconds,rss_kib,fds`), for a look at their shape.
pub(crate) fn csv(lives: &[Life]) -> String {
    let mut out = String::from("owner,pid,seconds,rss_kib,fds\n");
    for life in lives {
        for (t, kib, fds) in &life.samples {
            out.push_str(&format!("{},{},{t:.1},{kib},{fds}\n", life.owner, life.pid));
        }
    }
    out
}

/// The pooled slopes of a set of lives, per minute, after `warmup` of each: `(RSS in KiB,
/// descriptors)`, and how many samples they rest on.
pub(crate) fn slopes(lives: &[&Life], warmup: Duration) -> (Option<f64>, Option<f64>, usize) {
    let after: Vec<Vec<&(f64, u64, usize)>> = lives
        .iter()
        .map(|life| {
            life.samples
                .iter()
                .filter(|(t, ..)| *t >= warmup.as_secs_f64())
                .collect()
        })
        .collect();
    let series = |value: fn(&(f64, u64, usize)) -> f64| -> Vec<Vec<Sample>> {
        after
            .iter()
            .map(|samples| samples.iter().map(|s| (s.0, value(s))).collect())
            .collect()
    };
    let rss = series(|(_, kib, _)| *kib as f64);
    let fds = series(|(_, _, fds)| *fds as f64);
    let count = after.iter().map(Vec::len).sum();
    (
        pooled_slope(&rss).map(|slope| slope * 60.0),
        pooled_slope(&fds).map(|slope| slope * 60.0),
        count,
    )
}
