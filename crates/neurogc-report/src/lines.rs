//! Line charts on axes of the caller's choosing, for commands other than the bench report
//! (`neurogc sweep`'s step times), drawn as the report's charts are: the same font
//! ([`crate::charts`]' DejaVu Sans or `NEUROGC_REPORT_FONT`), palette and width, PNG.

use std::path::Path;

use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;

use crate::charts::{ensure_font, policy_color};

/// The family [`crate::charts`] registers the font under.
const FAMILY: &str = "sans-serif";
const WIDTH: u32 = 1000;
const PANEL_HEIGHT: u32 = 380;

/// One line: its colour (a position in the report palette, so a configuration keeps its colour
/// across panels) and a legend entry for the first line of each colour.
#[derive(Clone, Debug)]
pub struct Line {
    pub color: usize,
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// One panel of a chart.
#[derive(Clone, Debug)]
pub struct Panel {
    pub caption: String,
    pub x_desc: String,
    pub y_desc: String,
    pub lines: Vec<Line>,
}

/// Draws `panels` one above the other into the PNG `path`. Errors say why it was not drawn
/// (an unusable font, an unwritable file).
pub fn draw(path: &Path, panels: &[Panel]) -> Result<()> {
    ensure_font().map_err(|e| anyhow!(e))?;
    let height = PANEL_HEIGHT * panels.len().max(1) as u32;
    let root = BitMapBackend::new(path, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let areas = root.split_evenly((panels.len().max(1), 1));
    for (panel, area) in panels.iter().zip(&areas) {
        draw_panel(area, panel)?;
    }
    root.present()
        .map_err(|e| anyhow!("{e}"))
        .with_context(|| format!("cannot write {}", path.display()))
}

fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi < lo {
        (0.0, 1.0)
    } else if hi > lo {
        (lo, hi)
    } else {
        (lo, lo + 1.0)
    }
}

fn draw_panel(area: &DrawingArea<BitMapBackend, plotters::coord::Shift>, p: &Panel) -> Result<()> {
    let points = || p.lines.iter().flat_map(|l| l.points.iter());
    let (x_lo, x_hi) = range(points().map(|q| q.0));
    let (_, y_hi) = range(points().map(|q| q.1));
    // From zero, with headroom for the legend.
    let y_top = y_hi.max(0.0) * 1.3 + f64::EPSILON;
    let mut chart = ChartBuilder::on(area)
        .caption(&p.caption, (FAMILY, 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x_lo..x_hi, 0f64..y_top)
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .x_desc(p.x_desc.as_str())
        .y_desc(p.y_desc.as_str())
        .label_style((FAMILY, 13))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    let mut labelled: Vec<usize> = Vec::new();
    for line in p.lines.iter().filter(|l| !l.points.is_empty()) {
        let color = policy_color(line.color);
        let drawn = chart
            .draw_series(LineSeries::new(
                line.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(|e| anyhow!("{e}"))?;
        if !labelled.contains(&line.color) {
            labelled.push(line.color);
            drawn.label(line.label.clone()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        }
    }
    if !labelled.is_empty() {
        chart
            .configure_series_labels()
            .label_font((FAMILY, 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_a_png_with_a_panel_per_entry() {
        let dir = std::env::temp_dir().join(format!("neurogc-lines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.png");
        let line = |color, k: f64| Line {
            color,
            label: format!("c{color}"),
            points: (1..=20).map(|i| (i as f64, k * i as f64)).collect(),
        };
        let panel = Panel {
            caption: "step time".into(),
            x_desc: "step".into(),
            y_desc: "ms".into(),
            lines: vec![line(0, 1.0), line(0, 1.1), line(1, 2.0)],
        };
        draw(&path, &[panel.clone(), panel]).unwrap();
        let decoder = png::Decoder::new(std::fs::File::open(&path).unwrap());
        let info = decoder.read_info().unwrap().info().clone();
        assert_eq!((info.width, info.height), (WIDTH, 2 * PANEL_HEIGHT));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
