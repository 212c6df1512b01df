//! What the soak reads from `/proc`: a server's resident size and open descriptors (sampled
//! every second), its children, and the processes that carry a server life's marker variable
//! (what must die with it, docs/reliability.md "What dies with the server").

use std::path::Path;

/// The environment variable every server life the soak starts carries, with a value unique to
/// that life (`<run>/<owner>/<life>`); the server's children inherit it, so a process still
/// carrying it after its server died outlived its owner.
pub(crate) const LIFE_VAR: &str = "TANDEM_SOAK_LIFE";

/// A process as `/proc/PID/stat` describes it (the fields the soak needs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stat {
    /// The process id.
    pub(crate) pid: u32,
    /// The executable name (the kernel truncates it to 15 bytes).
    pub(crate) comm: String,
    /// `R`, `S`, `D`, `Z`, ...
    pub(crate) state: char,
    /// The parent's process id.
    pub(crate) ppid: u32,
    /// When it started, in clock ticks since boot: with the pid, names one process even when
    /// pids are reused.
    pub(crate) start: u64,
}

/// Parses the text of `/proc/PID/stat`. The name sits between the first `(` and the last `)`
/// and may itself hold spaces and parentheses.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text[open + 1..close].to_owned();
    let fields: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // After the name: state (field 3), ppid (4), ..., starttime (22).
    Some(Stat {
        pid,
        comm,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// `/proc/PID/stat` of one process, if it exists.
pub(crate) fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process's stat.
pub(crate) fn all() -> Vec<Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(stat)
        .collect()
}

/// The resident size in KiB (`VmRSS` of `/proc/PID/status`).
pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_rss_kib(&status)
}

/// `VmRSS` of a `/proc/PID/status` text, in KiB.
pub(crate) fn parse_rss_kib(status: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// How many descriptors the process has open.
pub(crate) fn fd_count(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// The value of `name` in a `/proc/PID/environ` text (NUL-separated `NAME=value`).
pub(crate) fn environ_value<'a>(environ: &'a [u8], name: &str) -> Option<&'a [u8]> {
    environ.split(|byte| *byte == 0).find_map(|entry| {
        entry
            .strip_prefix(name.as_bytes())
            .and_then(|rest| rest.strip_prefix(b"="))
    })
}

/// A live process and the marker it carries.
#[derive(Debug, Clone)]
pub(crate) struct Marked {
    /// The process.
    pub(crate) stat: Stat,
    /// Its [`LIFE_VAR`] value.
    pub(crate) life: String,
    /// Its command line, for the report.
    pub(crate) cmdline: String,
}

/// Every live (not zombie) process whose [`LIFE_VAR`] starts with `prefix`.
pub(crate) fn marked(prefix: &str) -> Vec<Marked> {
    all()
        .into_iter()
        .filter(|stat| stat.state != 'Z')
        .filter_map(|stat| {
            let environ = std::fs::read(format!("/proc/{}/environ", stat.pid)).ok()?;
            let life = environ_value(&environ, LIFE_VAR)?;
            let life = String::from_utf8_lossy(life).into_owned();
            if !life.starts_with(prefix) {
                return None;
            }
            let cmdline = cmdline(stat.pid);
            Some(Marked {
                stat,
                life,
                cmdline,
            })
        })
        .collect()
}

/// The command line of `pid`, arguments separated by spaces.
pub(crate) fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            String::from_utf8_lossy(&bytes)
                .trim_end_matches('\0')
                .replace('\0', " ")
        })
        .unwrap_or_default()
}

/// Whether the process `pid` that started at `start` is still alive (not a zombie).
pub(crate) fn alive(pid: u32, start: u64) -> bool {
    stat(pid).is_some_and(|stat| stat.start == start && stat.state != 'Z')
}

/// Whether this process runs as root (mounting a tmpfs needs it).
pub(crate) fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    // /proc/self belongs to the process's effective user.
    std::fs::metadata(Path::new("/proc/self")).is_ok_and(|meta| meta.uid() == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_with_a_tricky_name_parses() {
        let line = "4242 (tandem (a) b) S 17 4242 4242 0 -1 4194560 1 0 0 0 3 1 0 0 20 0 \
                    9 0 987654 12345678 900 18446744073709551615";
        let stat = parse_stat(line).expect("parses");
        assert_eq!(stat.pid, 4242);
        assert_eq!(stat.comm, "tandem (a) b");
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.ppid, 17);
        assert_eq!(stat.start, 987_654);
        assert_eq!(parse_stat("12 (x) S 1"), None);
    }

    #[test]
    fn this_process_reads_back() {
        let me = std::process::id();
        let stat = stat(me).expect("our own stat");
        assert_eq!(stat.pid, me);
        assert!(alive(me, stat.start));
        assert!(
            !alive(me, stat.start + 1),
            "another start is another process"
        );
        assert!(rss_kib(me).is_some_and(|kib| kib > 0));
        assert!(fd_count(me).is_some_and(|fds| fds >= 3));
    }

    #[test]
    fn rss_and_environment_values_parse() {
        let status = "Name:\ttandem\nVmPeak:\t  200 kB\nVmRSS:\t   51234 kB\nThreads:\t9\n";
        assert_eq!(parse_rss_kib(status), Some(51_234));
        assert_eq!(parse_rss_kib("Name:\tx\n"), None);
        let environ = b"PATH=/bin\0TANDEM_SOAK_LIFE=run/ws0/3\0TANDEM_SOAK_LIFEX=no\0";
        assert_eq!(environ_value(environ, LIFE_VAR), Some(&b"run/ws0/3"[..]));
        assert_eq!(environ_value(environ, "HOME"), None);
    }
}
