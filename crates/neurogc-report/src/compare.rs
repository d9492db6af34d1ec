//! `neurogc report --compare RUN...`: the policies of several runs side by side (each against
//! its own run's baseline), and each policy label run over run (against its first run).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use neurogc_record::RunStatus;
use neurogc_stats::Comparison;

use crate::aggregate::{bootstrap, mark, Analysis, Cell};
use crate::format::{self, cell_text, delta, utc, value};
use crate::markdown::load_text;
use crate::metric::Metric;
use crate::noise::Floors;
use crate::rundir::RunData;

/// The columns of the comparison tables.
pub const COMPARE_METRICS: &[Metric] = &[
    Metric::P50,
    Metric::P95,
    Metric::P99,
    Metric::Rps,
    Metric::RssPeak,
    Metric::GcEvents,
    Metric::GcCpuShare,
];

fn short_header(m: Metric) -> &'static str {
    match m {
        Metric::P50 => "p50 ms",
        Metric::P95 => "p95 ms",
        Metric::P99 => "p99 ms",
        Metric::Rps => "RPS",
        Metric::RssPeak => "peak RSS MiB",
        Metric::GcEvents => "GC events",
        Metric::GcCpuShare => "GC % of CPU",
        other => other.key(),
    }
}

/// A run and its analysis, with a short name for tables.
pub struct Analysed {
    pub run: RunData,
    pub analysis: Analysis,
    pub name: String,
}

fn model_kind(run: &RunData, label: &str) -> String {
    run.info
        .policies
        .iter()
        .find(|p| p.label == label)
        .and_then(|p| p.model.as_ref())
        .map(|m| m.architecture.name().to_string())
        .unwrap_or_else(|| "—".into())
}

/// Renders the comparison of `runs` (in the order given).
pub fn render(runs: &[Analysed], floors: Option<&Floors>) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# NeuroGC: {} runs compared\n", runs.len());

    let _ = writeln!(
        md,
        "| # | run | kind | started | status | mode | load | trials | machine |\n|---:|---|---|---|---|---|---|---:|---|"
    );
    for (i, r) in runs.iter().enumerate() {
        let info = &r.run.info;
        let _ = writeln!(
            md,
            "| {} | `{}` | {} | {} | {} | {} | {} | {} | {} |",
            i + 1,
            r.name,
            info.kind,
            utc(info.created),
            info.status,
            info.mode,
            cell_text(&load_text(info.load.as_ref())),
            r.analysis.trials.len(),
            cell_text(&format!(
                "{} × {}",
                info.system.cores.map_or("?".into(), |c| c.to_string()),
                info.system.cpu_model.as_deref().unwrap_or("?")
            ))
        );
    }
    md.push('\n');
    for w in comparability(runs) {
        let _ = writeln!(md, "> ⚠️ {w}  ");
    }
    md.push('\n');

    // Table 1: every (run, policy), against its run's baseline.
    let _ = writeln!(md, "## Policies across runs\n");
    let _ = writeln!(
        md,
        "Medians over each policy's trials. A candidate's cells also give its change against \
         **its own run's baseline** (first policy) with Welch's p: 🟢/🔴 significant (p < 0.05 \
         and the bootstrap interval of the ratio excludes 1) and beyond the noise floor, ⚪ not.\n"
    );
    let mut cols = vec!["run", "policy", "model", "n"];
    cols.extend(COMPARE_METRICS.iter().map(|m| short_header(*m)));
    let _ = writeln!(md, "| {} |", cols.join(" | "));
    let _ = writeln!(
        md,
        "|---|---|---|---:|{}",
        "---:|".repeat(COMPARE_METRICS.len())
    );
    for r in runs {
        let a = &r.analysis;
        for (i, p) in a.policies.iter().enumerate() {
            let mut cells = vec![
                format!("`{}`", r.name),
                if i == 0 {
                    format!("{} (baseline)", cell_text(&p.label))
                } else {
                    cell_text(&p.label)
                },
                model_kind(&r.run, &p.label),
                p.used.len().to_string(),
            ];
            for &m in COMPARE_METRICS {
                let v = p.median(m).map_or_else(|| "n/a".into(), |x| value(m, x));
                cells.push(match a.cell(i, m) {
                    Some(c) => format!("{v}<br>{}", delta(m, c)),
                    None => v,
                });
            }
            let _ = writeln!(md, "| {} |", cells.join(" | "));
        }
    }
    md.push('\n');

    // Table 2: each label present in several runs, against its first run.
    let mut labels: Vec<String> = Vec::new();
    for r in runs {
        for p in &r.analysis.policies {
            if !labels.contains(&p.label) {
                labels.push(p.label.clone());
            }
        }
    }
    let repeated: Vec<&String> = labels
        .iter()
        .filter(|l| {
            runs.iter()
                .filter(|r| r.analysis.policies.iter().any(|p| &&p.label == l))
                .count()
                > 1
        })
        .collect();
    let _ = writeln!(md, "## Run over run\n");
    if repeated.is_empty() {
        let _ = writeln!(md, "No policy label appears in more than one run.\n");
    } else {
        let _ = writeln!(
            md,
            "Each policy against its **first run** in this list, on per-trial values (Welch's p). \
             Between runs the machine may have drifted: the A/A noise floor{} is a lower bound \
             for what is noise here.\n",
            floors.map_or(String::new(), |f| format!(" ({})", f.origin))
        );
    }
    let cfg = bootstrap();
    for label in repeated {
        let _ = writeln!(md, "### {}\n", cell_text(label));
        let mut cols = vec!["run", "n"];
        cols.extend(COMPARE_METRICS.iter().map(|m| short_header(*m)));
        let _ = writeln!(md, "| {} |", cols.join(" | "));
        let _ = writeln!(md, "|---|---:|{}", "---:|".repeat(COMPARE_METRICS.len()));
        let mut first: Option<(&Analysed, usize)> = None;
        for r in runs {
            let Some(pi) = r.analysis.policies.iter().position(|p| &p.label == label) else {
                continue;
            };
            let p = &r.analysis.policies[pi];
            let mut cells = vec![format!("`{}`", r.name), p.used.len().to_string()];
            for &m in COMPARE_METRICS {
                let v = p.median(m).map_or_else(|| "n/a".into(), |x| value(m, x));
                let cell = first.and_then(|(fr, fi)| {
                    let base = fr.analysis.policies[fi].values.get(&m)?;
                    let cand = p.values.get(&m)?;
                    let comparison = Comparison::new(
                        m.short(),
                        &format!("{}/{}", fr.name, label),
                        base,
                        &format!("{}/{}", r.name, label),
                        cand,
                        &cfg,
                    )
                    .ok()?;
                    let floor = floors.and_then(|f| f.get(m));
                    Some(Cell {
                        mark: mark(&comparison, m.better(), floor),
                        comparison,
                        floor,
                    })
                });
                cells.push(match cell {
                    Some(c) => format!("{v}<br>{}", delta(m, &c)),
                    None => v,
                });
            }
            if first.is_none() {
                first = Some((r, pi));
            }
            let _ = writeln!(md, "| {} |", cells.join(" | "));
        }
        md.push('\n');
    }

    let _ = writeln!(md, "## Noise floor\n");
    match floors {
        Some(f) => {
            let _ = writeln!(
                md,
                "From {}: {}.\n",
                f.origin,
                COMPARE_METRICS
                    .iter()
                    .map(|m| format!("{} {}", m.key(), format::floor(f.get(*m))))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        None => {
            let _ = writeln!(
                md,
                "Noise floor: not measured for this machine; differences are judged by \
                 significance alone.\n"
            );
        }
    }
    for r in runs {
        if let Some(aa) = &r.analysis.aa {
            let _ = writeln!(
                md,
                "`{}` is an A/A run: {}.",
                r.name,
                aa.summary().verdict()
            );
        }
    }
    md
}

/// Differences between the runs' protocols and machines that weaken a comparison.
fn comparability(runs: &[Analysed]) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |what: &str, f: &dyn Fn(&RunData) -> String| {
        let mut seen: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for r in runs {
            seen.entry(f(&r.run)).or_default().push(&r.name);
        }
        if seen.len() > 1 {
            out.push(format!(
                "the runs differ in {what}: {}",
                seen.iter()
                    .map(|(v, names)| format!("{} ({})", cell_text(v), names.join(", ")))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
    };
    check("machine", &|r| {
        format!(
            "{} × {}",
            r.info.system.cores.map_or("?".into(), |c| c.to_string()),
            r.info.system.cpu_model.as_deref().unwrap_or("?")
        )
    });
    check("load", &|r| load_text(r.info.load.as_ref()));
    check("mode", &|r| r.info.mode.to_string());
    check("measured time per trial", &|r| {
        format::seconds(r.info.duration_s)
    });
    check("Python", &|r| {
        r.info.system.python.clone().unwrap_or_default()
    });
    for r in runs {
        if r.run.info.status != RunStatus::Complete {
            out.push(format!("`{}` is {}", r.name, r.run.info.status));
        }
    }
    out
}
