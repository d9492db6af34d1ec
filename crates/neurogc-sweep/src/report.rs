//! The sweep's report: `README.md` and `step-time.png` in the output directory, and the
//! terminal summary (hyperfine's way: per configuration its times, then "X ran 1.12 ± 0.03 times
//! faster than default", then the recommendation).

use std::fmt::Write as _;
use std::path::Path;

use neurogc_report::format::{cell_text, p_value, pct, utc};
use neurogc_report::lines::{self, Line, Panel};
use neurogc_stats::{Comparison, ConfidenceInterval, Direction};

use crate::analysis::{fmt_bytes, fmt_ms, is_learned, Analysis, Metric};
use crate::execute::SweepRecord;

/// The chart's file, in the output directory.
pub const CHART: &str = "step-time.png";
/// The report's file.
pub const README: &str = "README.md";
/// The medians in machine-readable form (what a benchmark script checks a bar against).
pub const SUMMARY_JSON: &str = "summary.json";

/// `summary.json`: per configuration, each metric's median over runs with its 95 % interval.
#[derive(serde::Serialize)]
pub struct Summary {
    /// The configuration the others are compared with (`default` when swept).
    pub baseline: String,
    /// The recommended configuration.
    pub best: String,
    pub rss_bound: f64,
    pub configs: Vec<ConfigSummary>,
    /// Each learned configuration against every other one, round by round.
    pub learned_against: Vec<PairedSummary>,
    /// `--aa`: the baseline's copy against the baseline, round by round (the noise floor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aa: Option<AaSummary>,
}

/// The A/A pair: `name` (the copy) against `against` (the baseline), per metric key.
#[derive(serde::Serialize)]
pub struct AaSummary {
    pub name: String,
    pub against: String,
    pub metrics: std::collections::BTreeMap<&'static str, PairedMetric>,
}

/// A learned configuration against another, round by round: per metric key, the median of the
/// per-round ratios (learned / other) with its 95 % interval, the paired test's p-value, and
/// whether the difference is significant (p < 0.05 and the interval excludes 1).
#[derive(serde::Serialize)]
pub struct PairedSummary {
    pub learned: String,
    pub against: String,
    pub metrics: std::collections::BTreeMap<&'static str, PairedMetric>,
}

#[derive(serde::Serialize)]
pub struct PairedMetric {
    pub ratio: Interval,
    pub p: Option<f64>,
    pub significant: bool,
}

#[derive(serde::Serialize)]
pub struct ConfigSummary {
    pub name: String,
    pub runs: usize,
    /// Metric key ([`Metric::key`]) → its median and interval; absent when unmeasured.
    pub medians: std::collections::BTreeMap<&'static str, Interval>,
}

/// A median with its 95 % bootstrap interval.
#[derive(serde::Serialize)]
pub struct Interval {
    pub estimate: f64,
    pub lower: f64,
    pub upper: f64,
}

impl From<&ConfidenceInterval> for Interval {
    fn from(ci: &ConfidenceInterval) -> Self {
        Interval {
            estimate: ci.estimate,
            lower: ci.lower,
            upper: ci.upper,
        }
    }
}

/// Per metric key, a paired comparison's ratio, p and significance.
fn paired<'a>(
    get: impl Fn(Metric) -> Option<&'a Comparison>,
) -> std::collections::BTreeMap<&'static str, PairedMetric> {
    Metric::ALL
        .iter()
        .filter_map(|&m| {
            let c = get(m)?;
            let r = c.ratio?;
            Some((
                m.key(),
                PairedMetric {
                    ratio: Interval::from(&r),
                    p: c.p_value(),
                    significant: c.is_significant(),
                },
            ))
        })
        .collect()
}

pub fn summary(a: &Analysis) -> Summary {
    let configs = a
        .configs
        .iter()
        .map(|c| ConfigSummary {
            name: c.name.clone(),
            runs: c.runs.len(),
            medians: Metric::ALL
                .iter()
                .filter_map(|&m| Some((m.key(), Interval::from(c.interval(m)?))))
                .collect(),
        })
        .collect();
    let learned_against = a
        .learned_vs
        .iter()
        .map(|pair| PairedSummary {
            learned: a.name(pair.learned).to_string(),
            against: a.name(pair.against).to_string(),
            metrics: paired(|m| pair.get(m)),
        })
        .collect();
    let aa = a.aa.map(|i| AaSummary {
        name: a.name(i).to_string(),
        against: a.name(a.baseline).to_string(),
        metrics: paired(|m| a.vs_baseline(i, m)),
    });
    Summary {
        baseline: a.configs[a.baseline].name.clone(),
        best: a.configs[a.recommendation.best].name.clone(),
        rss_bound: a.rss_bound,
        configs,
        learned_against,
        aa,
    }
}

fn value(m: Metric, x: f64) -> String {
    match m {
        Metric::GcShare => format!("{:.1} %", 100.0 * x),
        Metric::PeakRss => fmt_bytes(x),
        _ => fmt_ms(x),
    }
}

fn interval(m: Metric, c: Option<&ConfidenceInterval>) -> String {
    match c {
        None => "n/a".into(),
        Some(c) if c.lower == c.upper => value(m, c.estimate),
        Some(c) => format!(
            "{} [{}–{}]",
            value(m, c.estimate),
            value(m, c.lower),
            value(m, c.upper)
        ),
    }
}

/// 🟢 significantly lower (better: every metric here is better lower), 🔴 significantly higher,
/// ⚪ not significant; then the change and the test's p.
fn delta(c: Option<&Comparison>) -> String {
    let Some(c) = c else { return "n/a".into() };
    let mark = match (c.is_significant(), c.direction()) {
        (true, Direction::Lower) => "🟢",
        (true, Direction::Higher) => "🔴",
        _ => "⚪",
    };
    let change = match c.relative_change() {
        Some(0.0) => "same".to_string(),
        Some(r) => pct(r),
        None => format!("{:+.3}", c.difference.estimate),
    };
    let p = c
        .p_value()
        .map_or_else(|| "no test: 1 round".into(), p_value);
    format!("{mark} {change} ({p})")
}

/// Draws the step-time chart: step time per step of every run, and each run's step times by
/// percentile. Returns why it was not drawn, if it was not.
pub fn chart(a: &Analysis, out: &Path) -> Option<String> {
    let mut per_step = Vec::new();
    let mut by_pct = Vec::new();
    for (i, c) in a.configs.iter().enumerate() {
        for r in &c.runs {
            per_step.push(Line {
                color: i,
                label: c.name.clone(),
                points: r
                    .step_ms
                    .iter()
                    .enumerate()
                    .map(|(k, &ms)| ((k + 1) as f64, ms))
                    .collect(),
            });
            let mut sorted = r.step_ms.clone();
            sorted.sort_by(f64::total_cmp);
            let n = sorted.len();
            by_pct.push(Line {
                color: i,
                label: c.name.clone(),
                points: sorted
                    .iter()
                    .enumerate()
                    .map(|(k, &ms)| {
                        let q = if n > 1 {
                            k as f64 / (n - 1) as f64
                        } else {
                            1.0
                        };
                        (100.0 * q, ms)
                    })
                    .collect(),
            });
        }
    }
    let panels = [
        Panel {
            caption: "Step time per step (each run a line; the step and its boundary collection)"
                .into(),
            x_desc: "step".into(),
            y_desc: "step time (ms)".into(),
            lines: per_step,
        },
        Panel {
            caption: "Step time by percentile (each run a line)".into(),
            x_desc: "percentile of the run's steps".into(),
            y_desc: "step time (ms)".into(),
            lines: by_pct,
        },
    ];
    lines::draw(&out.join(CHART), &panels)
        .err()
        .map(|e| format!("{CHART} not drawn: {e:#}"))
}

/// Notes on configurations whose policy never acted in any run (too few steps for its cadence,
/// say): they ran as something else, and the reader should know.
pub fn idle_notes(a: &Analysis, actions: &[Vec<String>]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, c) in a.configs.iter().enumerate() {
        let name = &c.name;
        let of_default = name == "default" || (Some(i) == a.aa && a.name(a.baseline) == "default");
        if of_default || name == "disable" || name.starts_with("disable,") {
            continue;
        }
        let acted = actions.get(i).is_some_and(|acts| {
            acts.iter()
                .any(|x| x.contains("collect") || x.contains("freeze"))
        });
        if !acted {
            let steps = c.runs.first().map_or(0, |r| r.steps);
            out.push(format!(
                "{name}: its policy never collected or froze in any run ({steps} steps counted \
                 per run): it ran as `{}` would",
                if name.starts_with("freeze") {
                    "default"
                } else {
                    "disable"
                }
            ));
        }
    }
    out
}

/// The Markdown report.
pub fn markdown(
    rec: &SweepRecord,
    a: &Analysis,
    chart_skipped: Option<&str>,
    notes: &[String],
) -> String {
    let mut md = String::new();
    let cmd = rec.command.join(" ");
    let _ = writeln!(md, "# Sweep: `{cmd}`\n");
    let _ = writeln!(md, "**{}**\n", a.recommendation_line());
    for l in a.learned_lines() {
        let _ = writeln!(md, "- {l}");
    }
    let took = rec.finished.unwrap_or(rec.started) - rec.started;
    let _ = writeln!(
        md,
        "\n{} configurations × {} runs, one process each, interleaved (every round runs each \
         configuration once, the order rotated per round); started {}, took {:.0} s.{}{}\n",
        rec.configs.len(),
        rec.repeats,
        utc(rec.started),
        took,
        rec.step_function
            .as_ref()
            .map(|f| format!(" Steps: each call of `{f}` (`--step-function`)."))
            .unwrap_or_default(),
        if rec.skip_steps > 0 {
            format!(
                " The first {} steps of each run are left out.",
                rec.skip_steps
            )
        } else {
            String::new()
        }
    );

    let base = a.name(a.baseline);
    let _ = writeln!(md, "## Configurations\n");
    let _ = writeln!(
        md,
        "Median over runs [95 % bootstrap interval]. Step time is the step plus the collection \
         the policy ran at its end (what the training loop waited for); GC share is every \
         collection's pause over the training time; peak RSS is the process's high-water mark.\n"
    );
    let _ = writeln!(
        md,
        "| configuration | steps/run | step mean | p50 | p99 | max | GC share | peak RSS |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for c in &a.configs {
        let steps = c.median_count(|r| r.steps as u64);
        let _ = write!(md, "| `{}` | {steps:.0} |", cell_text(&c.name));
        for m in Metric::ALL {
            let _ = write!(md, " {} |", interval(m, c.interval(m)));
        }
        md.push('\n');
    }

    for (title, against, table) in [
        (format!("Against `{base}`"), a.baseline, 0),
        (
            format!(
                "Against the recommendation, `{}`",
                a.name(a.recommendation.best)
            ),
            a.recommendation.best,
            1,
        ),
    ] {
        let _ = writeln!(md, "\n## {title}\n");
        let _ = writeln!(
            md,
            "Change of the median, round by round (the median of the per-round ratios); 🟢/🔴 \
             significantly lower/higher (the paired t-test's p < 0.05 on the per-round log \
             ratios **and** the ratio's 95 % bootstrap interval excludes 1), ⚪ not.\n"
        );
        let _ = writeln!(
            md,
            "| configuration | step mean | p50 | p99 | max | GC share | peak RSS |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for i in (0..a.configs.len()).filter(|&i| i != against) {
            let _ = write!(md, "| `{}` |", cell_text(a.name(i)));
            for m in Metric::ALL {
                let c = if table == 0 {
                    a.vs_baseline(i, m)
                } else {
                    a.vs_best(i, m)
                };
                let _ = write!(md, " {} |", delta(c));
            }
            md.push('\n');
        }
    }

    let _ = writeln!(md, "\n## Summary\n\n```");
    for l in summary_lines(a) {
        let _ = writeln!(md, "{l}");
    }
    let _ = writeln!(md, "```\n");

    let _ = writeln!(md, "## Collections\n");
    let _ = writeln!(
        md,
        "Per run, median over runs: collections inside steps and at boundaries per generation, \
         collections between steps (generation not known), objects freed per generation.\n"
    );
    let _ = writeln!(
        md,
        "| configuration | gen 0 | gen 1 | gen 2 | between steps | freed gen 0 | freed gen 1 | freed gen 2 |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for c in &a.configs {
        let _ = writeln!(
            md,
            "| `{}` | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |",
            cell_text(&c.name),
            c.median_count(|r| r.collections[0]),
            c.median_count(|r| r.collections[1]),
            c.median_count(|r| r.collections[2]),
            c.median_count(|r| r.outside),
            c.median_count(|r| r.collected[0]),
            c.median_count(|r| r.collected[1]),
            c.median_count(|r| r.collected[2]),
        );
    }

    let _ = writeln!(md, "\n## Step time\n");
    match chart_skipped {
        None => {
            let _ = writeln!(md, "![step time]({CHART})");
        }
        Some(why) => {
            let _ = writeln!(md, "No chart: {why}");
        }
    }

    if !notes.is_empty() {
        let _ = writeln!(md, "\n## Notes\n");
        for n in notes {
            let _ = writeln!(md, "- {}", n);
        }
    }

    let _ = writeln!(md, "\n## Runs\n");
    let _ = writeln!(
        md,
        "| # | configuration | round | steps | wall | peak RSS | folder |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    for r in &rec.runs {
        let _ = writeln!(
            md,
            "| {} | `{}` | {} | {} | {:.1} s | {} | [{}]({}/) |",
            r.index,
            cell_text(&r.config),
            r.round,
            r.steps,
            r.wall_s,
            r.peak_rss_bytes
                .map_or("n/a".into(), |b| fmt_bytes(b as f64)),
            r.dir,
            r.dir
        );
    }

    let _ = writeln!(md, "\n## Method\n");
    let _ = writeln!(
        md,
        "Each run is one process of the command, with `NEUROGC_STEP_POLICY` set to its \
         configuration and `NEUROGC_STEPS_DIR` to its folder, where the step hook \
         (`neurogc.training`) writes `steps.csv`. Each metric is reduced to one value per run, \
         then to the median over the configuration's runs with a 95 % percentile-bootstrap \
         interval (10,000 seeded resamples). A configuration is compared with `{base}` and with \
         the recommendation round by round, as `neurogc bench` compares the trials of a round. \
         The recommendation: among the configurations whose median peak RSS is at most {:.2} × \
         `{base}`'s, the lowest median step p99; among those whose p99 does not differ \
         significantly from that one's, the lowest median step mean. {}\n\nGenerated by \
         `neurogc sweep` {}.",
        a.rss_bound,
        match a.aa_line() {
            Some(line) => format!(
                "`--aa` ran `{base}` a second time each round, as a configuration of its own \
                 (never recommended). {line}. Differences of that size between the others are \
                 the machine's as much as the configurations'."
            ),
            None => "No A/A noise floor was measured (`--aa`): a significant difference of a \
                     few percent may still be the machine's."
                .into(),
        },
        env!("CARGO_PKG_VERSION")
    );
    md
}

/// The terminal summary: per configuration its times (hyperfine's `Time (mean ± σ)` becomes the
/// medians over runs), the speed lines, the recommendation and the learned policy's standing.
pub fn summary_lines(a: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    let width = a.configs.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in &a.configs {
        let m = |x| c.median(x).map_or("n/a".into(), |v| value(x, v));
        out.push(format!(
            "{:width$}  mean {:>9}  p50 {:>9}  p99 {:>9}  max {:>9}  GC {:>6}  peak RSS {:>10}",
            c.name,
            m(Metric::Mean),
            m(Metric::P50),
            m(Metric::P99),
            m(Metric::Max),
            m(Metric::GcShare),
            m(Metric::PeakRss),
        ));
    }
    out.push(String::new());
    out.extend(a.speed_lines());
    out.extend(a.aa_line());
    out.push(String::new());
    out.push(a.recommendation_line());
    out.extend(a.learned_lines());
    if !a.configs.iter().any(|c| is_learned(&c.name)) {
        out.push("(learned was not swept)".into());
    }
    out
}
