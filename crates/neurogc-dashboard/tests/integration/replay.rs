//! `--replay`: the seed's benchmark CSV, our run directories, bad rows, and pacing.

use crate::common::seed_data;
use neurogc_dashboard::replay;
use neurogc_dashboard::store::{HistoryQuery, Store, StoreConfig};
use serde_json::json;
use std::time::Instant;

#[test]
fn seed_benchmark_csv_loads_as_two_servers() {
    let rec = replay::load(&seed_data("benchmark_lstm_09-02-2026-09-50.csv")).unwrap();
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    let mut servers = rec.servers();
    servers.sort();
    assert_eq!(servers, vec!["with_gc", "without_gc"]);
    assert_eq!(rec.samples.len(), 70, "every data row of the file");
    assert!(
        rec.samples.windows(2).all(|w| w[0].time <= w[1].time),
        "ordered by time"
    );
    let first = &rec.samples[0];
    assert_eq!(first.time, 1770610760.8144472, "`timestamp` is the time");
    assert_eq!(first.fields["gc_triggered"], json!(false));
    assert_eq!(first.fields["cpu"], json!(11.8));
    assert!(rec.span_s() > 30.0);
}

#[test]
fn run_directory_names_servers_by_file_and_reports_bad_rows() {
    let dir = std::env::temp_dir().join(format!("neurogc-replay-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("with_gc")).unwrap();
    let header = "time,cpu,mem,disk_read,disk_write,net_sent,net_recv,rps,p95,p99,gc_triggered,gc0_collections,policy";
    std::fs::write(
        dir.join("default.csv"),
        format!("{header}\n10,1,2,,0,0,0,5,1,2,True,3,default\n11,1,2,0,0,0,0,5,1,2,False,0,default\n12,1,2,0,0,0\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("with_gc/samples.csv"),
        format!("{header}\n10.5,4,2,0,0,0,0,5,1,2,False,0,freeze\n11.5,oops,2,0,0,0,0,5,1,2,False,0,freeze\n12.5,4,2,0,0,0,0,5,1,2,maybe,0,freeze\n"),
    )
    .unwrap();
    std::fs::write(dir.join("load-stats.csv"), "second,requests\n1,10\n").unwrap();

    let rec = replay::load(&dir).unwrap();
    let mut servers = rec.servers();
    servers.sort();
    assert_eq!(servers, vec!["default", "with_gc/samples"]);
    assert_eq!(rec.samples.len(), 3);
    assert_eq!(
        rec.samples[0].fields["disk_read"],
        json!(null),
        "empty cell = unmeasured"
    );
    assert_eq!(rec.samples[0].fields["policy"], json!("default"));
    let w = rec.warnings.join("\n");
    assert!(
        w.contains("default.csv:4: 6 fields where the header has 13"),
        "{w}"
    );
    assert!(
        w.contains("samples.csv:3: column \"cpu\": \"oops\" is not a number; skipped"),
        "{w}"
    );
    assert!(
        w.contains("samples.csv:4: column \"gc_triggered\": \"maybe\" is not a boolean"),
        "{w}"
    );
    assert!(
        w.contains("load-stats.csv:1: no `time` or `timestamp` column"),
        "{w}"
    );
    assert_eq!(rec.files.len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nothing_to_replay_is_an_error_naming_the_path() {
    let err = replay::load(std::path::Path::new("/nonexistent/run")).unwrap_err();
    assert!(format!("{err:#}").contains("/nonexistent/run"));
    let file = std::env::temp_dir().join(format!("neurogc-empty-{}.csv", std::process::id()));
    std::fs::write(&file, "a,b\n1,2\n").unwrap();
    let err = replay::load(&file).unwrap_err();
    assert!(format!("{err:#}").contains("no samples"), "{err:#}");
    std::fs::remove_file(file).unwrap();
}

#[tokio::test]
async fn replay_paces_by_sample_time() {
    // The seed's 31-01 run spans about 16 s; at 40× that is about 0.4 s.
    let rec = replay::load(&seed_data("benchmark_lstm_31-01-2026-20-15.csv")).unwrap();
    let (n, span) = (rec.samples.len(), rec.span_s());
    let store = Store::new(StoreConfig::default());
    let t0 = Instant::now();
    replay::play(&store, rec.samples, 40.0).await;
    let took = t0.elapsed().as_secs_f64();
    let expected = span / 40.0;
    assert!(
        took >= expected * 0.95 && took < expected + 1.0,
        "took {took:.2} s, expected {expected:.2} s"
    );
    assert_eq!(store.history(&HistoryQuery::default()).len(), n);
}
