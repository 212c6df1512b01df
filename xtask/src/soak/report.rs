//! The soak's summary: per phase, what ran (requests, turns, operations, faults by kind), what
//! the continuous checks measured (resumes and events checked, the ledger, orphans after
//! kills, the probe's round trips, the servers' RSS and descriptor slopes), and the
//! violations, the bounds among them.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::monitor::{self, Life};
use super::phase::PhaseReport;
use super::probe::{self, ProbeSample};
use super::record::lock;
use super::schedule::FaultKind;
use super::stats::quantile;

/// The probe's p99 round trip must stay under this (debug or release server, a 2-core
/// machine shared with builds; see docs/reliability.md, "The soak").
pub(crate) const P99_BOUND: Duration = Duration::from_millis(100);
/// The pooled RSS slope of a kind of server must stay under this, in KiB per minute.
pub(crate) const RSS_SLOPE_BOUND: f64 = 1024.0;
/// The pooled slope of open descriptors must stay under this, per minute.
pub(crate) const FD_SLOPE_BOUND: f64 = 2.0;
/// Samples of a server life before this are its warm-up, left out of the slopes. A life fills
/// its bounded state for minutes (the threads its clients resume, their replay windows, the
/// idle threads waiting out the unload delay): in a 12-minute life that was never killed
/// (seed 7, release build) the websocket server went from 12 to 44 MiB in its first 270 s and
/// stayed between 36 and 52 MiB after it. A warm-up shorter than the fill measures the fill.
pub(crate) const WARMUP: Duration = Duration::from_secs(300);
/// Fewer samples than this after warm-up (one a second) make no slope to judge: the CI run's
/// one-minute phases have none, the slopes are judged on long runs.
const MIN_SAMPLES: usize = 120;
/// How long after a down window ends the probe's samples still count as down: the probe
/// reconnects on its next tick.
const PROBE_SETTLE: Duration = Duration::from_secs(1);

/// The probe samples that count: those not overlapping a down window (extended by
/// [`PROBE_SETTLE`]). Returns them and how many were left out.
pub(crate) fn counted<'a>(
    samples: &'a [ProbeSample],
    down: &[(Instant, Instant)],
) -> (Vec<&'a ProbeSample>, usize) {
    let overlaps = |sample: &ProbeSample| {
        let end = sample.at + sample.outcome.clone().unwrap_or(probe::PERIOD * 50);
        down.iter()
            .any(|(from, to)| sample.at <= *to + PROBE_SETTLE && end >= *from)
    };
    let kept: Vec<&ProbeSample> = samples.iter().filter(|s| !overlaps(s)).collect();
    let left_out = samples.len() - kept.len();
    (kept, left_out)
}

/// Writes the summary of `phases`; returns it and the violations of the bounds.
pub(crate) fn summarize(phases: &[PhaseReport]) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut violations = Vec::new();
    for phase in phases {
        phase_summary(phase, &mut out, &mut violations);
    }
    (out, violations)
}

fn phase_summary(phase: &PhaseReport, out: &mut String, violations: &mut Vec<String>) {
    let c = &phase.counters;
    let load = |value: &std::sync::atomic::AtomicU64| value.load(Ordering::Relaxed);
    let _ = writeln!(
        out,
        "phase {} ({:.1} min):",
        phase.name,
        phase.length.as_secs_f64() / 60.0
    );
    let completed: Vec<String> = lock(&c.completed)
        .iter()
        .map(|(status, n)| format!("{status} {n}"))
        .collect();
    let operations: u64 = lock(&c.operations).values().sum();
    let _ = writeln!(
        out,
        "  requests {}, turns {} (turn/completed: {}), operations as planned {operations}, \
         failures a fault explained {}, idempotent retries {}, streamed processes {}",
        load(&c.requests),
        load(&c.turns),
        completed.join(", "),
        load(&c.excused),
        load(&c.retries),
        load(&c.processes),
    );
    let faults = lock(&c.faults);
    let injected: Vec<String> = FaultKind::ALL
        .iter()
        .filter_map(|kind| Some(format!("{} {}", kind.name(), faults.get(kind)?)))
        .collect();
    let _ = writeln!(out, "  faults: {}", injected.join(", "));
    for (what, n) in lock(&c.skipped).iter() {
        let _ = writeln!(out, "  skipped {n}x: {what}");
    }
    let (reconnects, replayed, duplicates, gaps) = phase.reconnects;
    let _ = writeln!(
        out,
        "  cursors: {} resumes checked ({} events replayed, {} gaps after restarts), {} live \
         events checked; worker clients: {reconnects} reconnects, {replayed} events replayed, \
         {duplicates} duplicates dropped, {gaps} gaps",
        load(&c.resumes),
        load(&c.replayed),
        load(&c.restart_gaps),
        load(&c.events_checked),
    );
    let _ = writeln!(
        out,
        "  ledger: {} threads, {} turns; {} read-backs comparing {} turns; at most {} turns \
         told failed still inProgress in the store (their final write refused while the disk \
         was full, owed by their server)",
        phase.ledger.0,
        phase.ledger.1,
        load(&c.ledger_checks),
        load(&c.turns_checked),
        load(&c.pending_failed),
    );
    let loaded: Vec<String> = phase
        .loaded
        .iter()
        .map(|(name, count)| format!("{name} {count}"))
        .collect();
    let _ = writeln!(out, "  threads loaded at the end: {}", loaded.join(", "));
    if let Some(slowest) = phase.orphan_times.iter().max() {
        let _ = writeln!(
            out,
            "  after {} kills, their processes were gone within {} ms at most (bound {} ms)",
            phase.orphan_times.len(),
            slowest.as_millis(),
            super::servers::ORPHAN_BOUND.as_millis()
        );
    }
    for (index, (samples, down)) in phase.probes.iter().enumerate() {
        probe_summary(index, samples, down, out, violations);
    }
    for (label, prefix) in [("websocket servers", "ws"), ("stdio servers", "stdio")] {
        let lives: Vec<&Life> = phase
            .lives
            .iter()
            .filter(|life| life.owner.starts_with(prefix))
            .collect();
        slope_summary(phase.name, label, &lives, out, violations);
    }
    for note in &phase.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    let _ = writeln!(out, "  violations: {}", phase.violations.len());
}

fn probe_summary(
    index: usize,
    samples: &[ProbeSample],
    down: &[(Instant, Instant)],
    out: &mut String,
    violations: &mut Vec<String>,
) {
    let (kept, left_out) = counted(samples, down);
    let failed: Vec<&String> = kept
        .iter()
        .filter_map(|s| s.outcome.as_ref().err())
        .collect();
    let rtts: Vec<f64> = kept
        .iter()
        .filter_map(|s| s.outcome.as_ref().ok())
        .map(|rtt| rtt.as_secs_f64() * 1000.0)
        .collect();
    let p50 = quantile(&rtts, 0.5).unwrap_or(f64::NAN);
    let p99 = quantile(&rtts, 0.99).unwrap_or(f64::NAN);
    let max = quantile(&rtts, 1.0).unwrap_or(f64::NAN);
    let _ = writeln!(
        out,
        "  probe ws{index}: {} round trips ({left_out} left out while the server was down), \
         p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms (p99 bound {} ms); {} failed",
        rtts.len(),
        P99_BOUND.as_millis(),
        failed.len()
    );
    if let Some(first) = failed.first() {
        violations.push(format!(
            "probe ws{index}: {} requests failed while the server was up; the first: {first}",
            failed.len()
        ));
    }
    if p99 > P99_BOUND.as_secs_f64() * 1000.0 {
        violations.push(format!(
            "probe ws{index}: p99 round trip {p99:.1} ms is over the bound of {} ms",
            P99_BOUND.as_millis()
        ));
    }
}

fn slope_summary(
    phase: &str,
    label: &str,
    lives: &[&Life],
    out: &mut String,
    violations: &mut Vec<String>,
) {
    let (rss, fds, count) = monitor::slopes(lives, WARMUP);
    let judged = lives
        .iter()
        .filter(|life| {
            life.samples
                .iter()
                .any(|(t, ..)| *t >= WARMUP.as_secs_f64())
        })
        .count();
    let peak = lives
        .iter()
        .flat_map(|life| life.samples.iter().map(|(_, kib, _)| *kib))
        .max()
        .unwrap_or(0);
    let (Some(rss), Some(fds)) = (rss, fds) else {
        let _ = writeln!(out, "  {label}: no samples after warm-up");
        return;
    };
    if count < MIN_SAMPLES {
        let _ = writeln!(
            out,
            "  {label}: {count} samples after warm-up, too few to judge a slope \
             (RSS {rss:+.0} KiB/min, fds {fds:+.2}/min)"
        );
        return;
    }
    let _ = writeln!(
        out,
        "  {label}: RSS slope {rss:+.0} KiB/min (bound {RSS_SLOPE_BOUND:.0}), fd slope \
         {fds:+.2}/min (bound {FD_SLOPE_BOUND:.1}), over {count} samples of the {judged} of {} \
         lives that outlived {} s of warm-up; peak RSS {:.1} MiB",
        lives.len(),
        WARMUP.as_secs(),
        peak as f64 / 1024.0
    );
    if rss > RSS_SLOPE_BOUND {
        violations.push(format!(
            "{phase}: the {label}' RSS grows {rss:.0} KiB/min after warm-up (bound \
             {RSS_SLOPE_BOUND:.0})"
        ));
    }
    if fds > FD_SLOPE_BOUND {
        violations.push(format!(
            "{phase}: the {label}' open descriptors grow {fds:.2}/min after warm-up (bound \
             {FD_SLOPE_BOUND:.1})"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_in_and_just_after_a_down_window_are_left_out() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let sample = |ms: u64, outcome: Result<Duration, String>| ProbeSample {
            at: at(ms),
            outcome,
        };
        let samples = vec![
            sample(0, Ok(Duration::from_millis(2))),
            // In flight when the server went down at 1 000 ms.
            sample(990, Ok(Duration::from_millis(30))),
            sample(1500, Err("refused".into())),
            // Within the settle time after it came back at 2 000 ms.
            sample(2500, Err("reconnecting".into())),
            sample(3500, Ok(Duration::from_millis(3))),
        ];
        let (kept, left_out) = counted(&samples, &[(at(1000), at(2000))]);
        assert_eq!(left_out, 3);
        let kept_at: Vec<Instant> = kept.iter().map(|s| s.at).collect();
        assert_eq!(kept_at, [at(0), at(3500)]);
        let (kept, left_out) = counted(&samples, &[]);
        assert_eq!((kept.len(), left_out), (5, 0));
    }
}
