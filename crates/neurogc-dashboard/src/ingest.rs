//! Validation of ingested samples: `POST /api/metrics` bodies and replayed CSV rows both end here,
//! so a sample is held to one standard whatever its source.
//!
//! A request is all or nothing: one bad sample rejects the whole batch, with a reason that names
//! its index and field, so a client never has to guess which half of a batch was kept.

use crate::schema::{self, Kind};
use serde_json::{Map, Value};
use std::fmt;

/// Longest server name accepted (it labels chart series and cards).
const MAX_SERVER_LEN: usize = 128;
/// Longest text value kept (a policy's reason is a sentence, not a document): longer ones are
/// cut to it, and the cut is reported ([`Parsed::truncated`], `/api/status`).
pub const MAX_TEXT_LEN: usize = 1024;

/// A validated sample, before the store gives it a sequence number.
#[derive(Clone, Debug, PartialEq)]
pub struct Incoming {
    pub server: String,
    /// Unix seconds.
    pub time: f64,
    /// Every other kept field, normalised (booleans as JSON booleans, unmeasured as null).
    pub fields: Map<String, Value>,
}

/// Why one sample was refused: the field (empty for the sample as a whole) and what was wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleError {
    pub field: String,
    pub message: String,
}

impl fmt::Display for SampleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "field `{}`: {}", self.field, self.message)
        }
    }
}

/// Why a request was refused, with the HTTP status that says so.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejection {
    pub status: u16,
    pub reason: String,
}

impl Rejection {
    pub fn new(status: u16, reason: impl Into<String>) -> Self {
        Rejection {
            status,
            reason: reason.into(),
        }
    }
}

/// A text value cut to [`MAX_TEXT_LEN`] characters.
#[derive(Clone, Debug, PartialEq)]
pub struct Truncated {
    /// The sample's index in its request (0 for a single sample).
    pub sample: usize,
    pub field: String,
    /// Its length before the cut, in characters.
    pub chars: usize,
}

impl fmt::Display for Truncated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sample {}: field `{}`: {} characters, cut to the first {MAX_TEXT_LEN}",
            self.sample, self.field, self.chars
        )
    }
}

/// A parsed request body: its samples, and the text values that were cut short.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub samples: Vec<Incoming>,
    pub truncated: Vec<Truncated>,
}

/// Parses a request body: one sample object, an array of samples, or `{"samples": [...]}`.
pub fn parse_body(body: &[u8]) -> Result<Vec<Incoming>, Rejection> {
    parse_body_noting(body).map(|p| p.samples)
}

/// [`parse_body`], also saying which text values were cut to [`MAX_TEXT_LEN`].
pub fn parse_body_noting(body: &[u8]) -> Result<Parsed, Rejection> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| Rejection::new(400, format!("malformed JSON: {e}")))?;
    let (items, batch) = match value {
        Value::Array(items) => (items, true),
        Value::Object(mut obj) => match obj.remove("samples") {
            Some(Value::Array(items)) => (items, true),
            Some(other) => {
                return Err(Rejection::new(
                    422,
                    format!(
                        "`samples` must be an array of samples, got {}",
                        describe(&other)
                    ),
                ))
            }
            None => (vec![Value::Object(obj)], false),
        },
        other => {
            return Err(Rejection::new(
                422,
                format!(
                "expected a sample object, an array of samples or {{\"samples\": [...]}}, got {}",
                describe(&other)
            ),
            ))
        }
    };
    let mut truncated = Vec::new();
    let samples = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let mut cut = Vec::new();
            let sample = validate_noting(item, &mut cut).map_err(|e| {
                let at = if batch {
                    format!("sample {i}: ")
                } else {
                    String::new()
                };
                Rejection::new(422, format!("{at}{e}"))
            })?;
            truncated.extend(cut.into_iter().map(|(field, chars)| Truncated {
                sample: i,
                field,
                chars,
            }));
            Ok(sample)
        })
        .collect::<Result<_, _>>()?;
    Ok(Parsed { samples, truncated })
}

/// Fields a sample may carry besides `server` and `time`.
pub const MAX_FIELDS: usize = 256;

/// Checks one sample and normalises its fields (see [`Kind`] for what each column accepts).
/// Unknown fields are kept when numeric or boolean and dropped otherwise.
pub fn validate(value: Value) -> Result<Incoming, SampleError> {
    validate_noting(value, &mut Vec::new())
}

/// [`validate`], also noting each text value cut to [`MAX_TEXT_LEN`]: (field, its length).
pub fn validate_noting(
    value: Value,
    truncated: &mut Vec<(String, usize)>,
) -> Result<Incoming, SampleError> {
    let Value::Object(obj) = value else {
        return Err(SampleError {
            field: String::new(),
            message: format!("a sample must be a JSON object, got {}", describe(&value)),
        });
    };
    let mut server = None;
    let mut time = None;
    let mut fields = Map::new();
    for (name, v) in obj {
        match name.as_str() {
            schema::SERVER => server = Some(server_name(v)?),
            schema::TIME => time = Some(timestamp(schema::TIME, v)?),
            // `time` wins when both are present; `timestamp` is only the seed's spelling of it.
            schema::TIME_ALIAS => {
                let t = timestamp(schema::TIME_ALIAS, v)?;
                time.get_or_insert(t);
            }
            n if schema::RESERVED.contains(&n) => {}
            _ => {
                if let Some(kept) = field_value(&name, v, truncated)? {
                    fields.insert(name, kept);
                }
            }
        }
    }
    if fields.len() > MAX_FIELDS {
        return Err(SampleError {
            field: String::new(),
            message: format!(
                "{} fields: at most {MAX_FIELDS} per sample are kept (an agent's sample has about 40)",
                fields.len()
            ),
        });
    }
    let server = server.ok_or_else(|| SampleError {
        field: schema::SERVER.into(),
        message: "missing (every sample needs a string `server` naming its server or policy)"
            .into(),
    })?;
    let time = time.ok_or_else(|| SampleError {
        field: schema::TIME.into(),
        message: "missing (every sample needs `time`, unix seconds)".into(),
    })?;
    Ok(Incoming {
        server,
        time,
        fields,
    })
}

fn server_name(v: Value) -> Result<String, SampleError> {
    let err = |message: String| SampleError {
        field: schema::SERVER.into(),
        message,
    };
    let Value::String(s) = v else {
        return Err(err(format!("expected a string, got {}", describe(&v))));
    };
    let s = s.trim();
    if s.is_empty() {
        return Err(err("must not be empty".into()));
    }
    if s.chars().count() > MAX_SERVER_LEN {
        return Err(err(format!("longer than {MAX_SERVER_LEN} characters")));
    }
    if s.chars().any(char::is_control) {
        return Err(err("contains control characters".into()));
    }
    Ok(s.to_string())
}

fn timestamp(field: &str, v: Value) -> Result<f64, SampleError> {
    match v.as_f64() {
        Some(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err(SampleError {
            field: field.into(),
            message: format!(
                "expected unix seconds (a non-negative number), got {}",
                describe(&v)
            ),
        }),
    }
}

/// The value to keep for one field: `Ok(None)` drops it (an unknown non-numeric field).
fn field_value(
    name: &str,
    v: Value,
    truncated: &mut Vec<(String, usize)>,
) -> Result<Option<Value>, SampleError> {
    let wrong = |expected: &str, v: &Value| SampleError {
        field: name.into(),
        message: format!("expected {expected}, got {}", describe(v)),
    };
    match (schema::kind(name), v) {
        (_, Value::Null) => Ok(Some(Value::Null)),
        (Some(Kind::Number), v @ Value::Number(_)) => Ok(Some(v)),
        (Some(Kind::Number), v) => Err(wrong("a number or null", &v)),
        (Some(Kind::Bool), v) => match as_bool(&v) {
            Some(b) => Ok(Some(Value::Bool(b))),
            None => Err(wrong("a boolean (or \"True\"/\"False\", 0/1) or null", &v)),
        },
        (Some(Kind::Text), Value::String(s)) => {
            let chars = s.chars().count();
            if chars <= MAX_TEXT_LEN {
                return Ok(Some(Value::String(s)));
            }
            truncated.push((name.to_string(), chars));
            Ok(Some(Value::String(s.chars().take(MAX_TEXT_LEN).collect())))
        }
        (Some(Kind::Text), v) => Err(wrong("a string or null", &v)),
        (None, v @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(v)),
        (None, _) => Ok(None),
    }
}

/// A boolean in any of the spellings samples use.
pub fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => schema::parse_bool(s),
        Value::Number(n) => match n.as_f64()? {
            0.0 => Some(false),
            1.0 => Some(true),
            _ => None,
        },
        _ => None,
    }
}

/// A short description of a value for error messages: its type, and a string's start.
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => {
            let head: String = s.chars().take(40).collect();
            let more = if s.chars().count() > 40 { "…" } else { "" };
            format!("string {:?}", head + more)
        }
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(v: Value) -> Result<Incoming, SampleError> {
        validate(v)
    }

    #[test]
    fn seed_sample_with_string_booleans() {
        let s = one(
            json!({"server": "with_gc", "timestamp": 1770610760.5, "cpu": 11.8,
                           "gc_triggered": "True"}),
        )
        .unwrap();
        assert_eq!(s.server, "with_gc");
        assert_eq!(s.time, 1770610760.5);
        assert_eq!(s.fields["gc_triggered"], json!(true));
        assert!(!s.fields.contains_key("timestamp"));
    }

    #[test]
    fn nulls_are_kept_and_unknown_text_dropped() {
        let s = one(json!({"server": "a", "time": 1, "cpu": null, "extra": 3.5,
                           "note": "hi", "policy": "default", "seq": 99}))
        .unwrap();
        assert_eq!(s.fields["cpu"], Value::Null);
        assert_eq!(s.fields["extra"], json!(3.5));
        assert_eq!(s.fields["policy"], json!("default"));
        assert!(!s.fields.contains_key("note"));
        assert!(!s.fields.contains_key("seq"));
    }

    #[test]
    fn a_sample_has_a_bounded_number_of_fields() {
        let mut wide = serde_json::Map::new();
        wide.insert("server".into(), json!("a"));
        wide.insert("time".into(), json!(1));
        for i in 0..MAX_FIELDS {
            wide.insert(format!("f{i}"), json!(i));
        }
        assert!(one(Value::Object(wide.clone())).is_ok());
        wide.insert("one_more".into(), json!(1));
        let e = one(Value::Object(wide)).unwrap_err();
        assert!(e.message.contains("at most 256 per sample"), "{e}");
    }

    #[test]
    fn cut_text_is_reported() {
        let long = "x".repeat(MAX_TEXT_LEN + 5);
        let body = json!([{"server": "a", "time": 1, "policy": "short"},
                          {"server": "a", "time": 2, "policy_reason": long}]);
        let parsed = parse_body_noting(body.to_string().as_bytes()).unwrap();
        assert_eq!(
            parsed.samples[1].fields["policy_reason"]
                .as_str()
                .unwrap()
                .len(),
            MAX_TEXT_LEN
        );
        assert_eq!(
            parsed.truncated,
            vec![Truncated {
                sample: 1,
                field: "policy_reason".into(),
                chars: MAX_TEXT_LEN + 5
            }]
        );
        assert!(
            parsed.truncated[0]
                .to_string()
                .contains("1029 characters, cut to the first 1024"),
            "{}",
            parsed.truncated[0]
        );
    }

    #[test]
    fn errors_name_the_field() {
        let e = one(json!({"server": "a", "time": 1, "cpu": "high"})).unwrap_err();
        assert_eq!(e.field, "cpu");
        assert!(e.to_string().contains("string \"high\""), "{e}");
        assert_eq!(one(json!({"time": 1})).unwrap_err().field, "server");
        assert_eq!(one(json!({"server": "a"})).unwrap_err().field, "time");
        assert_eq!(
            one(json!({"server": 3, "time": 1})).unwrap_err().field,
            "server"
        );
        let e = one(json!({"server": "a", "time": 1, "gc_triggered": "maybe"})).unwrap_err();
        assert_eq!(e.field, "gc_triggered");
    }

    #[test]
    fn batch_errors_name_the_index() {
        let body = br#"[{"server":"a","time":1},{"server":"a","time":"x"}]"#;
        let r = parse_body(body).unwrap_err();
        assert_eq!(r.status, 422);
        assert!(
            r.reason.starts_with("sample 1: field `time`"),
            "{}",
            r.reason
        );
        let body = br#"{"samples":[{"server":"a","time":1},{"server":"b","time":2}]}"#;
        assert_eq!(parse_body(body).unwrap().len(), 2);
        assert_eq!(parse_body(b"{not json").unwrap_err().status, 400);
        assert_eq!(parse_body(b"42").unwrap_err().status, 422);
        assert_eq!(parse_body(br#"{"samples": 3}"#).unwrap_err().status, 422);
    }
}
