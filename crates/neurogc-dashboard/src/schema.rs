//! What each known column holds, taken from the sample schema in `neurogc-core` so the dashboard
//! validates exactly the columns the agent writes (and follows when a column is added there).

use neurogc_core::sample::{Sample, Value};
use std::collections::HashMap;
use std::sync::OnceLock;

/// How a column's value is checked and kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A number or null.
    Number,
    /// A boolean; also `"True"`/`"False"` (as the seed's CSVs and Python's `str(bool)` write it),
    /// `0`/`1`, or null.
    Bool,
    /// A string or null.
    Text,
}

/// The sample's own name for the server is not a schema column: every ingested sample needs it.
pub const SERVER: &str = "server";
/// Unix seconds; the seed's benchmark CSVs call it `timestamp`.
pub const TIME: &str = "time";
pub const TIME_ALIAS: &str = "timestamp";
/// Fields the dashboard adds to every sample it stores; a client may not set them.
pub const RESERVED: [&str; 2] = ["seq", "ingest_ms"];

fn kinds() -> &'static HashMap<String, Kind> {
    static KINDS: OnceLock<HashMap<String, Kind>> = OnceLock::new();
    KINDS.get_or_init(|| {
        Sample::default()
            .fields()
            .into_iter()
            .map(|(name, value)| {
                let kind = match value {
                    Value::Float(_) | Value::Int(_) => Kind::Number,
                    Value::Bool(_) => Kind::Bool,
                    Value::Text(_) => Kind::Text,
                };
                (name, kind)
            })
            .collect()
    })
}

/// The kind of a known column; `None` for a column the schema does not know (kept if numeric).
pub fn kind(column: &str) -> Option<Kind> {
    kinds().get(column).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_core_schema() {
        assert_eq!(kind("time"), Some(Kind::Number));
        assert_eq!(kind("cpu"), Some(Kind::Number));
        assert_eq!(kind("gc2_pause_ms_max"), Some(Kind::Number));
        assert_eq!(kind("gc_triggered"), Some(Kind::Bool));
        assert_eq!(kind("gc_enabled"), Some(Kind::Bool));
        assert_eq!(kind("policy_reason"), Some(Kind::Text));
        assert_eq!(kind("server"), None);
        assert_eq!(kind("my_extra_metric"), None);
    }
}
