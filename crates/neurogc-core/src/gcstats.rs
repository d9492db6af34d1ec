//! Per-generation GC statistics, accumulated from `gc.callbacks` start/stop pairs.

use std::path::Path;

use crate::policy::{Intent, Trigger};
use crate::prometheus::{Histogram, GC_PAUSE_BUCKETS};
use crate::sample::read::{BadRows, Cell, ColumnKind, CsvTable, ReadError};
use crate::sample::GenerationSample;

/// CPython's generational GC has three generations (3.14.0–3.14.4 had two; they map onto 0 and 2).
pub const GENERATIONS: usize = 3;

/// Who asked for a collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollectionCause {
    /// Triggered by the runtime's thresholds or an explicit `gc.collect()` in the application.
    Runtime,
    /// Requested by the NeuroGC policy.
    Policy,
}

impl CollectionCause {
    /// The `reason` column of the GC events CSV.
    pub fn as_str(self) -> &'static str {
        match self {
            CollectionCause::Runtime => "runtime",
            CollectionCause::Policy => "policy",
        }
    }
}

/// The pause a (full) collection cost the service, from its wall time and the CPU time of the
/// thread that ran it: the wall time, unless it passed the CPU time by more than
/// [`crate::traffic::STOP_GAP`]. Then the process was stopped meanwhile (SIGSTOP, a frozen
/// container; the suite stops every server between its turns), and the collection's own CPU
/// time stands for its pause. (The wall time alone put collections of 6-95 s into the suite's
/// records, each straddling a stop of the server.)
pub fn pause_ns(wall_ns: u64, cpu_ns: u64) -> u64 {
    let stop_gap = u64::try_from(crate::traffic::STOP_GAP.as_nanos()).unwrap_or(u64::MAX);
    if wall_ns.saturating_sub(cpu_ns) > stop_gap {
        cpu_ns
    } else {
        wall_ns
    }
}

/// One finished collection.
#[derive(Clone, Debug, PartialEq)]
pub struct GcEvent {
    /// Unix time (seconds) when the collection started.
    pub start_time: f64,
    pub generation: u8,
    pub pause_ns: u64,
    pub collected: u64,
    pub uncollectable: u64,
    pub cause: CollectionCause,
    /// Requests in flight when it started (None where no middleware counts them).
    pub in_flight: Option<u32>,
    /// Why the policy ran it and the pause it predicted (policy collections only).
    pub intent: Option<Intent>,
}

impl GcEvent {
    /// The GC events CSV: one row per collection (docs/runs.md, `gc-events.csv`). `pid` is the
    /// process that ran it: the workers of one service each write a file, and a reader that
    /// puts them together still tells them apart. `why` is the policy's reason in words (its
    /// collections only), last: it is the one column with commas in it.
    pub const CSV_COLUMNS: [&'static str; 12] = [
        "time",
        "generation",
        "pause_ms",
        "collected",
        "uncollectable",
        "reason",
        "in_flight",
        "trigger",
        "predicted_ms",
        "predicted_freed",
        "pid",
        "why",
    ];

    /// The row in [`GcEvent::CSV_COLUMNS`] order: `time` in Unix seconds with 6 decimals,
    /// `pause_ms` rounded to the microsecond, `reason` `policy` or `runtime`; what is not known
    /// is empty; `pid` is the process writing it.
    pub fn csv_fields(&self, pid: u32) -> [String; 12] {
        let us = self.pause_ns.saturating_add(500) / 1_000;
        let opt = |v: Option<String>| v.unwrap_or_default();
        [
            format!("{:.6}", self.start_time),
            self.generation.to_string(),
            format!("{}.{:03}", us / 1_000, us % 1_000),
            self.collected.to_string(),
            self.uncollectable.to_string(),
            self.cause.as_str().to_string(),
            opt(self.in_flight.map(|n| n.to_string())),
            opt(self.intent.as_ref().map(|i| i.trigger.as_str().to_string())),
            opt(self
                .intent
                .as_ref()
                .and_then(|i| i.predicted_ms)
                .map(|ms| format!("{ms:.3}"))),
            opt(self
                .intent
                .as_ref()
                .and_then(|i| i.predicted_freed)
                .map(|n| format!("{n:.0}"))),
            pid.to_string(),
            opt(self
                .intent
                .as_ref()
                .and_then(|i| i.why.as_deref())
                .map(str::to_string)),
        ]
    }
}

/// How the columns of the GC events CSV are read back.
pub fn event_column_kind(column: &str) -> Option<ColumnKind> {
    match column {
        "reason" | "trigger" | "why" => Some(ColumnKind::Text),
        "time" | "generation" | "pause_ms" | "collected" | "uncollectable" | "in_flight"
        | "predicted_ms" | "predicted_freed" | "pid" => Some(ColumnKind::Number),
        _ => None,
    }
}

/// One row of a GC events CSV, read back.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedEvent {
    pub time: f64,
    pub generation: u8,
    pub pause_ms: f64,
    pub collected: Option<u64>,
    pub reason: String,
    /// The columns added later are empty (None) in older files.
    pub in_flight: Option<u32>,
    pub trigger: Option<Trigger>,
    pub predicted_ms: Option<f64>,
    pub predicted_freed: Option<f64>,
    /// The process that ran it; `None` in files written before the `pid` column existed (the
    /// caller may know it from the file's name: [`crate::csv_sink::process_of_file`]).
    pub pid: Option<u32>,
    /// The policy's reason for it in words (empty for the runtime's, and in older files).
    pub why: String,
}

/// Reads a GC events CSV (`shown` names it in errors): the same cell and truncated-line rules
/// as the samples. A row without a time, generation (0–2) or pause is an error naming its line.
pub fn read_events(
    path: &Path,
    shown: &str,
) -> Result<(Vec<RecordedEvent>, Vec<String>), ReadError> {
    let table = CsvTable::read_with(path, shown, event_column_kind, BadRows::Fail)?;
    for required in ["generation", "pause_ms"] {
        if !table.has(required) {
            return Err(ReadError {
                file: shown.to_string(),
                line: 1,
                message: format!(
                    "no `{required}` column (header: {})",
                    table.header.columns.join(",")
                ),
            });
        }
    }
    let mut events = Vec::with_capacity(table.rows.len());
    for row in &table.rows {
        let bad = |message: String| ReadError {
            file: shown.to_string(),
            line: row.line,
            message,
        };
        let generation = match table.number(row, "generation") {
            Some(g) if g.fract() == 0.0 && (0.0..GENERATIONS as f64).contains(&g) => g as u8,
            other => return Err(bad(format!("generation {other:?} is not 0, 1 or 2"))),
        };
        let pause_ms = table
            .number(row, "pause_ms")
            .ok_or_else(|| bad("empty pause_ms".into()))?;
        let text = |column| match table.cell(row, column) {
            Some(Cell::Text(s)) => s.clone(),
            _ => String::new(),
        };
        let reason = text("reason");
        let trigger = match text("trigger").as_str() {
            "" => None,
            t => Some(Trigger::parse(t).ok_or_else(|| bad(format!("unknown trigger {t:?}")))?),
        };
        events.push(RecordedEvent {
            time: table.time(row),
            generation,
            pause_ms,
            collected: table.number(row, "collected").map(|c| c as u64),
            reason,
            in_flight: table.number(row, "in_flight").map(|n| n as u32),
            trigger,
            predicted_ms: table.number(row, "predicted_ms"),
            predicted_freed: table.number(row, "predicted_freed"),
            pid: match table.number(row, "pid") {
                None => None,
                Some(p) if p.fract() == 0.0 && (1.0..=f64::from(u32::MAX)).contains(&p) => {
                    Some(p as u32)
                }
                Some(p) => return Err(bad(format!("pid {p} is not a process id"))),
            },
            why: text("why"),
        });
    }
    Ok((events, table.warnings))
}

/// Collections finished since the window was last taken.
#[derive(Clone, Debug, Default)]
pub struct GcWindow {
    pub generations: [GenerationSample; GENERATIONS],
    /// Collections the policy requested (counted whether or not their event was kept).
    pub policy_collections: u64,
    /// The window's events, up to [`GcWindow::MAX_EVENTS`]; `dropped_events` counts the rest.
    pub events: Vec<GcEvent>,
    pub dropped_events: u64,
}

impl GcWindow {
    /// Bound on retained events per window, so a pathological gen0 storm cannot grow memory.
    pub const MAX_EVENTS: usize = 10_000;

    pub fn record(&mut self, event: GcEvent) {
        count(&mut self.generations, &event);
        self.policy_collections += u64::from(event.cause == CollectionCause::Policy);
        if self.events.len() < Self::MAX_EVENTS {
            self.events.push(event);
        } else {
            self.dropped_events += 1;
        }
    }

    pub fn any(&self) -> bool {
        self.generations.iter().any(|g| g.collections > 0)
    }
}

/// Adds one collection to per-generation figures.
fn count(generations: &mut [GenerationSample; GENERATIONS], event: &GcEvent) {
    let gen = &mut generations[usize::from(event.generation).min(GENERATIONS - 1)];
    let pause_ms = event.pause_ns as f64 / 1e6;
    gen.collections += 1;
    gen.collected += event.collected;
    gen.uncollectable += event.uncollectable;
    gen.pause_ms_sum += pause_ms;
    gen.pause_ms_max = gen.pause_ms_max.max(pause_ms);
}

/// Totals since the agent started, for the Prometheus counters: updated at each collection, so
/// a scrape reads them as they are.
#[derive(Clone, Debug, PartialEq)]
pub struct GcTotals {
    pub generations: [GenerationSample; GENERATIONS],
    /// Pauses in seconds, by generation ([`GC_PAUSE_BUCKETS`]).
    pub pauses: [Histogram; GENERATIONS],
    pub policy_collections: u64,
    /// Events not kept because a window hit [`GcWindow::MAX_EVENTS`] (missing from the events CSV;
    /// the per-generation counts include them).
    pub events_dropped: u64,
}

impl Default for GcTotals {
    fn default() -> Self {
        GcTotals {
            generations: Default::default(),
            pauses: std::array::from_fn(|_| Histogram::new(&GC_PAUSE_BUCKETS)),
            policy_collections: 0,
            events_dropped: 0,
        }
    }
}

impl GcTotals {
    /// Counts one collection; `dropped`: its event did not fit in its window.
    pub fn record(&mut self, event: &GcEvent, dropped: bool) {
        count(&mut self.generations, event);
        self.pauses[usize::from(event.generation).min(GENERATIONS - 1)]
            .observe(event.pause_ns as f64 / 1e9);
        self.policy_collections += u64::from(event.cause == CollectionCause::Policy);
        self.events_dropped += u64::from(dropped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(generation: u8, pause_ns: u64, collected: u64) -> GcEvent {
        GcEvent {
            start_time: 0.0,
            generation,
            pause_ns,
            collected,
            uncollectable: 0,
            cause: CollectionCause::Runtime,
            in_flight: None,
            intent: None,
        }
    }

    #[test]
    fn a_stop_during_a_collection_is_not_its_pause() {
        const MS: u64 = 1_000_000;
        // Preempted for a while: the service waited for it all the same.
        assert_eq!(pause_ns(300 * MS, 120 * MS), 300 * MS);
        // Stopped for 12 s in the middle of a 20 ms collection.
        assert_eq!(pause_ns(12_020 * MS, 20 * MS), 20 * MS);
        // A CPU clock a little ahead of the wall clock is no stop.
        assert_eq!(pause_ns(5 * MS, 6 * MS), 5 * MS);
    }

    #[test]
    fn events_read_back_as_written() {
        let path = std::env::temp_dir().join(format!("neurogc-events-{}.csv", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let mut sink =
            crate::csv_sink::CsvSink::open_with_columns(&path, &GcEvent::CSV_COLUMNS).unwrap();
        let mut e = ev(2, 12_345_678, 99);
        e.start_time = 10.5;
        e.cause = CollectionCause::Policy;
        e.in_flight = Some(3);
        e.intent = Some(Intent {
            trigger: Trigger::Quiet,
            predicted_ms: Some(11.0),
            predicted_freed: Some(4200.0),
            why: Some("due: every 40 requests; quiet window: P = 0.95, 0 in flight".into()),
        });
        let mut young = ev(0, 1_000, 5);
        young.in_flight = Some(0);
        sink.write_rows([e.csv_fields(41), young.csv_fields(41)])
            .unwrap();
        drop(sink);
        let (events, warnings) = read_events(&path, "gc").unwrap();
        assert!(warnings.is_empty());
        assert_eq!(
            events[0],
            RecordedEvent {
                time: 10.5,
                generation: 2,
                pause_ms: 12.346,
                collected: Some(99),
                reason: "policy".into(),
                in_flight: Some(3),
                trigger: Some(Trigger::Quiet),
                predicted_ms: Some(11.0),
                predicted_freed: Some(4200.0),
                pid: Some(41),
                why: "due: every 40 requests; quiet window: P = 0.95, 0 in flight".into(),
            }
        );
        assert_eq!(
            (
                events[1].in_flight,
                events[1].trigger,
                events[1].predicted_ms
            ),
            (Some(0), None, None)
        );
        // Files from before the last three columns read with them unknown.
        std::fs::write(
            &path,
            "time,generation,pause_ms,collected,uncollectable,reason\n1.5,1,0.2,4,0,runtime\n",
        )
        .unwrap();
        let (old, _) = read_events(&path, "gc").unwrap();
        assert_eq!(
            (
                old[0].in_flight,
                old[0].trigger,
                old[0].pid,
                old[0].why.as_str()
            ),
            (None, None, None, "")
        );
        std::fs::write(&path, "time,generation,pause_ms,pid\n1.5,1,0.2,-3\n").unwrap();
        let e = read_events(&path, "gc").unwrap_err().to_string();
        assert!(e.contains("gc:2: pid -3 is not a process id"), "{e}");
        std::fs::write(&path, "time,generation,pause_ms,trigger\n1.5,1,0.2,whim\n").unwrap();
        let e = read_events(&path, "gc").unwrap_err().to_string();
        assert!(e.contains("gc:2: unknown trigger \"whim\""), "{e}");
        std::fs::write(&path, "time,generation,pause_ms\n1.5,3,0.2\n").unwrap();
        let e = read_events(&path, "gc").unwrap_err().to_string();
        assert!(
            e.contains("gc:2: generation Some(3.0) is not 0, 1 or 2"),
            "{e}"
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn window_sums_and_maxes_per_generation() {
        let mut w = GcWindow::default();
        w.record(ev(0, 1_000_000, 3));
        w.record(ev(0, 3_000_000, 4));
        w.record(ev(2, 50_000_000, 100));
        assert_eq!(w.generations[0].collections, 2);
        assert_eq!(w.generations[0].collected, 7);
        assert!((w.generations[0].pause_ms_sum - 4.0).abs() < 1e-9);
        assert!((w.generations[0].pause_ms_max - 3.0).abs() < 1e-9);
        assert_eq!(w.generations[1].collections, 0);
        assert!((w.generations[2].pause_ms_max - 50.0).abs() < 1e-9);
        assert!(w.any());
    }

    #[test]
    fn events_are_bounded_and_drops_counted() {
        let mut w = GcWindow::default();
        for _ in 0..GcWindow::MAX_EVENTS + 5 {
            w.record(GcEvent {
                cause: CollectionCause::Policy,
                ..ev(0, 1, 0)
            });
        }
        assert_eq!(w.events.len(), GcWindow::MAX_EVENTS);
        assert_eq!(w.dropped_events, 5);
        assert_eq!(
            w.generations[0].collections as usize,
            GcWindow::MAX_EVENTS + 5
        );
        // Policy collections are counted even when their event was dropped.
        assert_eq!(w.policy_collections as usize, GcWindow::MAX_EVENTS + 5);
    }

    #[test]
    fn totals_count_every_collection_with_its_pause_in_seconds() {
        let mut totals = GcTotals::default();
        totals.record(&ev(2, 3_000_000, 7), false);
        totals.record(&ev(0, 40_000, 1), true);
        assert_eq!(totals.generations[2].collected, 7);
        assert_eq!((totals.pauses[2].count, totals.pauses[0].count), (1, 1));
        assert!((totals.pauses[2].sum - 0.003).abs() < 1e-12);
        assert_eq!(totals.pauses[2].cumulative().nth(5), Some((0.0025, 0)));
        assert_eq!(totals.pauses[2].cumulative().nth(6), Some((0.005, 1)));
        assert_eq!(totals.events_dropped, 1);
    }

    #[test]
    fn csv_row_has_microsecond_pauses_and_reasons() {
        let e = GcEvent {
            start_time: 1_763_782_800.123_456_7,
            generation: 2,
            pause_ns: 12_345_678,
            collected: 7,
            uncollectable: 1,
            cause: CollectionCause::Policy,
            in_flight: Some(2),
            intent: Some(Intent {
                trigger: Trigger::Due,
                predicted_ms: Some(9.5),
                predicted_freed: None,
                why: Some("due: every 40 requests".into()),
            }),
        };
        assert_eq!(
            e.csv_fields(7),
            [
                "1763782800.123457",
                "2",
                "12.346",
                "7",
                "1",
                "policy",
                "2",
                "due",
                "9.500",
                "",
                "7",
                "due: every 40 requests"
            ]
            .map(String::from)
        );
        let e = GcEvent {
            pause_ns: 499,
            ..ev(0, 0, 0)
        };
        assert_eq!(e.csv_fields(1)[2], "0.000");
        assert_eq!(e.csv_fields(1)[5], "runtime");
        assert_eq!(ev(0, 1_000_500, 0).csv_fields(1)[2], "1.001");
        assert_eq!(GcEvent::CSV_COLUMNS.len(), e.csv_fields(1).len());
    }
}
