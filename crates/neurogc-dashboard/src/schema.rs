//! What each column holds. The rules live with the sample schema in `neurogc-core`
//! (`sample::read`), so the dashboard validates exactly the columns the agent writes, reads a
//! cell as every other reader does, and follows when a column is added there.

pub use neurogc_core::sample::read::{
    column_kind as kind, parse_bool, Cell, ColumnKind as Kind, SERVER, TIME, TIME_ALIAS,
};
use serde_json::Value;

/// Fields the dashboard adds to every sample it stores; a client may not set them.
pub const RESERVED: [&str; 2] = ["seq", "ingest_ms"];

/// A cell of a sample CSV as the JSON value a client would have posted.
pub fn cell_json(cell: &Cell) -> Value {
    match cell {
        Cell::Empty => Value::Null,
        Cell::Number(x) => serde_json::Number::from_f64(*x).map_or(Value::Null, Value::Number),
        Cell::Bool(b) => Value::Bool(*b),
        Cell::Text(s) => Value::String(s.clone()),
    }
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
        assert_eq!(kind("server"), Some(Kind::Text));
        assert_eq!(kind("my_extra_metric"), None);
    }

    #[test]
    fn cells_become_json_values() {
        use serde_json::json;
        assert_eq!(cell_json(&Cell::Empty), Value::Null);
        assert_eq!(cell_json(&Cell::Number(1.5)), json!(1.5));
        assert_eq!(cell_json(&Cell::Bool(true)), json!(true));
        assert_eq!(cell_json(&Cell::Text("0".into())), json!("0"));
    }
}
