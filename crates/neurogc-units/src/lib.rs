//! The small grammars and formats every NeuroGC crate shares, so that a duration means the same
//! in a policy spec and in a command-line flag, and a run is named the same way everywhere.
//!
//! - [`parse_duration`]: `30`, `1.5`, `250ms`, `30s`, `2m`, `1m30s`, `1m 30s`, `1h`: every
//!   duration a flag, a policy spec or a task file takes (bare numbers are seconds).
//! - [`parse_duration_range`]: `MIN,MAX` of two durations (`0.1,0.5`, `100ms,500ms`).
//! - [`fmt_clock`]: a time left, `4:05` or `1:02:03`, for an ETA.
//! - [`parse_size`]: `1048576`, `800K`, `512M`, `1.5GiB`.
//! - [`unix_now`], [`unix`], [`utc_fields`], [`utc_stamp`], [`utc_text`], [`utc_iso`]: times
//!   without a date library.
//! - [`slug`]: a label as a file-name part.
//! - [`fmt_ms`]: a latency for a terminal table.
//!
//! No dependencies: this crate is linked into the agent, which lives in other people's services.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest duration any flag or spec accepts: a year.
pub const MAX_DURATION: Duration = Duration::from_secs(366 * 86_400);

/// Parses a duration: a bare number of seconds (`30`, `1.5`) or numbers with units `h`, `m`, `s`,
/// `ms`, in any sequence (`1m30s`, `250ms`, `1.5s`), spaces allowed between them (`1m 30s`,
/// `500 ms`). Negative, non-finite and over-a-year durations are refused; the message quotes
/// the input. The one duration grammar: flags, policy specs and task files all use it.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("empty duration (e.g. 30, 1.5s, 500ms, 2m)".into());
    }
    let total = match trimmed.parse::<f64>() {
        Ok(secs) => secs,
        Err(_) => {
            let bad = || format!("{text:?} is not a duration (e.g. 30, 1.5s, 500ms, 2m, 1m30s)");
            let mut total = 0.0;
            let mut rest = trimmed;
            while !rest.is_empty() {
                let num_len = rest
                    .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                    .unwrap_or(rest.len());
                let value: f64 = rest[..num_len].parse().map_err(|_| bad())?;
                let after = rest[num_len..].trim_start();
                let unit_len = after
                    .find(|c: char| !c.is_ascii_alphabetic())
                    .unwrap_or(after.len());
                let unit = &after[..unit_len];
                let scale = match unit {
                    "h" => 3600.0,
                    "m" => 60.0,
                    "s" => 1.0,
                    "ms" => 0.001,
                    // A number needs its unit unless it is the whole text (`30`, handled above).
                    "" => return Err(bad()),
                    _ => {
                        return Err(format!(
                            "unknown unit {unit:?} in {text:?} (use h, m, s or ms)"
                        ))
                    }
                };
                total += value * scale;
                rest = after[unit_len..].trim_start();
            }
            total
        }
    };
    if !total.is_finite() || total < 0.0 || total > MAX_DURATION.as_secs_f64() {
        return Err(format!("{text:?} is out of range (0 to 366 days)"));
    }
    Ok(Duration::from_secs_f64(total))
}

/// Parses `MIN,MAX`, two durations in the [`parse_duration`] grammar with MIN <= MAX (a think
/// time's bounds: `0.1,0.5`, `100ms,500ms`).
pub fn parse_duration_range(text: &str) -> Result<(Duration, Duration), String> {
    let (lo, hi) = text
        .split_once(',')
        .ok_or_else(|| format!("{text:?}: expected MIN,MAX (e.g. 0.1,0.5 or 100ms,500ms)"))?;
    let (lo, hi) = (parse_duration(lo)?, parse_duration(hi)?);
    if lo > hi {
        return Err(format!("{text:?}: MIN is above MAX"));
    }
    Ok((lo, hi))
}

/// Parses a size in bytes: `1073741824`, `800K`, `512M`, `1.5G`, `2T` (binary units, case
/// insensitive, an optional trailing `B` or `iB`). Zero and negative sizes are refused.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let upper = text.trim().to_ascii_uppercase();
    let stripped = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let (number, scale) = match stripped.chars().last() {
        Some('K') => (&stripped[..stripped.len() - 1], 1u64 << 10),
        Some('M') => (&stripped[..stripped.len() - 1], 1 << 20),
        Some('G') => (&stripped[..stripped.len() - 1], 1 << 30),
        Some('T') => (&stripped[..stripped.len() - 1], 1 << 40),
        _ => (stripped, 1),
    };
    let v: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a size (e.g. 512M, 1.5G, 1048576)"))?;
    if !v.is_finite() || v <= 0.0 || v * scale as f64 >= u64::MAX as f64 {
        return Err(format!("{text:?} must be a positive size"));
    }
    Ok((v * scale as f64) as u64)
}

/// Seconds since the Unix epoch of `t` (0 before it).
pub fn unix(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> f64 {
    unix(SystemTime::now())
}

/// Unix seconds as UTC `[year, month, day, hour, minute, second]` (civil-from-days, Howard
/// Hinnant's method).
pub fn utc_fields(unix: f64) -> [i64; 6] {
    let secs = unix.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    [year, month, day, rem / 3600, rem % 3600 / 60, rem % 60]
}

/// `YYYYmmdd-HHMMSS` in UTC: how run directories are named.
pub fn utc_stamp(unix: f64) -> String {
    let [y, mo, d, h, mi, s] = utc_fields(unix);
    format!("{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}")
}

/// `YYYY-mm-dd HH:MM:SS UTC`: how reports print a time.
pub fn utc_text(unix: f64) -> String {
    let [y, mo, d, h, mi, s] = utc_fields(unix);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
}

/// `YYYY-mm-ddTHH:MM:SSZ` (ISO 8601).
pub fn utc_iso(unix: f64) -> String {
    let [y, mo, d, h, mi, s] = utc_fields(unix);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// A label as a file-name part: ASCII letters, digits, `-`, `_` and `.` stay; anything else
/// becomes `_`. A name of dots only becomes underscores, so a slug never means `.` or `..`.
pub fn slug(label: &str) -> String {
    let s: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.chars().all(|c| c == '.') {
        s.replace('.', "_")
    } else {
        s
    }
}

/// A time left for an ETA: `0:42`, `12:05` (minutes:seconds), `1:02:03` from an hour on;
/// `-:--` when unknown (negative or not finite).
pub fn fmt_clock(secs: f64) -> String {
    if !secs.is_finite() || secs < 0.0 {
        return "-:--".into();
    }
    let s = secs.round() as u64;
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// Milliseconds for a terminal table: `-` when unmeasured, three significant digits or so.
pub fn fmt_ms(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) if x >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let d = |s: &str| parse_duration(s).unwrap();
        assert_eq!(d("30"), Duration::from_secs(30));
        assert_eq!(d("1.5"), Duration::from_millis(1500));
        assert_eq!(d("1.5s"), Duration::from_millis(1500));
        assert_eq!(d("250ms"), Duration::from_millis(250));
        assert_eq!(d("2m"), Duration::from_secs(120));
        assert_eq!(d("1m30s"), Duration::from_secs(90));
        assert_eq!(d(" 1h "), Duration::from_secs(3600));
        assert_eq!(d("0"), Duration::ZERO);
        for bad in [
            "", "-1", "nan", "inf", "soon", "5x", "1e30", "400d", "1m30", "m", "1..5s", "1 2s",
        ] {
            let e = parse_duration(bad).unwrap_err();
            assert!(
                e.contains(&format!("{bad:?}")) || bad.is_empty(),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn one_grammar_with_or_without_spaces() {
        let d = |s: &str| parse_duration(s).unwrap();
        assert_eq!(d("1m 30s"), Duration::from_secs(90));
        assert_eq!(d("500 ms"), Duration::from_millis(500));
        assert_eq!(d("1h 2m 3.5s"), Duration::from_secs_f64(3723.5));
        assert_eq!(d("0.25"), d("250ms"));
        assert_eq!(d("90"), d("1m30s"));
    }

    #[test]
    fn duration_ranges() {
        let ms = Duration::from_millis;
        assert_eq!(parse_duration_range("0.1,0.5").unwrap(), (ms(100), ms(500)));
        assert_eq!(
            parse_duration_range("100ms, 1s").unwrap(),
            (ms(100), ms(1000))
        );
        assert_eq!(parse_duration_range("0,0").unwrap(), (ms(0), ms(0)));
        for (bad, says) in [
            ("0.5,0.1", "MIN is above MAX"),
            ("x,1", "\"x\" is not a duration"),
            ("0.5", "expected MIN,MAX"),
            ("-1,2", "out of range"),
        ] {
            let e = parse_duration_range(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn clocks() {
        assert_eq!(fmt_clock(0.0), "0:00");
        assert_eq!(fmt_clock(42.4), "0:42");
        assert_eq!(fmt_clock(725.0), "12:05");
        assert_eq!(fmt_clock(3723.0), "1:02:03");
        assert_eq!(fmt_clock(f64::NAN), "-:--");
        assert_eq!(fmt_clock(-1.0), "-:--");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("800kb").unwrap(), 800 << 10);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        for bad in ["0", "-1M", "lots", "", "1e40"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn utc() {
        assert_eq!(utc_stamp(0.0), "19700101-000000");
        assert_eq!(utc_stamp(1_795_329_015.5), "20261122-063015");
        assert_eq!(utc_stamp(951_782_400.0), "20000229-000000");
        assert_eq!(utc_text(951_782_400.0), "2000-02-29 00:00:00 UTC");
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("neurogc-seed"), "neurogc-seed");
        assert_eq!(slug("a/b c:d"), "a_b_c_d");
        assert_eq!(slug(".."), "__");
        assert_eq!(slug("v1.2"), "v1.2");
    }

    #[test]
    fn milliseconds() {
        assert_eq!(fmt_ms(None), "-");
        assert_eq!(fmt_ms(Some(123.4)), "123");
        assert_eq!(fmt_ms(Some(12.34)), "12.3");
        assert_eq!(fmt_ms(Some(1.234)), "1.23");
    }
}
