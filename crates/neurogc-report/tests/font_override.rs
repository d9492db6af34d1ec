//! The chart font is built in; `NEUROGC_REPORT_FONT` replaces it. A font file that cannot be read
//! leaves the report written, without charts, saying which file and how to get the built-in font
//! back. (Its own test binary: the font is registered once per process.)

use std::path::Path;

#[test]
fn unreadable_font_override_skips_charts_with_a_clear_message() {
    std::env::set_var("NEUROGC_REPORT_FONT", "/nonexistent/DejaVuSans.ttf");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bench-2x2");
    let out = std::env::temp_dir().join(format!("neurogc-report-no-font-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let w = neurogc_report::write_report_with(&fixture, Some(&out), None).unwrap();
    assert!(w.charts.is_empty());
    let md = std::fs::read_to_string(&w.readme).unwrap();
    assert!(
        md.contains("charts not drawn: cannot read the font /nonexistent/DejaVuSans.ttf"),
        "{md}"
    );
    assert!(
        md.contains("unset it to use the built-in DejaVu Sans"),
        "{md}"
    );
    assert!(w.warnings.iter().any(|x| x.contains("NEUROGC_REPORT_FONT")));
    // The tables are all there.
    assert!(md.contains("### The seed's table"));
    assert!(!out.join("charts").exists());
    std::fs::remove_dir_all(&out).unwrap();
}
