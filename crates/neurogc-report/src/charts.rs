//! The report's PNG charts, drawn with plotters' bitmap backend.
//!
//! Text goes through ab_glyph with DejaVu Sans compiled in (the `dejavu` crate: DejaVu 2.37,
//! the release Debian's `fonts-dejavu-core` ships), so charts render on any machine. The
//! TrueType file named by `NEUROGC_REPORT_FONT` replaces it; if that file cannot be used the
//! charts are skipped and the report says why.
//!
//! Every x axis is seconds since the trial's `measure_start`, so repetitions overlay.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{anyhow, Context, Result};
use neurogc_core::policy::PolicySpec;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::rundir::RunData;

/// The environment variable naming a TrueType file to draw text with instead of the built-in
/// DejaVu Sans.
pub const FONT_ENV: &str = "NEUROGC_REPORT_FONT";

const WIDTH: u32 = 1000;
const FAMILY: &str = "sans-serif";

/// One policy's colour, by its position in `run.json`.
pub fn policy_color(i: usize) -> RGBColor {
    const PALETTE: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    PALETTE[i % PALETTE.len()]
}

/// The charts written, or why there are none.
#[derive(Debug, Clone, Default)]
pub struct Charts {
    /// (title, path relative to the report, e.g. `charts/memory.png`).
    pub files: Vec<(String, String)>,
    /// Why charts are missing (an unusable `NEUROGC_REPORT_FONT`, a drawing error).
    pub skipped: Vec<String>,
}

/// Registers the font once per process: the built-in DejaVu Sans, or `NEUROGC_REPORT_FONT`'s.
pub(crate) fn ensure_font() -> std::result::Result<(), String> {
    static FONT: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    FONT.get_or_init(
        || match std::env::var_os(FONT_ENV).filter(|v| !v.is_empty()) {
            None => {
                plotters::style::register_font(FAMILY, FontStyle::Normal, dejavu::sans::regular())
                    .map_err(|_| {
                        "charts not drawn: the built-in DejaVu Sans did not load".to_string()
                    })
            }
            Some(path) => {
                let path = PathBuf::from(path);
                let bytes = load_font(&path)?;
                plotters::style::register_font(FAMILY, FontStyle::Normal, bytes).map_err(|_| {
                    format!(
                        "charts not drawn: {FONT_ENV}={} is not a usable TrueType font; unset it \
                     to use the built-in DejaVu Sans",
                        path.display()
                    )
                })
            }
        },
    )
    .clone()
}

/// Reads a font file for the whole process (plotters keeps `&'static` font data).
pub fn load_font(path: &Path) -> std::result::Result<&'static [u8], String> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Box::leak(bytes.into_boxed_slice())),
        Err(e) => Err(format!(
            "charts not drawn: cannot read the font {} ({e}) named by {FONT_ENV}; unset it to use \
             the built-in DejaVu Sans",
            path.display()
        )),
    }
}

/// A series of points of one trial.
struct Series {
    policy: usize,
    points: Vec<(f64, f64)>,
}

/// A chart's drawing function.
type DrawFn = fn(&ChartData, &[String], &Path) -> Result<()>;

/// Draws every chart into `out_dir/charts/`. Never fails the report: problems are in
/// [`Charts::skipped`].
pub fn draw(run: &RunData, out_dir: &Path) -> Charts {
    let mut charts = Charts::default();
    if let Err(e) = ensure_font() {
        charts.skipped.push(e);
        return charts;
    }
    let dir = out_dir.join("charts");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        charts.skipped.push(format!(
            "charts not drawn: cannot create {}: {e}",
            dir.display()
        ));
        return charts;
    }
    let labels: Vec<String> = run.info.policies.iter().map(|p| p.label.clone()).collect();
    let data = ChartData::collect(run);
    let jobs: [(&str, &str, DrawFn); 4] = [
        ("Memory: RSS over time", "memory.png", draw_memory),
        (
            "Latency: p95 and p99 per second",
            "latency.png",
            draw_latency,
        ),
        (
            "GC events: pause per collection",
            "gc-timeline.png",
            draw_gc,
        ),
        ("Throughput: requests per second", "rps.png", draw_rps),
    ];
    for (title, file, f) in jobs {
        let path = dir.join(file);
        match f(&data, &labels, &path) {
            Ok(()) => charts
                .files
                .push((title.to_string(), format!("charts/{file}"))),
            Err(e) => charts.skipped.push(format!("{file} not drawn: {e:#}")),
        }
    }
    charts
}

/// What the charts show, per trial, on the seconds-since-measure-start axis.
struct ChartData {
    rss: Vec<Series>,
    /// The RSS budgets the policies' specs name, in MiB: (policy, budget).
    rss_budgets: Vec<(usize, f64)>,
    p95: Vec<Series>,
    p99: Vec<Series>,
    rps: Vec<Series>,
    /// Per generation: (policy, time, pause ms).
    gc: [Vec<(usize, f64, f64)>; 3],
    x_max: f64,
    /// Trials with a measured window.
    trials: usize,
}

impl ChartData {
    fn collect(run: &RunData) -> ChartData {
        let index: BTreeMap<&str, usize> = run
            .info
            .policies
            .iter()
            .enumerate()
            .map(|(i, p)| (p.label.as_str(), i))
            .collect();
        let mut d = ChartData {
            rss: Vec::new(),
            rss_budgets: rss_budgets(run),
            p95: Vec::new(),
            p99: Vec::new(),
            rps: Vec::new(),
            gc: [Vec::new(), Vec::new(), Vec::new()],
            x_max: run.info.duration_s,
            trials: 0,
        };
        for t in &run.trials {
            let Some(&policy) = index.get(t.label()) else {
                continue;
            };
            let Some(start) = t.info.as_ref().and_then(|i| i.measure_start) else {
                continue;
            };
            d.trials += 1;
            let end = t
                .info
                .as_ref()
                .and_then(|i| i.measure_end)
                .unwrap_or(f64::INFINITY);
            let inside = |time: f64| time >= start && time <= end;
            if let Some(s) = &t.samples {
                // The whole service's: every process's RSS summed.
                let rows: Vec<_> = s.rows.iter().filter(|r| inside(r.time)).collect();
                let points: Vec<(f64, f64)> = crate::rundir::combined_rss(&rows)
                    .into_iter()
                    .map(|(time, rss)| (time - start, rss / 1024.0 / 1024.0))
                    .collect();
                d.push_x(&points);
                d.rss.push(Series { policy, points });
            }
            let rows: Vec<_> = t.load_rows.iter().filter(|r| r.t >= start).collect();
            let series = |f: &dyn Fn(&neurogc_load::Row) -> Option<f64>| Series {
                policy,
                points: rows
                    .iter()
                    .filter_map(|r| Some((r.t - start, f(r)?)))
                    .collect(),
            };
            let p95 = series(&|r| r.p95_ms);
            let p99 = series(&|r| r.p99_ms);
            let rps = series(&|r| Some(r.rps));
            d.push_x(&rps.points);
            d.p95.push(p95);
            d.p99.push(p99);
            d.rps.push(rps);
            if let Some(events) = &t.gc_events {
                for e in events.iter().filter(|e| inside(e.time)) {
                    d.gc[usize::from(e.generation.min(2))].push((
                        policy,
                        e.time - start,
                        e.pause_ms,
                    ));
                }
            }
        }
        if d.x_max <= 0.0 {
            d.x_max = 1.0;
        }
        d
    }

    fn push_x(&mut self, points: &[(f64, f64)]) {
        for p in points {
            self.x_max = self.x_max.max(p.0);
        }
    }
}

/// Each policy's explicit `rss=` budget (a spec that does not parse has none to show).
fn rss_budgets(run: &RunData) -> Vec<(usize, f64)> {
    let budget = |spec: &str| spec.parse::<PolicySpec>().ok()?.rss_budget();
    run.info
        .policies
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, budget(&p.spec)? as f64 / 1024.0 / 1024.0)))
        .collect()
}

const X_DESC: &str = "seconds since the start of the measured window";

/// The y range: from 0 (or just below the data when `from_zero` is false) to above the data,
/// with headroom for the legend.
fn y_range(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi < lo {
        return (0.0, 1.0);
    }
    if from_zero || lo <= 0.0 {
        lo = 0.0;
    } else {
        let pad = ((hi - lo) * 0.1).max(hi * 0.01);
        lo = (lo - pad).max(0.0);
    }
    let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
    (lo, hi + span * 0.3)
}

/// Lines, one per trial, coloured by policy, on one panel; `levels` are dashed horizontal lines
/// in a policy's colour (its budget).
#[allow(clippy::too_many_arguments)]
fn lines_panel(
    area: &DrawingArea<BitMapBackend, Shift>,
    caption: &str,
    y_desc: &str,
    series: &[Series],
    levels: &[(usize, f64)],
    labels: &[String],
    x_max: f64,
    from_zero: bool,
) -> Result<()> {
    let (y_low, y_top) = y_range(
        series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(levels.iter().map(|l| l.1)),
        from_zero,
    );
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FAMILY, 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x_max, y_low..y_top)
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .x_desc(X_DESC)
        .y_desc(y_desc)
        .label_style((FAMILY, 13))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    for &(policy, level) in levels {
        let color = policy_color(policy);
        let label = format!("{}: budget", labels.get(policy).map_or("?", |l| l.as_str()));
        chart
            .draw_series(DashedLineSeries::new(
                [(0.0, level), (x_max, level)],
                8,
                6,
                color.stroke_width(2),
            ))
            .map_err(|e| anyhow!("{e}"))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    let mut labelled = vec![false; labels.len()];
    for s in series {
        if s.points.is_empty() {
            continue;
        }
        let color = policy_color(s.policy);
        let drawn = chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(|e| anyhow!("{e}"))?;
        if let Some(l) = labelled.get_mut(s.policy).filter(|l| !**l) {
            *l = true;
            drawn.label(labels[s.policy].clone()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        }
    }
    if labelled.iter().any(|l| *l) || !levels.is_empty() {
        chart
            .configure_series_labels()
            .label_font((FAMILY, 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
    }
    Ok(())
}

/// A white canvas of the common width.
fn canvas(path: &Path, height: u32) -> Result<DrawingArea<BitMapBackend<'_>, Shift>> {
    let root = BitMapBackend::new(path, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    Ok(root)
}

fn finish(root: DrawingArea<BitMapBackend, Shift>, path: &Path) -> Result<()> {
    root.present()
        .map_err(|e| anyhow!("{e}"))
        .with_context(|| format!("cannot write {}", path.display()))
}

fn draw_memory(d: &ChartData, labels: &[String], path: &Path) -> Result<()> {
    let root = canvas(path, 420)?;
    lines_panel(
        &root,
        "Memory: resident set size per trial",
        "RSS (MiB)",
        &d.rss,
        &d.rss_budgets,
        labels,
        d.x_max,
        false,
    )?;
    finish(root, path)
}

fn draw_latency(d: &ChartData, labels: &[String], path: &Path) -> Result<()> {
    let root = canvas(path, 720)?;
    let panels = root.split_evenly((2, 1));
    lines_panel(
        &panels[0],
        "p95 latency per second",
        "p95 (ms)",
        &d.p95,
        &[],
        labels,
        d.x_max,
        true,
    )?;
    lines_panel(
        &panels[1],
        "p99 latency per second",
        "p99 (ms)",
        &d.p99,
        &[],
        labels,
        d.x_max,
        true,
    )?;
    finish(root, path)
}

fn draw_rps(d: &ChartData, labels: &[String], path: &Path) -> Result<()> {
    let root = canvas(path, 420)?;
    lines_panel(
        &root,
        "Requests per second (load generator)",
        "requests / s",
        &d.rps,
        &[],
        labels,
        d.x_max,
        true,
    )?;
    finish(root, path)
}

fn draw_gc(d: &ChartData, labels: &[String], path: &Path) -> Result<()> {
    let root = canvas(path, 900)?;
    let panels = root.split_evenly((3, 1));
    for (g, area) in panels.iter().enumerate() {
        let events = &d.gc[g];
        let (_, y_top) = y_range(events.iter().map(|e| e.2), true);
        let caption = format!(
            "Generation {g}: pause per collection ({} collections in {} trials)",
            events.len(),
            d.trials
        );
        let mut chart = ChartBuilder::on(area)
            .caption(caption, (FAMILY, 18))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..d.x_max, 0f64..y_top)
            .map_err(|e| anyhow!("{e}"))?;
        chart
            .configure_mesh()
            .light_line_style(RGBColor(238, 238, 238))
            .x_desc(X_DESC)
            .y_desc("pause (ms)")
            .label_style((FAMILY, 13))
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
        let mut any = false;
        for (i, label) in labels.iter().enumerate() {
            let color = policy_color(i);
            let points: Vec<(f64, f64)> = events
                .iter()
                .filter(|e| e.0 == i)
                .map(|e| (e.1, e.2))
                .collect();
            if points.is_empty() {
                continue;
            }
            any = true;
            // A stem from 0 to the pause, and a marker whose size grows with the pause.
            chart
                .draw_series(points.iter().map(|&(x, y)| {
                    PathElement::new(vec![(x, 0.0), (x, y)], color.mix(0.5).stroke_width(1))
                }))
                .map_err(|e| anyhow!("{e}"))?;
            chart
                .draw_series(points.iter().map(|&(x, y)| {
                    let size = (3.0 + 8.0 * (y / y_top)).round() as i32;
                    Circle::new((x, y), size, color.filled())
                }))
                .map_err(|e| anyhow!("{e}"))?
                .label(label.clone())
                .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
        }
        if any {
            chart
                .configure_series_labels()
                .label_font((FAMILY, 13))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(|e| anyhow!("{e}"))?;
        }
    }
    finish(root, path)
}
