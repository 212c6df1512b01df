//! `cargo bench -p tandem-tui --bench flood`: the TUI while a `!` process floods its pane,
//! against the same app with no flood, in one run (issue 19, "smooth under load").
//!
//! The whole app runs headless, as the headless tests run it: the in-process server,
//! [`Tui::run`] on ratatui's `TestBackend` (wrapped to watch every frame), keys sent as
//! crossterm events. The flood is this binary run as a child under the pane's PTY
//! (`flood-writer N`): N bytes of numbered, coloured lines, as fast as the PTY takes them.
//!
//! Figures, each with and without the flood:
//! - keystroke-to-frame latency: from sending a key to the first frame whose composer shows
//!   it (p50, p99);
//! - frame time: from the start of a frame (ratatui asks the backend for its size) to its
//!   flush (p50, p99);
//! - flood intake: MB/s the pane took in, from the spawn to the process's exit;
//! - RSS before and after the flood and the peak (`/proc/self/status`), against the bound
//!   derived from the configured scrollback and the queue bounds.
//!
//! Exactness is checked, not timed: the pane took in every byte, and its screen and the top
//! of its scrollback equal those of a `vt100` parser fed the same bytes directly (with the
//! PTY's newline translation).
//!
//! `cargo bench` floods 1 GiB. Without `--bench` (as under `cargo test --benches`) or with
//! `--quick` it floods 2 MiB and finishes in seconds; `TANDEM_TUI_FLOOD_MIB=N` sets the size.
//! `-- flood-only` skips the no-flood phase (for profiling the intake path).

use std::io::{self, Write as _};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use futures::StreamExt as _;
use ratatui::Terminal;
use ratatui::backend::{Backend, ClearType, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use tandem_client::{Client, ClientOptions, Transport};
use tandem_server::ServerOptions;
use tandem_tui::{ExitReason, PROCESS_QUEUE_DELTAS, Tui, TuiError, TuiOptions};
use tokio::sync::{mpsc, oneshot};

const MIB: u64 = 1024 * 1024;
const WIDTH: u16 = 100;
const HEIGHT: u16 = 30;
/// The composer's text row: above its bottom border and the status line.
const COMPOSER_ROW: u16 = HEIGHT - 3;
/// Keys typed before the composer is cleared (Ctrl-U), well within its width.
const COMPOSER_KEYS: usize = 40;
/// How long one key may take to show before the run is declared stuck.
const KEY_DEADLINE: Duration = Duration::from_secs(30);
/// The flood's output per write of the writer.
const WRITE_BYTES: usize = 64 * 1024;
/// One `vt100` cell (asserted in vt100 0.18's source).
const CELL_BYTES: u64 = 32;
/// The server's bounds on one PTY stream (tandem-server `process`): the read-ahead it keeps
/// while a delta is in flight, and the largest delta.
const SERVER_READ_AHEAD: u64 = 4 * MIB;
const DELTA_BYTES: u64 = 64 * 1024;
/// The host's replay window (tandem-host `DEFAULT_REPLAY_WINDOW_BYTES`).
const REPLAY_WINDOW: u64 = 4 * MIB;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("flood-writer") {
        let total = args
            .get(1)
            .and_then(|n| n.parse().ok())
            .expect("flood-writer BYTES");
        return write_flood(total);
    }
    let quick = !args.iter().any(|arg| arg == "--bench") || args.iter().any(|a| a == "--quick");
    let flood_bytes = match std::env::var("TANDEM_TUI_FLOOD_MIB") {
        Ok(mib) => {
            mib.parse::<u64>()
                .expect("TANDEM_TUI_FLOOD_MIB is a number")
                * MIB
        }
        Err(_) if quick => 2 * MIB,
        Err(_) => 1024 * MIB,
    };
    let idle_keys = if quick { 30 } else { 300 };
    let flood_only = args.iter().any(|arg| arg == "flood-only");
    // Two workers: the machine the figures are for has two cores.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(run(flood_bytes, if flood_only { 0 } else { idle_keys }));
}

/// The flood: line after line of numbered, coloured text, cut at exactly `total` bytes.
fn generate_flood(total: u64, mut sink: impl FnMut(&[u8])) {
    let mut buffer = Vec::with_capacity(WRITE_BYTES + 256);
    let mut written = 0u64;
    let mut line = 0u64;
    while written < total {
        while buffer.len() < WRITE_BYTES {
            line += 1;
            let _ = writeln!(
                buffer,
                "\x1b[3{}m{line:>10}\x1b[0m the quick brown fox jumps over the lazy dog \x1b[1m{}\x1b[0m",
                line % 8,
                line % 997
            );
        }
        let take = (total - written).min(buffer.len() as u64) as usize;
        sink(&buffer[..take]);
        written += take as u64;
        buffer.drain(..take);
    }
}

fn write_flood(total: u64) {
    let stdout = io::stdout();
    let mut stdout = stdout.lock();
    generate_flood(total, |bytes| {
        stdout.write_all(bytes).expect("the pane reads")
    });
    stdout.flush().expect("the pane reads");
}

/// What the watched backend reports: frame times, and the frame that shows a waited-for key.
#[derive(Default)]
struct Probe {
    frame_started: Option<Instant>,
    frame_times: Vec<Duration>,
    /// The composer text a key should produce, when it was sent, and who waits for it.
    pending: Option<(String, Instant, oneshot::Sender<Duration>)>,
}

/// `TestBackend` that times frames and finds the first frame showing a key's echo.
struct Watched {
    inner: TestBackend,
    probe: Arc<Mutex<Probe>>,
}

impl Watched {
    fn composer_text(&self) -> String {
        let buffer = self.inner.buffer();
        let row: String = (1..WIDTH - 1)
            .map(|x| buffer[(x, COMPOSER_ROW)].symbol())
            .collect();
        row.trim_end().to_owned()
    }
}

impl Backend for Watched {
    type Error = std::convert::Infallible;

    fn draw<'a, I>(&mut self, content: I) -> Result<(), Self::Error>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.inner.draw(content)
    }

    fn hide_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> Result<Position, Self::Error> {
        self.inner.get_cursor_position()
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> Result<(), Self::Error> {
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> Result<(), Self::Error> {
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> Result<(), Self::Error> {
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> Result<Size, Self::Error> {
        // Ratatui's draw starts by asking the size (to follow a resize).
        self.probe.lock().expect("probe").frame_started = Some(Instant::now());
        self.inner.size()
    }

    fn window_size(&mut self) -> Result<WindowSize, Self::Error> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        let now = Instant::now();
        let text = self.composer_text();
        let mut probe = self.probe.lock().expect("probe");
        if let Some(started) = probe.frame_started.take() {
            probe.frame_times.push(now - started);
        }
        if probe
            .pending
            .as_ref()
            .is_some_and(|(expected, _, _)| *expected == text)
            && let Some((_, sent, waiter)) = probe.pending.take()
        {
            let _ = waiter.send(now - sent);
        }
        self.inner.flush()
    }
}

struct Keys {
    sender: mpsc::Sender<io::Result<Event>>,
    probe: Arc<Mutex<Probe>>,
    typed: String,
    /// A small deterministic generator for the pause between keys, so keys fall anywhere
    /// between frames rather than in step with them.
    seed: u64,
}

impl Keys {
    async fn send(&self, code: KeyCode, modifiers: KeyModifiers) {
        self.sender
            .send(Ok(Event::Key(KeyEvent::new(code, modifiers))))
            .await
            .expect("the app reads keys");
    }

    async fn line(&self, text: &str) {
        for c in text.chars() {
            self.send(KeyCode::Char(c), KeyModifiers::NONE).await;
        }
        self.send(KeyCode::Enter, KeyModifiers::NONE).await;
    }

    /// Sends `code` and waits for the first frame whose composer shows `expected`.
    async fn until_shown(
        &self,
        code: KeyCode,
        modifiers: KeyModifiers,
        expected: &str,
    ) -> Duration {
        let (waiter, shown) = oneshot::channel();
        self.probe.lock().expect("probe").pending =
            Some((expected.to_owned(), Instant::now(), waiter));
        self.send(code, modifiers).await;
        tokio::time::timeout(KEY_DEADLINE, shown)
            .await
            .unwrap_or_else(|_| panic!("no frame showed {expected:?} within {KEY_DEADLINE:?}"))
            .expect("the backend answers")
    }

    /// Types one key, returns its keystroke-to-frame latency, then pauses 0 to 10 ms.
    async fn one(&mut self) -> Duration {
        if self.typed.len() >= COMPOSER_KEYS {
            self.typed.clear();
            self.until_shown(KeyCode::Char('u'), KeyModifiers::CONTROL, "")
                .await;
        }
        let c = char::from(b'a' + (self.typed.len() % 26) as u8);
        self.typed.push(c);
        let typed = self.typed.clone();
        let latency = self
            .until_shown(KeyCode::Char(c), KeyModifiers::NONE, &typed)
            .await;
        self.seed = self
            .seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        tokio::time::sleep(Duration::from_micros((self.seed >> 33) % 10_000)).await;
        latency
    }
}

fn take_frames(probe: &Mutex<Probe>) -> Vec<Duration> {
    std::mem::take(&mut probe.lock().expect("probe").frame_times)
}

/// The `q` quantile of `samples` (sorted here), in milliseconds.
fn quantile_ms(samples: &mut [Duration], q: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort_unstable();
    let index = ((samples.len() - 1) as f64 * q).round() as usize;
    samples[index].as_secs_f64() * 1e3
}

/// `VmRSS` and `VmHWM` of this process, in bytes.
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

struct Phase {
    latencies: Vec<Duration>,
    frames: Vec<Duration>,
}

impl Phase {
    fn report(&mut self, name: &str) -> (f64, f64) {
        let p50 = quantile_ms(&mut self.latencies, 0.5);
        let p99 = quantile_ms(&mut self.latencies, 0.99);
        let f50 = quantile_ms(&mut self.frames, 0.5);
        let f99 = quantile_ms(&mut self.frames, 0.99);
        println!(
            "{name:>9}: keystroke-to-frame p50 {p50:6.2} ms  p99 {p99:6.2} ms ({} keys) │ frame time p50 {f50:6.3} ms  p99 {f99:6.3} ms ({} frames)",
            self.latencies.len(),
            self.frames.len(),
        );
        (p50, p99)
    }
}

async fn run(flood_bytes: u64, idle_keys: usize) {
    let home = tempfile::tempdir().expect("temp home");
    let mut server = ServerOptions::new(home.path()).expect("server options");
    // In-process without the helper binary the sandbox cannot be applied; the flood is not
    // about the sandbox.
    server.config.sandbox = tandem_protocol::SandboxPolicy::DangerFullAccess;
    let client = Client::start(Transport::InProcess(server), ClientOptions::new())
        .await
        .expect("client starts");
    let cwd = home.path().to_str().expect("utf-8 path").to_owned();
    let options = TuiOptions::new("in-process", cwd);
    let limits = options.limits;
    let frame_interval = options.frame_interval;
    let tui = Tui::new(client.clone(), options);
    let probe = Arc::new(Mutex::new(Probe::default()));
    let (sender, receiver) = mpsc::channel(64);
    let input = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|event| (event, receiver))
    })
    .boxed();
    let app = {
        let tui = tui.clone();
        let backend = Watched {
            inner: TestBackend::new(WIDTH, HEIGHT),
            probe: probe.clone(),
        };
        tokio::spawn(async move {
            let mut terminal = Terminal::new(backend).expect("test terminal");
            tui.run(&mut terminal, input, std::future::pending()).await
        })
    };
    let mut keys = Keys {
        sender,
        probe: probe.clone(),
        typed: String::new(),
        seed: 0x5eed,
    };

    println!(
        "tandem tui under a flood: {WIDTH}x{HEIGHT} headless, frames at most every {frame_interval:?}, {} MiB flood, scrollback {} rows",
        flood_bytes / MIB,
        limits.scrollback_rows
    );

    // No flood: keys into an idle app.
    let mut idle = Phase {
        latencies: Vec::new(),
        frames: Vec::new(),
    };
    if idle_keys > 0 {
        // Warm up: the first frames allocate the buffers.
        for _ in 0..5 {
            keys.one().await;
        }
        take_frames(&probe);
        for _ in 0..idle_keys {
            idle.latencies.push(keys.one().await);
        }
        idle.frames = take_frames(&probe);
    }

    // The flood: a `!` process in a pane, then the focus back on the composer.
    let (rss_before, _) = memory();
    let writer = std::env::current_exe().expect("this bench's path");
    let command = format!("!'{}' flood-writer {flood_bytes}", writer.display());
    keys.typed.clear();
    keys.until_shown(KeyCode::Char('u'), KeyModifiers::CONTROL, "")
        .await;
    keys.line(&command).await;
    let started = Instant::now();
    tui.wait_for("the flood's pane", KEY_DEADLINE, |state| {
        state.active_pane().is_some()
    })
    .await
    .expect("the pane opens");
    keys.until_shown(KeyCode::Char('o'), KeyModifiers::CONTROL, "")
        .await;
    take_frames(&probe);
    let flood_done = |tui: &Tui| {
        tui.state()
            .active_pane()
            .is_some_and(|pane| pane.finished.is_some())
    };
    let mut flood = Phase {
        latencies: Vec::new(),
        frames: Vec::new(),
    };
    let mut peak_rss_during = 0;
    while !flood_done(&tui) {
        let latency = keys.one().await;
        // A key that landed after the last byte is not a key under the flood.
        if !flood_done(&tui) {
            flood.latencies.push(latency);
        }
        peak_rss_during = peak_rss_during.max(memory().0);
    }
    let elapsed = started.elapsed();
    flood.frames = take_frames(&probe);
    let (rss_after, hwm) = memory();

    let (fed, finished, screen, scrolled_top, rows, cols) = {
        let mut state = tui.state();
        let pane = state.active_pane_mut().expect("the flood's pane");
        let fed = pane.bytes_fed();
        let finished = pane.finished.clone();
        let screen = pane.screen().contents_formatted();
        pane.scroll_up(usize::MAX);
        let scrolled_top = pane.screen().contents_formatted();
        pane.scroll_to_bottom();
        let (rows, cols) = pane.size();
        (fed, finished, screen, scrolled_top, rows, cols)
    };

    let (idle_p50, idle_p99) = idle.report("no flood");
    let (flood_p50, flood_p99) = flood.report("flood");
    println!(
        "    ratio: keystroke-to-frame p50 {:.2}x  p99 {:.2}x the no-flood figures",
        flood_p50 / idle_p50,
        flood_p99 / idle_p99
    );
    println!(
        "   intake: {:.1} MiB in {:.2} s = {:.1} MB/s ({})",
        mib(fed),
        elapsed.as_secs_f64(),
        fed as f64 / elapsed.as_secs_f64() / 1e6,
        finished.as_deref().unwrap_or("running")
    );
    // The bound: what the pane may keep (screen and scrollback rows of vt100 cells, each row a
    // Vec of cells plus its header and allocation), the server's kept screen of the same size,
    // the client's queue of deltas, the server's read-ahead and the host's replay window.
    let row_bytes = u64::from(cols) * CELL_BYTES + 64;
    let pane_bound = (limits.scrollback_rows as u64 + u64::from(rows)) * row_bytes;
    let server_screen = u64::from(rows) * row_bytes;
    let queues = PROCESS_QUEUE_DELTAS as u64 * DELTA_BYTES + SERVER_READ_AHEAD + REPLAY_WINDOW;
    let bound = pane_bound + server_screen + queues;
    let growth = hwm.saturating_sub(rss_before);
    println!(
        "      RSS: {:.1} MiB before the flood, {:.1} MiB after, peak {:.1} MiB (sampled during: {:.1} MiB); growth to the peak {:.1} MiB, bound {:.1} MiB ({:.1} MiB pane scrollback+screen, {:.1} MiB queues and read-ahead) {}",
        mib(rss_before),
        mib(rss_after),
        mib(hwm),
        mib(peak_rss_during),
        mib(growth),
        mib(bound),
        mib(pane_bound + server_screen),
        mib(queues),
        if growth <= bound {
            "within"
        } else {
            "EXCEEDED"
        }
    );

    // Exactness: the same bytes through a terminal's newline translation into a parser.
    let mut reference = vt100::Parser::new(
        std::num::NonZeroU16::new(rows).expect("rows"),
        std::num::NonZeroU16::new(cols).expect("cols"),
        limits.scrollback_rows,
    );
    let mut expected_bytes = 0u64;
    let mut translated = Vec::with_capacity(2 * WRITE_BYTES);
    generate_flood(flood_bytes, |bytes| {
        translated.clear();
        for &byte in bytes {
            if byte == b'\n' {
                translated.push(b'\r');
            }
            translated.push(byte);
        }
        expected_bytes += translated.len() as u64;
        reference.process(&translated);
    });
    assert_eq!(finished.as_deref(), Some("exit 0"), "the flood ended well");
    assert_eq!(fed, expected_bytes, "the pane took in every byte");
    assert_eq!(
        screen,
        reference.screen().contents_formatted(),
        "the pane's screen is a terminal's"
    );
    reference.screen_mut().set_scrollback(usize::MAX);
    assert_eq!(
        scrolled_top,
        reference.screen().contents_formatted(),
        "the top of the pane's scrollback is a terminal's"
    );
    println!("    exact: every byte taken in; screen and scrollback top equal a vt100 parser's");

    // Ctrl-D quits from an empty composer.
    keys.until_shown(KeyCode::Char('u'), KeyModifiers::CONTROL, "")
        .await;
    keys.send(KeyCode::Char('d'), KeyModifiers::CONTROL).await;
    let exit: Result<ExitReason, TuiError> = tokio::time::timeout(KEY_DEADLINE, app)
        .await
        .expect("the app quits")
        .expect("the app task");
    assert_eq!(exit.expect("the app ran"), ExitReason::Quit);
    tokio::time::timeout(KEY_DEADLINE, client.close())
        .await
        .expect("the client closes");
}
