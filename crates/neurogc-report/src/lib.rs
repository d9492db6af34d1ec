//! `neurogc report`: the report of a run directory (`docs/runs.md`) and comparisons of runs.
//!
//! `neurogc report RUN_DIR` writes `RUN_DIR/README.md` and `RUN_DIR/charts/*.png`: the seed's
//! table (one column per policy, the first is the baseline) and what a careful engineer needs
//! beyond it — p50/p99.9/max, requests that overlapped a GC pause, pauses per generation, peak
//! and mean RSS, GC's share of CPU time — each value the median over the policy's trials with
//! a 95 % bootstrap interval, each difference with Welch's p, a 🟢/🔴/⚪ mark and the noise
//! floor it was judged against; hyperfine-style summary lines; the charts; the configuration,
//! the models, the machine. `neurogc report --compare RUN...` prints run-over-run and
//! cross-model tables. `docs/report.md` explains every row.
//!
//! Layout: [`rundir`] reading the run directory · [`trial`] one value per metric per trial ·
//! [`aggregate`] medians, comparisons, marks, the A/A check · [`noise`] noise-floor files ·
//! [`markdown`] the README · [`charts`] the PNGs · [`compare`] `--compare` · [`metric`] the
//! metrics · [`format`] numbers.

pub mod aggregate;
pub mod charts;
pub mod collections;
pub mod compare;
pub mod format;
pub mod lines;
pub mod markdown;
pub mod metric;
pub mod noise;
pub mod pooled;
pub mod processes;
pub mod rundir;
pub mod scoreboard;
pub mod trial;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

pub use aggregate::{analyse, Analysis, Mark};
pub use metric::Metric;
pub use noise::{Design, FloorFile, Floors};
pub use rundir::RunData;

/// `neurogc report` flags.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ReportArgs {
    /// Run directories (`runs/<timestamp>-<name>/`); several with --compare
    #[arg(value_name = "RUN_DIR", required = true)]
    pub run_dirs: Vec<PathBuf>,

    /// Compare the runs: every policy against its run's baseline, and each policy run over run
    /// (Markdown on stdout)
    #[arg(long)]
    pub compare: bool,

    /// Noise floor to judge differences by (JSON, see docs/report.md) [default: the committed
    /// floor measured with the run's design, if there is one]
    #[arg(long, value_name = "FILE")]
    pub noise_floor: Option<PathBuf>,

    /// Write the report here instead of into the run directory (README.md and charts/); with
    /// --compare, the Markdown file (DIR/compare.md, or FILE.md)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// From an A/A run (the same policy twice or more): write the noise floor it measured to
    /// FILE, e.g. crates/neurogc-report/floors/alternating.json
    #[arg(long, value_name = "FILE")]
    pub write_noise_floor: Option<PathBuf>,
}

/// What a report run produced.
#[derive(Debug, Clone)]
pub struct Written {
    pub readme: PathBuf,
    pub charts: Vec<PathBuf>,
    /// Warnings also printed in the README's Warnings section.
    pub warnings: Vec<String>,
    pub analysis: Analysis,
}

/// The floors to judge a run of `design` by: `--noise-floor FILE` (with a warning when it was
/// measured with another design), else the committed floor of that design, else none. Without a
/// design (runs compared across time) only a file given explicitly applies.
pub fn floors(
    noise_floor: Option<&Path>,
    design: Option<&Design>,
    warnings: &mut Vec<String>,
) -> Result<Option<Floors>> {
    let f =
        match (noise_floor, design) {
            (Some(p), _) => {
                let f = Floors::read(p)?;
                if let Some(d) = design.filter(|d| !f.holds_for(d)) {
                    warnings.push(format!(
                    "--noise-floor {} was measured with {}, this run is {}: its marks may not hold",
                    p.display(),
                    f.file.design.map_or("an unknown design".into(), |x| x.describe()),
                    d.describe()
                ));
                }
                Some(f)
            }
            (None, Some(d)) => match Floors::built_in(d) {
                Ok(f) => f,
                Err(e) => {
                    warnings.push(format!("a built-in noise floor is unusable: {e:#}"));
                    None
                }
            },
            (None, None) => None,
        };
    if let Some(f) = &f {
        warnings.extend(f.warnings.iter().cloned());
    }
    Ok(f)
}

/// Writes the report of `run_dir` into `run_dir` (README.md, charts/) with the default noise
/// floor. Returns the README's path. What `neurogc bench` calls when it is done.
pub fn write_report(run_dir: &Path) -> Result<PathBuf> {
    let w = write_report_with(run_dir, None, None)?;
    for warning in &w.warnings {
        eprintln!("neurogc report: warning: {warning}");
    }
    Ok(w.readme)
}

/// Writes the report of `run_dir` into `out` (default: the run directory), judging
/// differences by `noise_floor` (default: the built-in floor).
pub fn write_report_with(
    run_dir: &Path,
    out: Option<&Path>,
    noise_floor: Option<&Path>,
) -> Result<Written> {
    let run = RunData::load(run_dir)?;
    let mut warnings = run.warnings.clone();
    let floors = floors(noise_floor, Some(&Design::of(&run.info)), &mut warnings)?;
    let analysis = analyse(&run, floors);
    let out_dir = out.unwrap_or(run_dir);
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("{}: cannot create", out_dir.display()))?;
    let charts = charts::draw(&run, out_dir);
    // Chart problems are shown in the Charts section; the caller gets them as warnings too.
    let text = markdown::render(&run, &analysis, &charts, &warnings);
    warnings.extend(charts.skipped.iter().cloned());
    let readme = out_dir.join("README.md");
    write_atomic(&readme, &text)?;
    Ok(Written {
        readme,
        charts: charts
            .files
            .iter()
            .map(|(_, rel)| out_dir.join(rel))
            .collect(),
        warnings,
        analysis,
    })
}

/// The noise-floor file an A/A run measures. An error unless every policy has the same spec.
pub fn aa_floor_file(run: &RunData, analysis: &Analysis) -> Result<FloorFile> {
    let Some(aa) = &analysis.aa else {
        let specs: Vec<&str> = run.info.policies.iter().map(|p| p.spec.as_str()).collect();
        bail!(
            "{}: not an A/A run (policies {specs:?}): a noise floor is measured by running the \
             same policy at least twice, e.g. `neurogc bench --policy default --policy default`",
            run.dir.display()
        );
    };
    if aa.floors.is_empty() {
        bail!(
            "{}: the A/A run has no metric measured on both sides: no floor",
            run.dir.display()
        );
    }
    let info = &run.info;
    let mut protocol = Vec::new();
    protocol.push(info.mode.to_string());
    let per_policy: Vec<String> = analysis
        .policies
        .iter()
        .map(|p| p.used.len().to_string())
        .collect();
    protocol.push(format!("trials per policy {}", per_policy.join("/")));
    protocol.push(format!("warm-up {}", format::seconds(info.warmup_s)));
    protocol.push(format!("{} per trial", format::seconds(info.duration_s)));
    protocol.push(markdown::load_text(info.load.as_ref()));
    Ok(FloorFile {
        schema: 1,
        measured: Some(format::iso(info.created)),
        run: Some(info.name.clone()),
        command: (!info.command.is_empty()).then(|| info.command.join(" ")),
        design: Some(Design::of(info)),
        protocol: Some(protocol.join(", ")),
        system: Some(info.system.clone()),
        metrics: aa
            .floors
            .iter()
            .map(|(m, f)| (m.key().to_string(), (f * 1e6).round() / 1e6))
            .collect(),
        p99_all: pooled_aa_floor(analysis),
        aa: Some(aa.summary()),
    })
}

/// The A/A floor of the p99 of all requests: over every candidate against the baseline, the
/// largest deviation from 1 of the pooled ratio's interval.
fn pooled_aa_floor(a: &Analysis) -> Option<f64> {
    let base = pooled::units(a, a.baseline());
    a.policies
        .iter()
        .skip(1)
        .filter_map(|p| {
            let r = pooled::ratio_ci(&base, &pooled::units(a, p), 0.99, &aggregate::bootstrap())?;
            Some(neurogc_stats::NoiseFloor::from_ratio_interval(&r)?.relative())
        })
        .reduce(f64::max)
        .map(|f| (f * 1e6).round() / 1e6)
}

/// `--compare`: the Markdown comparing `dirs`.
pub fn compare_runs(dirs: &[PathBuf], noise_floor: Option<&Path>) -> Result<(String, Vec<String>)> {
    let mut warnings = Vec::new();
    // Runs made at different times share no window: only an explicit floor applies.
    let floors = floors(noise_floor, None, &mut warnings)?;
    let mut runs = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let run = RunData::load(dir)?;
        let base = dir
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| run.info.name.clone());
        let name = if dirs[..i].iter().any(|d| d.file_name() == dir.file_name()) {
            format!("{}:{base}", i + 1)
        } else {
            base
        };
        warnings.extend(run.warnings.iter().map(|w| format!("{name}: {w}")));
        let analysis = analyse(&run, floors.clone());
        runs.push(compare::Analysed {
            run,
            analysis,
            name,
        });
    }
    Ok((compare::render(&runs, floors.as_ref()), warnings))
}

fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("md.tmp");
    std::fs::write(&tmp, text).with_context(|| format!("{}: cannot write", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("{}: cannot write", path.display()))
}

/// Runs `neurogc report`. Returns the exit code (0); bad input is an error.
pub fn run(args: ReportArgs) -> Result<i32> {
    if args.compare {
        if args.run_dirs.len() < 2 {
            bail!("--compare needs at least two run directories");
        }
        if args.write_noise_floor.is_some() {
            bail!("--write-noise-floor takes one A/A run, not --compare");
        }
        let (md, warnings) = compare_runs(&args.run_dirs, args.noise_floor.as_deref())?;
        for w in &warnings {
            eprintln!("neurogc report: warning: {w}");
        }
        match &args.out {
            Some(out) => {
                let path = if out.extension().is_some_and(|e| e == "md") {
                    out.clone()
                } else {
                    std::fs::create_dir_all(out)
                        .with_context(|| format!("--out {}: cannot create", out.display()))?;
                    out.join("compare.md")
                };
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent)
                        .with_context(|| format!("--out {}: cannot create", parent.display()))?;
                }
                write_atomic(&path, &md)?;
                print!("{md}");
                eprintln!("comparison: {}", path.display());
            }
            None => print!("{md}"),
        }
        return Ok(0);
    }
    if args.run_dirs.len() > 1 && (args.out.is_some() || args.write_noise_floor.is_some()) {
        bail!("--out and --write-noise-floor take one run directory (or use --compare)");
    }
    for dir in &args.run_dirs {
        let w = write_report_with(dir, args.out.as_deref(), args.noise_floor.as_deref())?;
        for warning in &w.warnings {
            eprintln!("neurogc report: warning: {warning}");
        }
        for line in markdown::terminal_summary(&w.analysis) {
            println!("{line}");
        }
        if let Some(aa) = &w.analysis.aa {
            println!("A/A: {}", aa.summary().verdict());
        }
        println!("report:   {}", w.readme.display());
        if let Some(path) = &args.write_noise_floor {
            let run = RunData::load(dir)?;
            let file = aa_floor_file(&run, &w.analysis)?;
            noise::write(path, &file)?;
            println!("noise floor: {}", path.display());
        }
    }
    Ok(0)
}
