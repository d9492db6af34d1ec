//! The run's README.md.

use std::fmt::Write as _;

use neurogc_load::Shape;
use neurogc_model::ModelMeta;
use neurogc_record::{AppInfo, Liveness, LoadInfo, RateRecheck, RateSource, RunKind, RunStatus};

use crate::aggregate::{bootstrap, Analysis, PolicyStats, AA_P99_BOUND};
use crate::charts::Charts;
use crate::format::{self, cell_text, ci, delta, num, pct, pct_abs, seconds, utc, value};
use crate::metric::{Metric, Section, SUMMARY_METRICS};
use crate::noise::Design;
use crate::pooled;
use crate::rundir::RunData;
use crate::trial::Usable;

/// Renders the report. `warnings` are the run's and the report's own (charts, floors).
pub fn render(run: &RunData, a: &Analysis, charts: &Charts, warnings: &[String]) -> String {
    let mut md = String::new();
    let info = &run.info;
    let collect = info.kind == RunKind::Collect || a.policies.len() == 1;
    let _ = writeln!(md, "# NeuroGC {}: {}\n", info.kind, cell_text(&info.name));
    let mut line = vec![format!("status **{}**", info.status)];
    line.push(format!("started {}", utc(info.created)));
    if let Some(f) = info.finished {
        line.push(format!("took {}", seconds((f - info.created).round())));
    }
    line.push(format!("{} trials", a.trials.len()));
    if !collect {
        line.push(format!("baseline **{}**", cell_text(&a.baseline().label)));
    }
    let _ = writeln!(md, "{}\n", line.join(" · "));
    flags(&mut md, run, a);

    if !collect {
        summary(&mut md, a);
    }
    results(&mut md, a, collect);
    if !collect {
        noise_section(&mut md, run, a);
    }
    crate::collections::section(&mut md, &crate::collections::summarize(run, a));
    trials(&mut md, a);
    crate::processes::section(&mut md, run);
    charts_section(&mut md, charts);
    configuration(&mut md, run);
    policies(&mut md, run);
    system(&mut md, run);
    if !warnings.is_empty() {
        let _ = writeln!(md, "## Warnings\n");
        for w in warnings {
            let _ = writeln!(md, "- {}", w);
        }
        md.push('\n');
    }
    method(&mut md, collect);
    md
}

/// Loud notes at the top: the run or trials did not finish, a policy has no complete trial.
fn flags(md: &mut String, run: &RunData, a: &Analysis) {
    let mut out = Vec::new();
    match run.info.status {
        RunStatus::Complete => {}
        RunStatus::Running => out.push(match run.info.writer.as_ref().filter(|w| w.liveness() == Liveness::Alive) {
            Some(w) => format!("the run is **still running** (its process {} is alive): this report shows what was measured so far", w.pid),
            None => "the run is **still running** (or died without recording its end): this report shows what was measured so far".to_string(),
        }),
        RunStatus::Interrupted => out.push(format!(
            "the run was **interrupted**{}: this report shows what was measured before",
            run.info
                .error
                .as_deref()
                .map(|e| format!(" ({})", cell_text(e)))
                .unwrap_or_default()
        )),
        other @ RunStatus::Failed => out.push(format!(
            "the run ended with status **{other}**{}: this report shows what was measured",
            run.info
                .error
                .as_deref()
                .map(|e| format!(" ({})", cell_text(e)))
                .unwrap_or_default()
        )),
    }
    let expected = run.info.repeat as usize * run.info.policies.len();
    if run.info.kind == RunKind::Bench && a.trials.len() < expected {
        out.push(format!(
            "{} of the {expected} planned trials ran",
            a.trials.len()
        ));
    }
    for t in &a.trials {
        if t.usable != Usable::Complete {
            out.push(format!(
                "trial `{}` is {} ({}){}",
                t.name,
                t.status_text(),
                match t.usable {
                    Usable::Partial => "measured in part",
                    _ if t.damaged => "left out",
                    _ => "nothing measured",
                },
                if t.notes.is_empty() {
                    String::new()
                } else {
                    format!(": {}", cell_text(&t.notes.join("; ")))
                }
            ));
        } else if t.requests == Some(0) {
            out.push(format!("trial `{}` completed no request", t.name));
        }
    }
    for p in &a.policies {
        if p.used.is_empty() {
            out.push(format!(
                "policy **{}** has no measured trial: its column is empty",
                cell_text(&p.label)
            ));
        } else if p.partial_only {
            out.push(format!(
                "policy **{}** has no complete trial: its values come from {} partial trial(s)",
                cell_text(&p.label),
                p.used.len()
            ));
        }
    }
    if !out.is_empty() {
        for o in out {
            let _ = writeln!(md, "> ⚠️ {o}  ");
        }
        md.push('\n');
    }
}

fn summary(md: &mut String, a: &Analysis) {
    let _ = writeln!(md, "## Summary\n");
    let how = if a.paired {
        "the median of the per-round ratios (the trials of a round ran in the same window) \
         ± half its 95 % bootstrap interval over rounds"
    } else {
        "the ratio of medians over trials ± half its 95 % bootstrap interval"
    };
    let _ = writeln!(
        md,
        "Each candidate against the baseline, hyperfine style: {how}. The last line of each \
         compares the p99 of all the policy's requests over all its trials or rounds (what its \
         users saw over the run; a median of per-round values hides pauses rarer than one per \
         round), with a bootstrap interval that resamples them.\n"
    );
    md.push_str("```\n");
    for (i, p) in a.policies.iter().enumerate().skip(1) {
        let mut any = false;
        for &m in SUMMARY_METRICS {
            let Some(cell) = a.cell(i, m) else {
                continue;
            };
            any = true;
            let mut s = match cell.floor {
                Some(f) => cell.comparison.summary_with_noise(f),
                None => cell.comparison.summary(),
            };
            if let Some(f) = cell.floor {
                let _ = write!(s, " [noise floor ±{}]", pct_abs(f.relative()));
            }
            let _ = writeln!(md, "{s}");
        }
        let base = pooled::units(a, a.baseline());
        if let Some(r) = pooled::ratio_ci(&base, &pooled::units(a, p), 0.99, &bootstrap()) {
            let metric = "p99 of all requests";
            let _ = writeln!(
                md,
                "{}",
                pooled::sentence(metric, &p.label, &a.baseline().label, &r)
            );
        }
        if !any {
            let _ = writeln!(md, "{}: nothing to compare (no measured trial)", p.label);
        }
    }
    md.push_str("```\n\n");
}

fn header(md: &mut String, a: &Analysis, collect: bool) {
    let mut cols = vec!["Metric".to_string(), "Unit".to_string()];
    let mut align = vec!["---".to_string(), "---".to_string()];
    for (i, p) in a.policies.iter().enumerate() {
        let n = p.used.len();
        let role = if collect {
            String::new()
        } else if i == 0 {
            "baseline, without · ".to_string()
        } else {
            "with · ".to_string()
        };
        let warn = if p.partial_only {
            " ⚠️ partial"
        } else {
            ""
        };
        cols.push(format!("{}<br>({role}n={n}{warn})", cell_text(&p.label)));
        align.push("---:".into());
        if i > 0 {
            cols.push(format!(
                "Δ {} vs {}",
                cell_text(&p.label),
                cell_text(&a.baseline().label)
            ));
            align.push("---".into());
        }
    }
    if !collect {
        cols.push("noise floor".into());
        align.push("---:".into());
    }
    let _ = writeln!(md, "| {} |", cols.join(" | "));
    let _ = writeln!(md, "|{}|", align.join("|"));
}

fn value_cell(p: &PolicyStats, m: Metric) -> String {
    p.medians.get(&m).map_or_else(|| "n/a".into(), |c| ci(m, c))
}

fn table(md: &mut String, a: &Analysis, collect: bool, metrics: &[Metric]) {
    header(md, a, collect);
    for &m in metrics {
        let mut cells = vec![m.label().to_string(), m.unit().to_string()];
        let mut floor = None;
        for (i, p) in a.policies.iter().enumerate() {
            cells.push(value_cell(p, m));
            if i > 0 {
                match a.cell(i, m) {
                    Some(c) => {
                        floor = floor.or(c.floor);
                        cells.push(delta(m, c));
                    }
                    None => cells.push("n/a".into()),
                }
            }
        }
        if !collect {
            let floor = floor.or_else(|| a.floors.as_ref().and_then(|f| f.get(m)));
            cells.push(format::floor(floor));
        }
        let _ = writeln!(md, "| {} |", cells.join(" | "));
    }
    md.push('\n');
}

fn results(md: &mut String, a: &Analysis, collect: bool) {
    let _ = writeln!(md, "## Results\n");
    let _ = writeln!(
        md,
        "Every value is the **median over the policy's trials** (one value per trial, from its \
         measured window) with its 95 % bootstrap interval in brackets; n = trials used.{}\n",
        if collect {
            ""
        } else {
            " Δ is the change of the median against the baseline, with Welch's t-test p-value on \
             the per-trial values."
        }
    );
    let by = |s: Section| -> Vec<Metric> {
        Metric::ALL
            .iter()
            .copied()
            .filter(|m| m.section() == s)
            .collect()
    };
    let _ = writeln!(md, "### The seed's table\n");
    table(md, a, collect, &by(Section::Seed));
    let _ = writeln!(md, "### Latency, beyond the seed's\n");
    table(md, a, collect, &by(Section::Latency));
    let _ = writeln!(md, "### Garbage collection\n");
    table(md, a, collect, &by(Section::Gc));
    let _ = writeln!(md, "### Memory\n");
    table(md, a, collect, &by(Section::Memory));
    legend(md, a, collect);
}

fn legend(md: &mut String, a: &Analysis, collect: bool) {
    let _ = writeln!(md, "**How to read these tables**\n");
    if !collect {
        let test = if a.paired {
            "the paired t-test's p < 0.05 on the per-round log ratios **and** the 95 % bootstrap \
             interval of the median per-round ratio excludes 1: the trials of a round ran in the \
             same window, so they are compared as pairs"
        } else {
            "Welch's p < 0.05 **and** the 95 % bootstrap interval of the ratio of medians \
             excludes 1"
        };
        let _ = writeln!(
            md,
            "- 🟢 better / 🔴 worse: the difference is significant ({test}) and the change is \
             larger than the metric's noise floor (last column), measured with this run's \
             design. Lower is better for latency, CPU, memory, disk, failures and everything GC; \
             higher is better for RPS."
        );
        let _ = writeln!(
            md,
            "- 🔵 changed: significant, for a metric with no better direction (network bytes follow \
             the load, not the policy)."
        );
        let _ = writeln!(
            md,
            "- ⚪ within noise: smaller than the noise floor; ⚪ n.s.: not significant; ⚪ no test: \
             fewer than two trials on a side; ⚪ no floor: significant, but no noise floor was \
             measured with this run's design, so it is not judged."
        );
    }
    let _ = writeln!(
        md,
        "- n/a: not recorded in this run (e.g. `requests_gc_overlap` is missing from samples of \
         older agents, or a trial measured nothing)."
    );
    let _ = writeln!(
        md,
        "- Latency percentiles come from the load generator's HDR histograms merged over the \
         measured window (µs, shown in ms); Avg RPS = requests / seconds under load (load.jsonl; less than the window when servers took turns); \
         resource averages from the agent's samples in the window; GC counts and pauses from \
         gc-events.csv; GC share of CPU = total pause / process CPU time (Σ cpu% × interval).\n"
    );
}

fn noise_section(md: &mut String, run: &RunData, a: &Analysis) {
    let _ = writeln!(md, "## Noise floor\n");
    match &a.floors {
        None => {
            let _ = writeln!(
                md,
                "Noise floor: **none measured with this run's design** ({}). A floor holds only \
                 for the design that measured it, so significant differences are shown but not \
                 marked 🟢/🔴. Measure one with an A/A run of the same design (the same policy \
                 twice) and save it: `neurogc report A_A_RUN --write-noise-floor FILE`; \
                 committed floors live in `{}`.\n",
                Design::of(&run.info).describe(),
                crate::noise::BUILT_IN_DIR
            );
        }
        Some(f) => {
            let file = &f.file;
            let mut parts = vec![format!("from {}", f.origin)];
            if let Some(m) = &file.measured {
                parts.push(format!("measured {m}"));
            }
            if let Some(r) = &file.run {
                parts.push(format!("run `{}`", cell_text(r)));
            }
            let _ = writeln!(md, "Noise floor {}.  ", parts.join(", "));
            if let Some(d) = &file.design {
                let _ = writeln!(md, "Design: {}.  ", d.describe());
            }
            if let Some(p) = &file.protocol {
                let _ = writeln!(md, "Protocol: {}.  ", cell_text(p));
            }
            if let Some(c) = &file.command {
                let _ = writeln!(md, "Command: `{}`  ", c.replace('`', "'"));
            }
            if let Some(aa) = &file.aa {
                // A floor from a failed A/A still bounds what is noise, but says the method
                // cannot resolve the 5 % the check asks for on that machine.
                let mark = if aa.pass { "✅" } else { "❌" };
                let _ = writeln!(md, "Its A/A check: {mark} {}.  ", aa.verdict());
            }
            if let Some(sys) = &file.system {
                let here = &run.info.system;
                if sys.cpu_model != here.cpu_model || sys.cores != here.cores {
                    let _ = writeln!(
                        md,
                        "⚠️ measured on another machine ({} × {}): it may not hold here.  ",
                        sys.cores.map_or("?".into(), |c| c.to_string()),
                        sys.cpu_model.as_deref().unwrap_or("?")
                    );
                }
            }
            md.push('\n');
            let _ = writeln!(
                md,
                "A relative difference smaller than the floor is not a result (⚪ within noise). \
                 Per metric: {}.\n",
                f.per_metric
                    .iter()
                    .map(|(m, v)| format!("{} ±{}", m.key(), pct_abs(v.relative())))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    if let Some(aa) = &a.aa {
        let _ = writeln!(md, "### A/A check\n");
        let _ = writeln!(
            md,
            "Every policy of this run has the spec `{}`: it is an **A/A run**, and measures the \
             noise floor of its protocol on this machine (per metric, the largest deviation from \
             1 of the 95 % bootstrap interval of the ratio of medians, over the candidates):\n",
            run.info.policies[0].spec.replace('`', "'")
        );
        let _ = writeln!(md, "| metric | floor |\n|---|---:|");
        for (m, f) in &aa.floors {
            let _ = writeln!(md, "| {} (`{}`) | ±{} |", m.label(), m.key(), pct_abs(*f));
        }
        md.push('\n');
        let change = aa.p99_change.map_or_else(|| "n/a".to_string(), pct_abs);
        let verdict = if aa.pass() {
            "✅ **PASS**"
        } else {
            "❌ **FAIL**"
        };
        let _ = writeln!(
            md,
            "{verdict}: |Δ p99| = {change} (bound {}), {}.  ",
            pct_abs(AA_P99_BOUND),
            if aa.p99_significant {
                "**significant** (p < 0.05 and the interval excludes 1)"
            } else {
                "not significant"
            }
        );
        if aa.significant.is_empty() {
            let _ = writeln!(md, "No other metric differs significantly.\n");
        } else {
            let _ = writeln!(
                md,
                "Other metrics with a significant difference (about 1 in 20 is expected by chance): {}.\n",
                aa.significant
                    .iter()
                    .map(|m| m.key())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let _ = writeln!(
            md,
            "Save it as the floor of its design ({}) for later reports: `neurogc report {} \
             --write-noise-floor FILE` (committed floors live in `{}`).\n",
            Design::of(&run.info).describe(),
            run.dir.display(),
            crate::noise::BUILT_IN_DIR
        );
    }
}

fn trials(md: &mut String, a: &Analysis) {
    let _ = writeln!(md, "## Trials\n");
    let _ = writeln!(
        md,
        "In the order they ran. Values of each trial's measured window; ✔ = used for the medians.\n"
    );
    let _ = writeln!(
        md,
        "| trial | policy | rep | status | used | window | requests | p50 ms | p99 ms | RPS | GC events (gen 2) | peak RSS MiB | notes |"
    );
    let _ = writeln!(
        md,
        "|---|---|---:|---|:-:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for (i, t) in a.trials.iter().enumerate() {
        let used = a.policies.iter().any(|p| p.used.contains(&i));
        let v = |m: Metric| t.get(m).map_or_else(|| "n/a".into(), |x| value(m, x));
        let gc = match (t.get(Metric::GcEvents), t.get(Metric::Gen2Count)) {
            (Some(all), Some(g2)) => format!("{all:.0} ({g2:.0})"),
            _ => "n/a".into(),
        };
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            t.name,
            cell_text(&t.label),
            t.repetition,
            t.status_text(),
            if used { "✔" } else { "" },
            t.window_s()
                .map_or_else(|| "—".into(), |s| format!("{s:.1} s")),
            t.requests.map_or_else(|| "n/a".into(), |r| r.to_string()),
            v(Metric::P50),
            v(Metric::P99),
            v(Metric::Rps),
            gc,
            v(Metric::RssPeak),
            cell_text(&t.notes.join("; "))
        );
    }
    md.push('\n');
}

fn charts_section(md: &mut String, charts: &Charts) {
    let _ = writeln!(md, "## Charts\n");
    if charts.files.is_empty() && charts.skipped.is_empty() {
        let _ = writeln!(md, "No charts.\n");
    }
    for (title, rel) in &charts.files {
        let _ = writeln!(md, "### {title}\n\n![{title}]({rel})\n");
    }
    for s in &charts.skipped {
        let _ = writeln!(md, "> ⚠️ {s}\n");
    }
}

/// The load as a sentence, from `run.json`'s `load`.
pub fn load_text(load: Option<&LoadInfo>) -> String {
    let Some(load) = load else {
        return "not recorded".into();
    };
    let mut s = match load.shape {
        Shape::Closed {
            users,
            spawn_rate,
            wait_min_s,
            wait_max_s,
        } => format!(
            "closed loop (Locust style): {users} users, spawn {}/s, wait {}–{} s",
            num(spawn_rate),
            num(wait_min_s),
            num(wait_max_s)
        ),
        Shape::Open { rate } => format!("open loop (wrk2 style): {} req/s", num(rate)),
    };
    match (&load.rate_source, &load.auto) {
        (RateSource::Auto, Some(auto)) => {
            let _ = write!(
                s,
                "; rate auto: sustainable {} req/s found for {}, run at {}",
                num(auto.sustainable_rps),
                auto.limited_by,
                pct_abs(auto.fraction)
            );
        }
        (RateSource::Auto, None) => s.push_str(" (rate auto)"),
        (RateSource::Fixed, _) => {}
    }
    if let Some(slice) = load.alternate_s {
        let _ = write!(
            s,
            "; the servers took turns under it, {} each (a turn begins once the server \
             before it has answered all its requests), so each was loaded for \
             its share of the trial: latency and RPS are over its turns, while CPU, \
             memory, disk and network averages span the whole trial, idle turns included",
            seconds(slice)
        );
    }
    s
}

fn configuration(md: &mut String, run: &RunData) {
    let info = &run.info;
    let _ = writeln!(md, "## Configuration\n\n| | |\n|---|---|");
    let row = |md: &mut String, k: &str, v: String| {
        let _ = writeln!(md, "| {k} | {} |", cell_text(&v));
    };
    row(md, "kind", info.kind.to_string());
    row(md, "mode", info.mode.to_string());
    row(md, "repetitions per policy", info.repeat.to_string());
    row(
        md,
        "warm-up per trial (not measured)",
        seconds(info.warmup_s),
    );
    row(md, "measured per trial", seconds(info.duration_s));
    row(md, "sample interval", seconds(info.interval_s));
    row(md, "load", load_text(info.load.as_ref()));
    row(
        md,
        "pinning",
        match &info.pinning {
            Some(p) => format!(
                "server on CPU {:?}, load generator on CPU {:?}",
                p.server_cpus, p.load_cpus
            ),
            None => "none".into(),
        },
    );
    let app = match &info.app {
        AppInfo::Workload {
            workload, command, ..
        } => format!("workload {workload}: `{command}`"),
        AppInfo::Demo {
            scenario, command, ..
        } => format!("demo, scenario {scenario}: `{command}`"),
        AppInfo::Cmd { command } => format!("cmd: `{command}`"),
    };
    row(md, "app", app);
    if !info.command.is_empty() {
        row(md, "command", format!("`{}`", info.command.join(" ")));
    }
    md.push('\n');
    if let Some(rs) = &run.rate_search {
        let _ = writeln!(md, "### Rate search (`--rate auto`)\n");
        let _ = writeln!(
            md,
            "Rate auto: sustainable {} req/s found for **{}**, run at {} = {} req/s. Probes of {} \
             each, from {} req/s, doubling, then bisecting.\n",
            num(rs.sustainable_rps),
            cell_text(&rs.limited_by),
            pct_abs(rs.fraction),
            num(rs.rate),
            seconds(rs.probe_s),
            num(rs.start_rps),
        );
        if let Some(check) = &rs.recheck {
            let _ = writeln!(md, "{}\n", recheck_text(check));
        }
        let _ = writeln!(
            md,
            "| policy | target req/s | achieved | p50 ms | p99 ms | failures | dropped | sustained | verdict |\n|---|---:|---:|---:|---:|---:|---:|:-:|---|"
        );
        for p in &rs.policies {
            for pr in &p.probes {
                let o = |x: Option<f64>| x.map_or("n/a".into(), num);
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    cell_text(&p.label),
                    num(pr.rate),
                    num(pr.achieved),
                    o(pr.p50_ms),
                    o(pr.p99_ms),
                    pr.failures,
                    pr.dropped,
                    if pr.sustained { "yes" } else { "no" },
                    cell_text(&pr.verdict)
                );
            }
        }
        md.push('\n');
    }
}

/// What the check of a capacity found earlier (`rate-search.json`'s `recheck`) found, in one
/// sentence.
pub fn recheck_text(check: &RateRecheck) -> String {
    let seen = check.probes.last().map_or("no probe".into(), |p| {
        format!(
            "achieved {} req/s, p50 {} ms: {}",
            num(p.achieved),
            p.p50_ms.map_or("n/a".into(), num),
            p.verdict
        )
    });
    let outcome = if check.held() {
        format!("sustained it again ({seen}).")
    } else {
        format!("no longer sustained it ({seen}), so the capacity was searched again.")
    };
    format!(
        "The {} req/s found earlier was checked before the load: {} {outcome}",
        num(check.earlier_rps),
        cell_text(&check.label)
    )
}

/// Key fields of a `model.json`, in one line.
pub fn model_text(model: &ModelMeta) -> String {
    let mut parts = Vec::new();
    // The architecture's own parameters, whichever kind it is.
    let params: Vec<String> = serde_json::to_value(&model.architecture)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .map(|o| {
            o.iter()
                .filter(|(k, _)| k.as_str() != "kind")
                .map(|(k, v)| match v.as_f64() {
                    // f32 hyper-parameters print as written, not as their f64 widening.
                    Some(x) if v.is_f64() => format!("{k} {}", (x * 1e6).round() / 1e6),
                    _ => format!("{k} {v}"),
                })
                .collect()
        })
        .unwrap_or_default();
    let kind = model.architecture.name();
    parts.push(if params.is_empty() {
        format!("**{kind}**")
    } else {
        format!("**{kind}** ({})", params.join(", "))
    });
    parts.push(format!(
        "{} features ({})",
        model.features.len(),
        model.features.join(", ")
    ));
    parts.push(format!("window {}", model.window));
    parts.push(format!("threshold {}", num(f64::from(model.threshold))));
    parts.push(format!("target {}", model.target));
    if !model.data.is_empty() {
        let rows: usize = model.data.iter().map(|d| d.rows).sum();
        let files: Vec<&str> = model
            .data
            .iter()
            .map(|d| d.path.rsplit('/').next().unwrap_or(&d.path))
            .collect();
        parts.push(format!("trained on {rows} rows of {}", files.join(", ")));
    }
    let m = &model.metrics;
    let ms: Vec<String> = [
        ("epochs", m.epochs.map(|e| e as f64)),
        ("train_loss", m.train_loss),
        ("val_loss", m.val_loss),
        ("val_positive_rate", m.val_positive_rate),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| format!("{k} {}", num(v))))
    .collect();
    if !ms.is_empty() {
        parts.push(ms.join(", "));
    }
    // Training settings are free-form by design (model.json's `training`).
    if let Some(t) = model.training.as_object() {
        let ts: Vec<String> = ["optimizer", "lr", "batch", "seed"]
            .into_iter()
            .filter_map(|k| {
                let v = t.get(k)?;
                Some(format!(
                    "{k} {}",
                    v.as_str().map_or_else(|| v.to_string(), str::to_string)
                ))
            })
            .collect();
        if !ts.is_empty() {
            parts.push(ts.join(", "));
        }
    }
    parts.join("; ")
}

fn policies(md: &mut String, run: &RunData) {
    let _ = writeln!(md, "## Policies\n\n| label | spec | model |\n|---|---|---|");
    for (i, p) in run.info.policies.iter().enumerate() {
        let role = if i == 0 && run.info.policies.len() > 1 {
            " (baseline)"
        } else {
            ""
        };
        let model = p.model.as_ref().map_or_else(|| "—".into(), model_text);
        let _ = writeln!(
            md,
            "| {}{role} | `{}` | {} |",
            cell_text(&p.label),
            p.spec.replace('`', "'"),
            cell_text(&model)
        );
    }
    md.push('\n');
}

fn system(md: &mut String, run: &RunData) {
    let s = &run.info.system;
    let _ = writeln!(md, "## System\n\n| Property | Value |\n|---|---|");
    let o = |x: &Option<String>| x.as_deref().map_or("n/a".into(), cell_text);
    let _ = writeln!(md, "| CPU | {} |", o(&s.cpu_model));
    let _ = writeln!(
        md,
        "| Cores | {} |",
        s.cores.map_or("n/a".into(), |c| c.to_string())
    );
    let _ = writeln!(
        md,
        "| Memory | {} |",
        s.memory_bytes
            .map_or("n/a".into(), |b| format::bytes(b as f64))
    );
    let _ = writeln!(md, "| Operating system | {} |", o(&s.os));
    let _ = writeln!(md, "| Kernel | {} |", o(&s.kernel));
    let _ = writeln!(md, "| Python | {} |", o(&s.python));
    let _ = writeln!(md, "| NeuroGC | {} |", o(&s.neurogc_version));
    md.push('\n');
}

fn method(md: &mut String, collect: bool) {
    let _ = writeln!(md, "## Method\n");
    let _ = writeln!(
        md,
        "Each trial is one server lifetime; only its measured window (after the warm-up) counts. \
         Each metric is reduced to one value per trial, then to the median over the policy's \
         complete trials (partial trials only when a policy has no complete one), with a 95 % \
         percentile-bootstrap interval (10,000 seeded resamples).{}",
        if collect {
            ""
        } else {
            " Candidates are compared with the baseline (the first policy) by Welch's t-test on \
             the per-trial values and a bootstrap interval of the ratio of medians; per-second \
             values of one trial are never treated as independent samples."
        }
    );
    let _ = writeln!(
        md,
        "\nGenerated by `neurogc report` {}.",
        env!("CARGO_PKG_VERSION")
    );
}

/// One line per candidate for the terminal: its p99 sentence.
pub fn terminal_summary(a: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    for i in 1..a.policies.len() {
        if let Some(c) = a.cell(i, Metric::P99) {
            let mut s = match c.floor {
                Some(f) => c.comparison.summary_with_noise(f),
                None => c.comparison.summary(),
            };
            if let Some(r) = c.comparison.relative_change() {
                let _ = write!(s, " [{}]", pct(r));
            }
            out.push(s);
        }
    }
    out
}
