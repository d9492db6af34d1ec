//! `neurogc report` on a real run directory: `tests/fixtures/bench-2x2` was written by
//! `neurogc bench --policy default --policy threshold:5000,20,20 --repeat 2 --warmup 2s
//! --duration 5s --rate 20 --interval 0.5` on the demo app, then trimmed (samples and GC events
//! near the measured window, load rows and histograms of all tasks only, logs dropped).
//! Variants (interrupted, truncated, A/A, collect, malformed) are made from copies of it.

use neurogc_fuzzkit::copy_dir;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use neurogc_report::{
    aa_floor_file, compare_runs, metric::Section, noise, write_report_with, Floors, Mark, Metric,
    ReportArgs, RunData,
};
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bench-2x2")
}

thread_local! {
    static COPIES: std::cell::RefCell<Vec<PathBuf>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Held by each test: the copies it made are removed when it passes (kept when it fails).
struct Cleanup;

impl Drop for Cleanup {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        for d in COPIES.with(|c| std::mem::take(&mut *c.borrow_mut())) {
            let _ = std::fs::remove_dir_all(&d);
            let _ = std::fs::remove_dir_all(d.with_extension("report"));
        }
    }
}

/// A fresh copy of the fixture run in a temporary directory.
fn run_copy(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "neurogc-report-test-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&fixture(), &dir);
    COPIES.with(|c| c.borrow_mut().push(dir.clone()));
    dir
}

fn edit_json(path: &Path, f: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

/// The rows of the Markdown table that follows `heading`.
fn table_rows<'a>(md: &'a str, heading: &str) -> Vec<&'a str> {
    let start = md
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?} in\n{md}"));
    md[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect()
}

fn cells(row: &str) -> Vec<&str> {
    row.trim_matches('|').split(" | ").map(str::trim).collect()
}

/// Decodes a PNG for real and returns its size.
fn png_size(path: &Path) -> (u32, u32) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    // Not a blank image: some pixels are not white.
    assert!(
        buf[..info.buffer_size()].iter().any(|&b| b < 200),
        "{} is blank",
        path.display()
    );
    (info.width, info.height)
}

#[test]
fn two_policies_two_repetitions_every_row_filled() {
    let _cleanup = Cleanup;
    let dir = run_copy("full");
    let w = write_report_with(&dir, None, None).unwrap();
    assert_eq!(w.readme, dir.join("README.md"));
    let md = std::fs::read_to_string(&w.readme).unwrap();
    assert!(w.warnings.is_empty(), "{:?}", w.warnings);

    // Every table, every metric row, every cell filled: no n/a anywhere in the results.
    for (heading, section) in [
        ("### The seed's table", Section::Seed),
        ("### Latency, beyond the seed's", Section::Latency),
        ("### Garbage collection", Section::Gc),
        ("### Memory", Section::Memory),
    ] {
        let rows = table_rows(&md, heading);
        let expected: Vec<Metric> = Metric::ALL
            .iter()
            .copied()
            .filter(|m| m.section() == section)
            .collect();
        assert_eq!(rows.len(), expected.len(), "{heading}");
        for (row, m) in rows.iter().zip(&expected) {
            let c = cells(row);
            assert_eq!(c[0], m.label());
            assert_eq!(c[1], m.unit());
            assert_eq!(c.len(), 6, "{row}"); // metric, unit, baseline, candidate, Δ, floor
            for cell in &c[2..5] {
                assert!(!cell.contains("n/a"), "{heading}: {row}");
            }
            assert!(
                ["🟢", "🔴", "⚪", "🔵"].iter().any(|s| c[4].starts_with(s)),
                "{row}"
            );
            assert!(c[4].contains("(p "), "{row}");
        }
    }
    // The seed's ten rows, in the seed's order.
    let seed: Vec<String> = table_rows(&md, "### The seed's table")
        .iter()
        .map(|r| cells(r)[0].to_string())
        .collect();
    assert_eq!(
        seed,
        [
            "Avg CPU",
            "Avg Memory",
            "Avg Disk Read",
            "Avg Disk Write",
            "Avg Net Sent",
            "Avg Net Recv",
            "P95",
            "P99",
            "Avg RPS",
            "GC Events"
        ]
    );

    // Headers name the baseline and the candidate with their trial counts.
    assert!(md.contains("default<br>(baseline, without · n=2)"), "{md}");
    assert!(md.contains("threshold:5000,20,20<br>(with · n=2)"));
    // Hyperfine-style lines.
    assert!(md.contains("threshold:5000,20,20: p99 "), "{md}");
    assert!(md.contains("× higher than default") || md.contains("× lower than default"));
    // Values: HDR percentiles in ms, RPS 20, GC events from gc-events.csv.
    let a = &w.analysis;
    let base = a.baseline();
    assert!((base.median(Metric::Rps).unwrap() - 20.0).abs() < 0.5);
    let p99 = base.median(Metric::P99).unwrap();
    assert!(p99 > 1.0 && p99 < 100.0, "{p99}");
    assert!(base.median(Metric::P50).unwrap() <= p99);
    assert!(p99 <= base.median(Metric::Max).unwrap());
    assert!(
        base.median(Metric::GcEvents).unwrap() > a.policies[1].median(Metric::GcEvents).unwrap()
    );
    assert!(base.median(Metric::RssPeak).unwrap() > 10.0);
    let share = base.median(Metric::GcCpuShare).unwrap();
    assert!(share > 0.0 && share < 100.0, "{share}");
    // Threshold 5000 makes far fewer gen-0 collections: significant, but with no floor measured
    // for this design it is shown, not judged.
    let gen0 = a.cell(1, Metric::Gen0Count).unwrap();
    assert!(gen0.comparison.is_significant());
    assert_eq!(gen0.mark, Mark::NoFloor);
    assert!(md.contains("(p 0.0") && md.contains("no floor)"), "{md}");

    // Trials, configuration, system, policies.
    assert_eq!(table_rows(&md, "## Trials").len(), 4);
    assert!(md.contains("open loop (wrk2 style): 20.00 req/s"));
    assert!(md.contains("server on CPU [0], load generator on CPU [1]"));
    assert!(md.contains("| Cores | 2 |"));
    assert!(md.contains("| Python | 3.11"));
    // The fixture's design (sequential, 2 trials of 4 s) has no committed floor.
    assert!(
        md.contains(
            "Noise floor: **none measured with this run's design** (sequential, 2 trials of"
        ),
        "{md}"
    );

    // Four charts, linked relatively, real PNGs.
    assert_eq!(w.charts.len(), 4);
    for name in ["memory", "latency", "gc-timeline", "rps"] {
        let rel = format!("charts/{name}.png");
        assert!(md.contains(&format!("]({rel})")), "{rel}");
        let (width, height) = png_size(&dir.join(&rel));
        assert_eq!(width, 1000);
        assert!(height >= 400);
    }
}

#[test]
fn truncated_last_lines_are_warnings_not_errors() {
    let _cleanup = Cleanup;
    let dir = run_copy("truncated");
    let t = dir.join("trials/01-default-r1");
    // A crash mid-write: the last row of each append-only file stops mid-line.
    for (file, partial) in [
        ("samples.csv", "1795334740.1,3.9,0.2"),
        ("gc-events.csv", "1795334740.2,0,0."),
        ("load.jsonl", "{\"type\":\"second\",\"t\":17953"),
    ] {
        let mut text = std::fs::read_to_string(t.join(file)).unwrap();
        text.push_str(partial);
        std::fs::write(t.join(file), text).unwrap();
    }
    let w = write_report_with(&dir, None, None).unwrap();
    assert_eq!(w.warnings.len(), 3, "{:?}", w.warnings);
    for file in ["samples.csv", "gc-events.csv", "load.jsonl"] {
        assert!(
            w.warnings
                .iter()
                .any(|x| x.contains(&format!("trials/01-default-r1/{file}:"))
                    && x.contains("incomplete")),
            "{file}: {:?}",
            w.warnings
        );
    }
    let md = std::fs::read_to_string(&w.readme).unwrap();
    assert!(md.contains("## Warnings"));
    assert!(md.contains("incomplete last line"));
    // The rest of the trial still counts.
    assert_eq!(w.analysis.baseline().used.len(), 2);
}

/// The report of `dir`; the row of `trial` in its Trials table.
fn trial_row(md: &str, trial: &str) -> String {
    table_rows(md, "## Trials")
        .into_iter()
        .find(|r| r.contains(&format!("`{trial}`")))
        .unwrap_or_else(|| panic!("no row for {trial} in\n{md}"))
        .to_string()
}

/// What a test does to a file's text.
type Damage = dyn Fn(&str) -> String;

#[test]
fn a_damaged_trial_is_left_out_and_the_report_goes_on() {
    let _cleanup = Cleanup;
    // A torn row in the middle, a value that is not a finite number, a 0-byte file, a broken
    // JSON line: each damages its trial only, named with its file and line.
    let torn = |text: &str| {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines[3] = lines[3].replacen(',', ",oops,", 1);
        lines.join("\n") + "\n"
    };
    let nan = |text: &str| {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut cells: Vec<&str> = lines[4].split(',').collect();
        cells[1] = "nan";
        lines[4] = cells.join(",");
        lines.join("\n") + "\n"
    };
    // (trial, file, what is done to it, the reason the report gives)
    let cases: [(&str, &str, &Damage, &str); 4] = [
        (
            "03-default-r2",
            "samples.csv",
            &torn,
            "trials/03-default-r2/samples.csv:4: 47 fields where the header has 46",
        ),
        (
            "03-default-r2",
            "samples.csv",
            &nan,
            "trials/03-default-r2/samples.csv:5: column \"cpu\": \"nan\" is not a finite number",
        ),
        (
            "03-default-r2",
            "samples.csv",
            &|_| String::new(),
            "trials/03-default-r2/samples.csv: empty (0 bytes",
        ),
        (
            "02-threshold_5000_20_20-r1",
            "load.jsonl",
            &|text| format!("{{broken\n{text}"),
            "trials/02-threshold_5000_20_20-r1/load.jsonl:1: malformed JSON",
        ),
    ];
    for (trial, file, damage, reason) in cases {
        let dir = run_copy("damaged");
        let path = dir.join("trials").join(trial).join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, damage(&text)).unwrap();
        let w = write_report_with(&dir, None, None).unwrap();
        assert!(
            w.warnings.iter().any(|x| x
                .starts_with(&format!("trial {trial} is damaged and left out: {reason}"))),
            "{reason}: {:?}",
            w.warnings
        );
        let md = std::fs::read_to_string(&w.readme).unwrap();
        assert!(
            md.contains(&format!("trial `{trial}` is damaged (left out): {reason}")),
            "{md}"
        );
        assert_eq!(cells(&trial_row(&md, trial))[3], "damaged");
        // The other three trials count as before.
        let used: usize = w.analysis.policies.iter().map(|p| p.used.len()).sum();
        assert_eq!(used, 3, "{reason}");
    }
}

#[test]
fn a_run_whose_process_was_killed_reads_as_interrupted() {
    let _cleanup = Cleanup;
    let dir = run_copy("killed");
    // `kill -9` mid-run: run.json still says running, the last trial measuring.
    let mut child = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let writer = neurogc_record::Writer::of(child.id());
    child.kill().unwrap();
    child.wait().unwrap();
    edit_json(&dir.join("run.json"), |v| {
        v["status"] = "running".into();
        v["finished"] = Value::Null;
        v["writer"] = serde_json::to_value(&writer).unwrap();
    });
    let t4 = dir.join("trials/04-threshold_5000_20_20-r2");
    edit_json(&t4.join("trial.json"), |v| {
        v["status"] = "measuring".into();
        v["measure_end"] = Value::Null;
    });
    let w = write_report_with(&dir, None, None).unwrap();
    let md = std::fs::read_to_string(&w.readme).unwrap();
    let why = format!(
        "the run's process {} is gone; it was killed or crashed",
        writer.pid
    );
    assert!(md.contains("status **interrupted**"), "{md}");
    assert!(
        md.contains(&format!("the run was **interrupted** ({why})")),
        "{md}"
    );
    assert!(!md.contains("still running"), "{md}");
    let row = trial_row(&md, "04-threshold_5000_20_20-r2");
    assert_eq!(cells(&row)[3], "interrupted", "{row}");
    assert!(
        row.contains("measuring when the run's process died"),
        "{row}"
    );
    assert!(
        w.warnings.iter().any(|x| x.contains(&why)),
        "{:?}",
        w.warnings
    );
}

#[test]
fn malformed_run_json_is_a_clear_error() {
    let _cleanup = Cleanup;
    let dir = run_copy("bad-run-json");
    std::fs::write(dir.join("run.json"), "{\"schema\": 1, \"kind\": \"bench\",").unwrap();
    let e = format!("{:#}", write_report_with(&dir, None, None).unwrap_err());
    assert!(
        e.contains(&format!("{}: malformed", dir.join("run.json").display())),
        "{e}"
    );

    let dir = run_copy("run-json-no-policies");
    edit_json(&dir.join("run.json"), |v| {
        v.as_object_mut().unwrap().remove("policies");
    });
    let e = format!("{:#}", write_report_with(&dir, None, None).unwrap_err());
    assert!(
        e.contains("run.json: malformed: missing field `policies`"),
        "{e}"
    );

    let e = format!(
        "{:#}",
        write_report_with(Path::new("/nonexistent/run"), None, None).unwrap_err()
    );
    assert!(e.contains("/nonexistent/run: not a run directory"), "{e}");

    // A trial folder that is a symlink out of the run is refused, not followed.
    let dir = run_copy("trial-symlink-out");
    let t2 = dir.join("trials/02-threshold_5000_20_20-r1");
    std::fs::remove_dir_all(&t2).unwrap();
    std::os::unix::fs::symlink("/etc", &t2).unwrap();
    let e = format!("{:#}", write_report_with(&dir, None, None).unwrap_err());
    assert!(
        e.contains(
            "trial \"trials/02-threshold_5000_20_20-r1\" leads to /etc, outside the run directory"
        ),
        "{e}"
    );

    let dir = run_copy("bad-trial-json");
    std::fs::write(
        dir.join("trials/02-threshold_5000_20_20-r1/trial.json"),
        "[]",
    )
    .unwrap();
    let e = format!("{:#}", write_report_with(&dir, None, None).unwrap_err());
    assert!(
        e.contains("02-threshold_5000_20_20-r1/trial.json: malformed"),
        "{e}"
    );
}

#[test]
fn interrupted_run_reports_what_was_measured() {
    let _cleanup = Cleanup;
    let dir = run_copy("interrupted");
    edit_json(&dir.join("run.json"), |v| {
        v["status"] = "interrupted".into();
        v["finished"] = Value::Null;
    });
    // The last trial was cut mid-measurement: no measure_end, no summary, no histogram.
    let t4 = dir.join("trials/04-threshold_5000_20_20-r2");
    edit_json(&t4.join("trial.json"), |v| {
        v["status"] = "interrupted".into();
        v["measure_end"] = Value::Null;
        v["load_summary"] = Value::Null;
    });
    let load = std::fs::read_to_string(t4.join("load.jsonl")).unwrap();
    let kept: Vec<&str> = load.lines().take(3).collect();
    std::fs::write(t4.join("load.jsonl"), kept.join("\n") + "\n").unwrap();
    std::fs::remove_file(t4.join("latency.hlog")).unwrap();
    // The third never reached its window; its files are gone.
    let t3 = dir.join("trials/03-default-r2");
    edit_json(&t3.join("trial.json"), |v| {
        v["status"] = "failed".into();
        v["error"] = "the service exited during start-up".into();
        v["measure_start"] = Value::Null;
        v["measure_end"] = Value::Null;
        v["load_summary"] = Value::Null;
    });
    for f in ["samples.csv", "gc-events.csv", "load.jsonl", "latency.hlog"] {
        std::fs::remove_file(t3.join(f)).unwrap();
    }

    // A floor with no metrics, so the built-in floor (if any) does not decide the marks below.
    let no_floor = dir.join("no-floor.json");
    std::fs::write(&no_floor, r#"{"metrics": {}}"#).unwrap();
    let w = write_report_with(&dir, None, Some(&no_floor)).unwrap();
    let md = std::fs::read_to_string(&w.readme).unwrap();
    assert!(md.contains("the run was **interrupted**"), "{md}");
    assert!(
        md.contains("trial `03-default-r2` is failed (nothing measured)"),
        "{md}"
    );
    assert!(md.contains("the service exited during start-up"));
    assert!(md.contains("trial `04-threshold_5000_20_20-r2` is interrupted (measured in part)"));
    let a = &w.analysis;
    assert_eq!(a.baseline().used.len(), 1);
    // The candidate still has a complete trial: the partial one is shown but not used.
    assert_eq!(a.policies[1].used.len(), 1);
    assert!(!a.policies[1].partial_only);
    // One trial per side: no test, never marked.
    let c = a.cell(1, Metric::P99).unwrap();
    assert_eq!(c.mark, Mark::NotSignificant);
    assert!(md.contains("no test: 1 trial"));
    // The partial trial's window was cut at its last record, and its RPS comes from its rows.
    let t = &a.trials[3];
    assert!(t.window_s().unwrap() > 0.0);
    assert!(t.get(Metric::Rps).is_some());
    // Neither a histogram nor a summary: per-second percentiles do not merge, so none.
    assert!(t.get(Metric::P99).is_none());
}

#[test]
fn partial_trials_are_used_when_nothing_completed() {
    let _cleanup = Cleanup;
    let dir = run_copy("partial-only");
    for t in ["02-threshold_5000_20_20-r1", "04-threshold_5000_20_20-r2"] {
        edit_json(&dir.join(format!("trials/{t}/trial.json")), |v| {
            v["status"] = "interrupted".into();
        });
    }
    let w = write_report_with(&dir, None, None).unwrap();
    let md = std::fs::read_to_string(&w.readme).unwrap();
    assert!(w.analysis.policies[1].partial_only);
    assert!(
        md.contains("its values come from 2 partial trial(s)"),
        "{md}"
    );
    assert!(md.contains("⚠️ partial"));
}

#[test]
fn a_trial_without_requests_has_no_latency_but_a_report() {
    let _cleanup = Cleanup;
    let dir = run_copy("no-requests");
    let t = dir.join("trials/01-default-r1");
    // The load generator reached nothing: every second empty, an empty histogram log.
    let mut out = String::new();
    for line in std::fs::read_to_string(t.join("load.jsonl"))
        .unwrap()
        .lines()
    {
        let mut v: Value = serde_json::from_str(line).unwrap();
        if v["type"] == "second" {
            v["requests"] = 0.into();
            v["rps"] = 0.0.into();
            for k in [
                "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms", "mean_ms",
            ] {
                v[k] = Value::Null;
            }
            out.push_str(&serde_json::to_string(&v).unwrap());
            out.push('\n');
        }
    }
    std::fs::write(t.join("load.jsonl"), out).unwrap();
    let hlog = std::fs::read_to_string(t.join("latency.hlog")).unwrap();
    let header: Vec<&str> = hlog.lines().filter(|l| l.starts_with('#')).collect();
    std::fs::write(t.join("latency.hlog"), header.join("\n") + "\n").unwrap();
    edit_json(&t.join("trial.json"), |v| v["load_summary"] = Value::Null);

    let w = write_report_with(&dir, None, None).unwrap();
    let md = std::fs::read_to_string(&w.readme).unwrap();
    let trial = &w.analysis.trials[0];
    assert_eq!(trial.requests, Some(0));
    assert!(trial.get(Metric::P99).is_none());
    assert_eq!(trial.get(Metric::Rps), Some(0.0));
    assert!(
        md.contains("no request completed in the measured window"),
        "{md}"
    );
    // The baseline's medians come from its other trial.
    assert_eq!(w.analysis.baseline().values[&Metric::P99].len(), 1);
}

#[test]
fn missing_gc_events_and_histograms_fall_back() {
    let _cleanup = Cleanup;
    let dir = run_copy("fallbacks");
    let t = dir.join("trials/01-default-r1");
    std::fs::remove_file(t.join("gc-events.csv")).unwrap();
    std::fs::remove_file(t.join("latency.hlog")).unwrap();
    // An old agent: no overlap columns.
    let text = std::fs::read_to_string(t.join("samples.csv")).unwrap();
    let stripped: Vec<String> = text
        .lines()
        .map(|l| {
            let mut c: Vec<&str> = l.split(',').collect();
            c.truncate(c.len() - 2);
            c.join(",")
        })
        .collect();
    std::fs::write(t.join("samples.csv"), stripped.join("\n") + "\n").unwrap();

    let full = write_report_with(&run_copy("reference"), None, None).unwrap();
    let w = write_report_with(&dir, None, None).unwrap();
    let (a, b) = (&w.analysis.trials[0], &full.analysis.trials[0]);
    // GC counts from the samples' per-interval columns agree with gc-events.csv's rows.
    assert!(a
        .notes
        .iter()
        .any(|n| n.contains("no gc-events.csv: GC counts and pauses from samples.csv")));
    let (x, y) = (
        a.get(Metric::Gen0Count).unwrap(),
        b.get(Metric::Gen0Count).unwrap(),
    );
    assert!((x - y).abs() <= 3.0, "{x} vs {y}");
    // Percentiles from load.jsonl's summary agree with the histogram's (same HDR data).
    let (x, y) = (a.get(Metric::P99).unwrap(), b.get(Metric::P99).unwrap());
    assert!((x - y).abs() / y < 0.01, "{x} vs {y}");
    assert!(a.get(Metric::GcOverlap).is_none());
    // n/a in the trial's cells, and the baseline median from its other trial.
    assert_eq!(w.analysis.baseline().values[&Metric::GcOverlap].len(), 1);
}

fn make_aa(name: &str) -> PathBuf {
    let dir = run_copy(name);
    edit_json(&dir.join("run.json"), |v| {
        v["policies"][1]["label"] = "default-2".into();
        v["policies"][1]["spec"] = "default".into();
        for t in v["trials"].as_array_mut().unwrap() {
            if t["label"] != "default" {
                t["label"] = "default-2".into();
            }
        }
    });
    for t in ["02-threshold_5000_20_20-r1", "04-threshold_5000_20_20-r2"] {
        edit_json(&dir.join(format!("trials/{t}/trial.json")), |v| {
            v["label"] = "default-2".into();
            v["spec"] = "default".into();
        });
    }
    dir
}

#[test]
fn aa_run_measures_and_writes_its_noise_floor() {
    let _cleanup = Cleanup;
    let dir = make_aa("aa");
    let w = write_report_with(&dir, None, None).unwrap();
    let md = std::fs::read_to_string(&w.readme).unwrap();
    let aa = w.analysis.aa.as_ref().expect("an A/A run");
    assert!(md.contains("### A/A check"));
    assert!(md.contains("it is an **A/A run**"));
    assert!(md.contains("|Δ p99| = "));
    assert!(md.contains("**PASS**") || md.contains("**FAIL**"));
    assert!(aa.floors.contains_key(&Metric::P99));

    let run = RunData::load(&dir).unwrap();
    let file = aa_floor_file(&run, &w.analysis).unwrap();
    assert!(file.metrics["p99"] > 0.0);
    assert_eq!(file.run.as_deref(), Some("fixture"));
    assert!(file.protocol.as_deref().unwrap().contains("sequential"));
    let path = dir.join("floor/noise-floor.json");
    noise::write(&path, &file).unwrap();
    let back = Floors::read(&path).unwrap();
    assert_eq!(back.file, file);

    // The floor judges a later report: it is printed next to the differences.
    let other = run_copy("with-floor");
    let w = write_report_with(&other, None, Some(&path)).unwrap();
    let md = std::fs::read_to_string(&w.readme).unwrap();
    assert!(
        md.contains(&format!("from `--noise-floor {}`", path.display())),
        "{md}"
    );
    let row = table_rows(&md, "### The seed's table")
        .into_iter()
        .find(|r| r.starts_with("| P99 |"))
        .unwrap();
    assert!(cells(row)[5].starts_with('±'), "{row}");
    // ...with the verdict of the A/A run it came from.
    let mark = if aa.pass() { "✅" } else { "❌" };
    let verdict = aa.summary().verdict();
    assert!(verdict.ends_with(if aa.pass() { "PASS" } else { "FAIL" }));
    assert!(
        md.contains(&format!("Its A/A check: {mark} {verdict}")),
        "{md}"
    );
    // With a floor of ±1000 %, nothing is beyond it.
    std::fs::write(
        dir.join("huge.json"),
        r#"{"metrics": {"gc0_count": 10.0, "p99": 10.0}}"#,
    )
    .unwrap();
    let w = write_report_with(&run_copy("huge-floor"), None, Some(&dir.join("huge.json"))).unwrap();
    assert_eq!(
        w.analysis.cell(1, Metric::Gen0Count).unwrap().mark,
        Mark::WithinNoise
    );

    // Not an A/A run: no floor to write.
    let run = RunData::load(&other).unwrap();
    let e = aa_floor_file(&run, &w.analysis).unwrap_err().to_string();
    assert!(e.contains("not an A/A run"), "{e}");
}

#[test]
fn run_writes_noise_floor_and_checks_arguments() {
    let _cleanup = Cleanup;
    let dir = make_aa("aa-run");
    let floor = dir.join("nf.json");
    let code = neurogc_report::run(ReportArgs {
        run_dirs: vec![dir.clone()],
        write_noise_floor: Some(floor.clone()),
        ..ReportArgs::default()
    })
    .unwrap();
    assert_eq!(code, 0);
    let written = Floors::read(&floor).unwrap();
    assert!(written.get(Metric::P99).is_some());
    // The pooled p99's floor too (the fixture's trials have latency histograms).
    assert!(written
        .file
        .p99_all
        .is_some_and(|f| f.is_finite() && f >= 0.0));

    let e = neurogc_report::run(ReportArgs {
        run_dirs: vec![dir.clone()],
        compare: true,
        ..ReportArgs::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("--compare needs at least two"), "{e}");
    let e = neurogc_report::run(ReportArgs {
        run_dirs: vec![dir.clone()],
        noise_floor: Some(dir.join("missing.json")),
        ..ReportArgs::default()
    })
    .unwrap_err();
    assert!(
        format!("{e:#}").contains("missing.json: cannot read"),
        "{e:#}"
    );
}

#[test]
fn out_dir_leaves_the_run_untouched() {
    let _cleanup = Cleanup;
    let dir = run_copy("out");
    let out = dir.with_extension("report");
    let w = write_report_with(&dir, Some(&out), None).unwrap();
    assert_eq!(w.readme, out.join("README.md"));
    assert!(out.join("charts/rps.png").exists());
    assert!(!dir.join("README.md").exists());
}

#[test]
fn collect_run_has_one_column_and_no_comparison() {
    let _cleanup = Cleanup;
    let dir = run_copy("collect");
    edit_json(&dir.join("run.json"), |v| {
        v["kind"] = "collect".into();
        v["policies"].as_array_mut().unwrap().truncate(1);
        v["trials"].as_array_mut().unwrap().truncate(1);
        v["repeat"] = 1.into();
    });
    let w = write_report_with(&dir, None, None).unwrap();
    let md = std::fs::read_to_string(&w.readme).unwrap();
    assert!(md.starts_with("# NeuroGC collect: fixture"));
    assert!(!md.contains("## Summary"));
    assert!(!md.contains("Δ "));
    let rows = table_rows(&md, "### The seed's table");
    assert_eq!(rows.len(), 10);
    for r in rows {
        assert_eq!(cells(r).len(), 3, "{r}");
        assert!(!r.contains("n/a"), "{r}");
    }
}

#[test]
fn compare_two_runs() {
    let _cleanup = Cleanup;
    let a = run_copy("cmp-a");
    let b = make_aa("cmp-b");
    // A model-driven candidate in the first run, to show the model column.
    edit_json(&a.join("run.json"), |v| {
        v["policies"][1]["model"] = serde_json::json!({
            "format": "neurogc-model/1",
            "architecture": {"kind": "lstm", "hidden": 64, "layers": 2, "dropout": 0.2},
            "features": ["cpu", "mem"], "window": 10, "threshold": 0.7, "target": "seed",
            "normalization": {"mean": [0.0, 0.0], "std": [1.0, 1.0]}
        });
    });
    let (md, warnings) = compare_runs(&[a.clone(), b.clone()], None).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let name_a = a.file_name().unwrap().to_string_lossy().to_string();
    let name_b = b.file_name().unwrap().to_string_lossy().to_string();
    assert!(md.starts_with("# NeuroGC: 2 runs compared"));
    // One row per (run, policy): 2 + 2.
    let rows = table_rows(&md, "## Policies across runs");
    assert_eq!(rows.len(), 4, "{md}");
    assert!(rows[0].contains(&name_a) && rows[0].contains("default (baseline)"));
    assert!(rows[1].contains("| lstm |"), "{}", rows[1]);
    assert!(rows[1].contains("(p "), "{}", rows[1]);
    assert!(rows[3].contains(&name_b) && rows[3].contains("default-2"));
    // `default` is in both runs: run over run against its first occurrence.
    let rr = table_rows(&md, "### default\n");
    assert_eq!(rr.len(), 2);
    assert!(!rr[0].contains("(p "));
    assert!(
        rr[1].contains(&name_b) && rr[1].contains("(p "),
        "{}",
        rr[1]
    );
    assert!(md.contains(&format!("`{name_b}` is an A/A run")));

    // --out FILE.md writes the same Markdown.
    let out = a.join("cmp/compare.md");
    neurogc_report::run(ReportArgs {
        run_dirs: vec![a.clone(), b.clone()],
        compare: true,
        out: Some(out.clone()),
        ..ReportArgs::default()
    })
    .unwrap();
    assert_eq!(std::fs::read_to_string(out).unwrap(), md);
}

#[test]
fn rate_search_and_models_are_shown() {
    let _cleanup = Cleanup;
    let dir = run_copy("rate-auto");
    edit_json(&dir.join("run.json"), |v| {
        v["load"] = serde_json::json!({"mode": "open", "rate": 24.0, "rate_source": "auto",
            "auto": {"sustainable_rps": 40.0, "fraction": 0.6, "limited_by": "default"}});
        v["policies"][1]["model"] = serde_json::json!({
            "format": "neurogc-model/1",
            "architecture": {"kind": "transformer", "d_model": 64, "heads": 4, "layers": 2,
                             "ff_dim": 128, "dropout": 0.2},
            "features": ["cpu"], "window": 10, "threshold": 0.7, "target": "seed",
            "normalization": {"mean": [0.0], "std": [1.0]},
            "data": [{"path": "/x/training_data.csv", "sha256": "0", "rows": 57}],
            "metrics": {"epochs": 100, "val_loss": 0.0024},
            "training": {"optimizer": "adam", "lr": 0.001}
        });
    });
    std::fs::write(
        dir.join("rate-search.json"),
        r#"{"start_rps": 5.0, "probe_s": 5.0, "fraction": 0.6, "sustainable_rps": 40.0,
            "limited_by": "default", "rate": 24.0,
            "policies": [{"label": "default", "sustainable_rps": 40.0, "probes": [
              {"rate": 5.0, "achieved": 5.0, "p50_ms": 2.1, "p99_ms": 6.0, "failures": 0,
               "dropped": 0, "sustained": true, "verdict": "sustained"},
              {"rate": 80.0, "achieved": 61.0, "p50_ms": 900.0, "p99_ms": 2100.0, "failures": 0,
               "dropped": 0, "sustained": false, "verdict": "achieved 76 % of the target"}]}]}"#,
    )
    .unwrap();
    let w = write_report_with(&dir, None, None).unwrap();
    let md = std::fs::read_to_string(&w.readme).unwrap();
    assert!(
        md.contains("rate auto: sustainable 40.00 req/s found for default, run at 60 %"),
        "{md}"
    );
    assert!(md.contains("### Rate search (`--rate auto`)"));
    assert_eq!(table_rows(&md, "### Rate search").len(), 2);
    assert!(md.contains("achieved 76 % of the target"));
    assert!(
        md.contains("**transformer** (d_model 64, dropout 0.2, ff_dim 128, heads 4, layers 2)"),
        "{md}"
    );
    assert!(md.contains("trained on 57 rows of training_data.csv"));
    assert!(md.contains("optimizer adam"));
    assert!(
        !md.contains("found earlier was checked"),
        "no check without an earlier search"
    );
    // A capacity found earlier (the suite's explore run) and checked again before the load:
    // held, and not held (searched again).
    for (sustained, said) in [
        (
            true,
            "default sustained it again (achieved 40.00 req/s, p50 2.50 ms: sustained).",
        ),
        (
            false,
            "default no longer sustained it (achieved 40.00 req/s, p50 2.50 ms: queueing), so \
             the capacity was searched again.",
        ),
    ] {
        edit_json(&dir.join("rate-search.json"), |v| {
            v["recheck"] = serde_json::json!({"earlier_rps": 40.0, "label": "default",
                "probes": [{"rate": 40.0, "achieved": 40.0, "p50_ms": 2.5, "p99_ms": 9.0,
                    "failures": 0, "dropped": 0, "sustained": sustained,
                    "verdict": if sustained { "sustained" } else { "queueing" }}]});
        });
        let w = write_report_with(&dir, None, None).unwrap();
        let md = std::fs::read_to_string(&w.readme).unwrap();
        let want = format!("The 40.00 req/s found earlier was checked before the load: {said}");
        assert!(md.contains(&want), "{want}\n{md}");
    }
}

/// `text` (a CSV) with column `name` set to `value` in every row (added when it is missing).
fn with_column(text: &str, name: &str, value: &str) -> String {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header.iter().position(|c| *c == name);
    let mut out = String::new();
    let mut head = header.join(",");
    if at.is_none() {
        head.push_str(&format!(",{name}"));
    }
    out.push_str(&head);
    out.push('\n');
    for line in lines {
        let mut cells: Vec<String> = line.split(',').map(String::from).collect();
        match at {
            Some(i) => cells[i] = value.to_string(),
            None => cells.push(value.to_string()),
        }
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

#[test]
fn a_service_of_several_processes_is_summed_and_shown_per_process() {
    let _cleanup = Cleanup;
    let single = RunData::load(&fixture()).unwrap();
    let dir = run_copy("workers");
    let trial = dir.join("trials/01-default-r1");
    let samples = std::fs::read_to_string(trial.join("samples.csv")).unwrap();
    let events = std::fs::read_to_string(trial.join("gc-events.csv")).unwrap();
    // Two workers with the first process' rows: one written now (pid columns in both files),
    // one by an older agent (GC events without a pid column: the file's name says it).
    std::fs::write(
        trial.join("samples-101.csv"),
        with_column(&samples, "pid", "101"),
    )
    .unwrap();
    std::fs::write(
        trial.join("gc-events-101.csv"),
        with_column(&events, "pid", "101"),
    )
    .unwrap();
    std::fs::write(
        trial.join("samples-102.csv"),
        with_column(&samples, "pid", "102"),
    )
    .unwrap();
    std::fs::write(trial.join("gc-events-102.csv"), &events).unwrap();

    let run = RunData::load(&dir).unwrap();
    let t = &run.trials[0];
    let s = t.samples.as_ref().unwrap();
    let first_pid = s.rows[0].pid.unwrap();
    assert_eq!(s.processes(), vec![Some(first_pid), Some(101), Some(102)]);
    let pids: std::collections::BTreeSet<Option<u32>> = t
        .gc_events
        .as_ref()
        .unwrap()
        .iter()
        .map(|e| e.pid)
        .collect();
    assert_eq!(pids, [Some(101), Some(102), Some(first_pid)].into());

    let one = neurogc_report::trial::compute(&single.trials[0], Some(0.5));
    let three = neurogc_report::trial::compute(t, Some(0.5));
    let ratio = |m: Metric| three.get(m).unwrap() / one.get(m).unwrap();
    // Three processes of the same use: three times the service's CPU, memory, GC work.
    for m in [
        Metric::Cpu,
        Metric::RssMean,
        Metric::RssPeak,
        Metric::GcEvents,
        Metric::GcTotal,
    ] {
        assert!((ratio(m) - 3.0).abs() < 1e-9, "{m:?}: {}", ratio(m));
    }
    // Shares stay shares.
    assert!((ratio(Metric::GcCpuShare) - 1.0).abs() < 1e-9);

    let rows = neurogc_report::processes::of_trial(t);
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1].pid, Some(101));
    assert_eq!(rows[0].collections, rows[2].collections);
    assert!(rows[0].collections.unwrap().iter().sum::<u64>() > 0);

    let w = write_report_with(&dir, None, None).unwrap();
    let md = std::fs::read_to_string(&w.readme).unwrap();
    let table = table_rows(&md, "## Processes");
    assert_eq!(table.len(), 3, "{md}");
    assert_eq!(cells(table[2])[1], "102");
    // A run of single processes has no such section.
    let md = std::fs::read_to_string(
        write_report_with(&run_copy("single"), None, None)
            .unwrap()
            .readme,
    )
    .unwrap();
    assert!(!md.contains("## Processes"));
}
