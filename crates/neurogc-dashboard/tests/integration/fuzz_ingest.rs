//! Property tests (a bounded fuzzing pass) of ingestion: `POST /api/metrics` bodies go through
//! `ingest::parse_body` and then `Store::ingest`, both tested here in-process. Arbitrary and
//! mutated bodies never panic and are refused with a 4xx naming what is wrong; valid samples
//! round-trip; the store's caps (bytes, servers, samples per server) hold whatever arrives.
//!
//! Run longer: `PROPTEST_CASES=100000 cargo test -p neurogc-dashboard --test fuzz_ingest`.

use neurogc_dashboard::ingest::{parse_body, Incoming, MAX_FIELDS};
use neurogc_dashboard::schema::{self, Kind};
use neurogc_dashboard::store::{HistoryQuery, Store, StoreConfig};
use neurogc_fuzzkit::config;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// Field names: the sample's own, reserved ones, schema columns of each kind, unknown ones.
const NAMES: &[&str] = &[
    "server",
    "time",
    "timestamp",
    "seq",
    "ingest_ms",
    "cpu",
    "p99",
    "gc_triggered",
    "gc_enabled",
    "policy",
    "policy_reason",
    "queue_depth",
    "hostname",
    "",
];

/// The bytes JSON-looking input is made of.
const JSON_BYTES: &[u8] = b"{}[]\",:0123456789.eE-+ nultrfase\\u";

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from), // NaN and infinities become null
        prop::sample::select(&[0.0, 1.0, -1.0, 1e308, -0.0, 5e-324][..]).prop_map(Value::from),
    ]
}

/// Any JSON value, nested a little.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        number(),
        prop_oneof![
            ".{0,8}",
            "(True|False|true|false|1|0|maybe| a |\u{7}x)",
            "[a-z]{130,140}"
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(".{0,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A sample-like object: known names with arbitrary values, often a valid server and time.
fn sample_like() -> impl Strategy<Value = Value> {
    let fields = prop::collection::vec((prop::sample::select(NAMES), json_value()), 0..8);
    (fields, any::<bool>()).prop_map(|(fields, seeded)| {
        let mut obj = Map::new();
        if seeded {
            obj.insert("server".into(), json!("a"));
            obj.insert("time".into(), json!(1.5));
        }
        for (k, v) in fields {
            obj.insert(k.to_string(), v);
        }
        Value::Object(obj)
    })
}

/// A valid sample as it is stored: normalised fields of each kind.
fn incoming() -> impl Strategy<Value = Incoming> {
    let server = "[a-zA-Z0-9_:. -]{0,20}[a-zA-Z0-9]";
    let time = prop_oneof![0.0..2e9f64, prop::num::f64::POSITIVE | prop::num::f64::ZERO];
    let field = prop_oneof![
        (
            prop::sample::select(&["cpu", "p99", "rss_bytes", "queue_depth"][..]),
            prop_oneof![
                Just(Value::Null),
                any::<i64>().prop_map(Value::from),
                any::<u64>().prop_map(Value::from),
                (prop::num::f64::NORMAL | prop::num::f64::NEGATIVE | prop::num::f64::ZERO)
                    .prop_map(Value::from),
            ]
        ),
        (
            prop::sample::select(&["gc_triggered", "model_fired"][..]),
            prop_oneof![Just(Value::Null), any::<bool>().prop_map(Value::from)]
        ),
        (
            prop::sample::select(&["policy", "policy_reason"][..]),
            prop_oneof![Just(Value::Null), ".{0,30}".prop_map(Value::from)]
        ),
    ];
    (
        server,
        time,
        prop::collection::btree_map(".{0,4}", 0..3usize, 0..3),
        prop::collection::vec(field, 0..6),
    )
        .prop_map(|(server, time, extra, known)| {
            // Unknown numeric fields are kept; the prefix keeps them off the schema's names.
            let mut fields: Map<String, Value> = extra
                .into_iter()
                .map(|(k, v)| (format!("x_{k}"), json!(v)))
                .collect();
            fields.extend(known.into_iter().map(|(k, v)| (k.to_string(), v)));
            Incoming {
                server: server.trim().to_string(),
                time,
                fields,
            }
        })
}

fn body_of(s: &Incoming) -> Value {
    let mut obj = s.fields.clone();
    obj.insert("server".into(), json!(s.server));
    obj.insert("time".into(), json!(s.time));
    Value::Object(obj)
}

/// What every accepted sample must be, whatever was posted.
fn check_accepted(s: &Incoming) {
    assert!(!s.server.is_empty() && s.server == s.server.trim());
    assert!(s.server.chars().count() <= 128 && !s.server.chars().any(char::is_control));
    assert!(s.time.is_finite() && s.time >= 0.0, "{}", s.time);
    assert!(s.fields.len() <= MAX_FIELDS);
    for (k, v) in &s.fields {
        assert!(
            ![schema::SERVER, schema::TIME, schema::TIME_ALIAS].contains(&&**k)
                && !schema::RESERVED.contains(&&**k),
            "{k}"
        );
        match (schema::kind(k), v) {
            (_, Value::Null) => {}
            (Some(Kind::Number) | None, Value::Number(_)) => {}
            (Some(Kind::Bool) | None, Value::Bool(_)) => {}
            (Some(Kind::Text), Value::String(t)) => assert!(t.chars().count() <= 1024),
            (kind, v) => panic!("field {k:?} ({kind:?}) kept as {v}"),
        }
    }
}

/// Checks a request's outcome: accepted samples are well formed; a refusal is a 4xx that names
/// the sample (in a batch) and the field.
fn check_body(body: &[u8], items: Option<&[Value]>) {
    match parse_body(body) {
        Ok(samples) => {
            if let Some(items) = items {
                assert_eq!(samples.len(), items.len());
            }
            samples.iter().for_each(check_accepted);
        }
        Err(r) => {
            assert!(r.status == 400 || r.status == 422, "{r:?}");
            assert!(!r.reason.is_empty());
            let Some(items) = items else { return };
            let rest = r.reason.strip_prefix("sample ").expect(&r.reason);
            let (i, rest) = rest.split_once(": ").expect(&r.reason);
            let sample = &items[i.parse::<usize>().expect(&r.reason)];
            if let Some(field) = rest.strip_prefix("field `") {
                let field = field.split_once('`').expect(&r.reason).0;
                let missing = rest.contains(": missing");
                assert!(missing || sample.get(field).is_some(), "{}", r.reason);
            } else {
                assert!(
                    rest.contains("must be a JSON object") || rest.contains("per sample"),
                    "an error names the field: {}",
                    r.reason
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn arbitrary_bytes_are_refused_not_panicked_on(
        body in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..256),
            // JSON-looking text.
            prop::collection::vec(prop::sample::select(JSON_BYTES), 0..256),
        ]
    ) {
        check_body(&body, None);
    }

    #[test]
    fn arbitrary_json_is_refused_with_a_reason(v in json_value()) {
        check_body(v.to_string().as_bytes(), None);
    }

    #[test]
    fn mutated_batches_name_the_sample_and_field(
        items in prop::collection::vec(sample_like(), 0..5),
        wrapped in any::<bool>(),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let body = if wrapped { json!({ "samples": items }) } else { json!(items) }.to_string();
        check_body(body.as_bytes(), Some(&items));
        if truncate {
            // A cut-off body is malformed JSON: 400.
            let cut = cut.index(body.len());
            let r = parse_body(&body.as_bytes()[..cut]).unwrap_err();
            prop_assert_eq!(r.status, 400, "{}", r.reason);
        }
    }

    #[test]
    fn valid_samples_round_trip(samples in prop::collection::vec(incoming(), 1..5)) {
        let items: Vec<Value> = samples.iter().map(body_of).collect();
        let parsed = parse_body(json!(items).to_string().as_bytes()).unwrap();
        prop_assert_eq!(&parsed, &samples);
        let single = parse_body(items[0].to_string().as_bytes()).unwrap();
        prop_assert_eq!(&single[..], &samples[..1]);

        // And through the store: what `/api/history` serves is what was posted, plus its numbers.
        // (A window without end: samples posted out of time order are all kept.)
        let store = Store::new(StoreConfig { window_s: f64::INFINITY, ..StoreConfig::default() });
        store.ingest(parsed).unwrap();
        let history = store.history(&HistoryQuery::default());
        prop_assert_eq!(history.len(), samples.len());
        for (stored, s) in history.iter().zip(&samples) {
            let Value::Object(mut v) = serde_json::from_str(&stored.json).unwrap() else {
                panic!("{}", stored.json)
            };
            prop_assert_eq!(v.remove("seq"), Some(json!(stored.seq)));
            prop_assert!(v.remove("ingest_ms").is_some_and(|t| t.is_f64()));
            prop_assert_eq!(Value::Object(v), body_of(s));
        }
    }

    #[test]
    fn store_bounds_hold_under_any_sequence(
        max_servers in 1..5usize,
        max_per_server in 1..8usize,
        max_bytes in 0..3000usize,
        window_s in prop_oneof![0.0..20.0f64, Just(f64::INFINITY)],
        batches in prop::collection::vec(
            prop::collection::vec(
                (prop::sample::select(&["a", "b", "c", "d", "e", "f"][..]),
                 prop_oneof![0.0..40.0f64, Just(0.0), Just(1e18)],
                 0..4usize),
                0..6),
            1..12),
    ) {
        let config = StoreConfig {
            window_s,
            max_per_server,
            broadcast_capacity: 4,
            max_servers,
            max_bytes,
        };
        let store = Store::new(config);
        // A client that never takes anything: the fan-out buffer stays bounded all the same.
        let (_cursor, _newest) = store.register();
        let mut last_seq = 0;
        for batch in batches {
            let samples: Vec<Incoming> = batch
                .iter()
                .map(|&(server, time, width)| Incoming {
                    server: server.into(),
                    time,
                    fields: (0..width).map(|i| (format!("f{i}"), json!(i))).collect(),
                })
                .collect();
            let seqs = || -> Vec<u64> {
                store.history(&HistoryQuery::default()).iter().map(|s| s.seq).collect()
            };
            let before = seqs();
            let named: std::collections::BTreeSet<&str> = batch.iter().map(|b| b.0).collect();
            match store.ingest(samples) {
                Ok(acc) => {
                    prop_assert_eq!(acc.accepted, batch.len());
                    prop_assert_eq!(acc.first_seq, last_seq + 1);
                    last_seq += batch.len() as u64;
                }
                Err(e) => {
                    prop_assert!(e.contains("--max-servers"), "{}", e);
                    prop_assert!(named.len() > max_servers, "refused only when no eviction can make room");
                    prop_assert_eq!(before, seqs(), "a refused batch changes nothing");
                }
            }
            let status = store.status();
            let kept = store.history(&HistoryQuery::default());
            prop_assert_eq!(status.last_seq, last_seq);
            prop_assert!(status.bytes <= max_bytes, "{} > {}", status.bytes, max_bytes);
            prop_assert_eq!(status.bytes, kept.iter().map(|s| s.json.len()).sum::<usize>());
            prop_assert!(status.servers.len() <= max_servers);
            prop_assert_eq!(status.ingested, last_seq);
            prop_assert!(status.ws_buffer_bytes <= (max_bytes / 4).max(300 * 6 + 200),
                "fan-out buffer {} bytes", status.ws_buffer_bytes);
            prop_assert!(status.servers.iter().all(|s| s.kept <= max_per_server));
            prop_assert!(kept.windows(2).all(|w| w[0].seq < w[1].seq));
            prop_assert!(kept.iter().all(|s| serde_json::from_str::<Value>(&s.json).is_ok()));
        }
    }
}
