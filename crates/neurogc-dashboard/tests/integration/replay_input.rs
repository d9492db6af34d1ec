//! `--replay` on hostile or odd input: symlink loops, deep trees, trial paths that leave the run
//! directory, non-finite numbers.

use neurogc_dashboard::replay;
use neurogc_record::{AppInfo, PolicyEntry, RunDir, RunInfo, RunKind};
use serde_json::json;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("neurogc-replay-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `replay::load` in a thread, failing the test if it takes more than 20 s (a walk that loops).
fn load_within_time(path: &Path) -> anyhow::Result<replay::Recording> {
    let (tx, rx) = mpsc::channel();
    let path = path.to_path_buf();
    std::thread::spawn(move || tx.send(replay::load(&path)));
    rx.recv_timeout(Duration::from_secs(20))
        .expect("replay::load did not return within 20 s")
}

#[test]
fn symlink_loops_are_not_followed_and_depth_is_bounded() {
    let dir = temp("loops");
    std::fs::write(dir.join("a.csv"), "time,cpu\n1,2\n").unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/b.csv"), "time,cpu\n2,3\n").unwrap();
    // Two loops: each level of the walk would double the folders to search.
    symlink(".", dir.join("here")).unwrap();
    symlink("..", dir.join("sub/up")).unwrap();
    let mut deep = dir.join("d");
    for _ in 0..replay::MAX_DEPTH + 2 {
        deep = deep.join("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("c.csv"), "time,cpu\n3,4\n").unwrap();

    let rec = load_within_time(&dir).unwrap();
    let mut servers = rec.servers();
    servers.sort();
    assert_eq!(servers, ["a", "sub/b"]);
    let w = rec.warnings.join("\n");
    assert!(
        w.contains("here: a symlink to a folder; not followed"),
        "{w}"
    );
    assert!(w.contains("up: a symlink to a folder; not followed"), "{w}");
    assert!(
        w.contains(&format!(
            "more than {} folders down; not searched",
            replay::MAX_DEPTH
        )),
        "{w}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn run_with_trial(root: &Path) -> RunDir {
    let app = AppInfo::Cmd {
        command: "app {port}".into(),
    };
    let policy = PolicyEntry {
        label: "default".into(),
        spec: "default".into(),
        model: None,
    };
    let mut run =
        RunDir::create(root, RunInfo::new(RunKind::Bench, "r", app, vec![policy])).unwrap();
    let trial = run.add_trial("default", "default", 1).unwrap();
    std::fs::write(trial.samples(), "time,cpu\n1,2\n").unwrap();
    run
}

#[test]
fn trial_paths_outside_the_run_directory_are_refused() {
    let root = temp("escape");
    let mut run = run_with_trial(&root);
    run.info.trials[0].dir = "../../etc".into();
    run.save().unwrap();
    let e = format!("{:#}", load_within_time(&run.path).unwrap_err());
    assert!(
        e.contains("run.json: trial \"../../etc\" is not a folder inside the run directory"),
        "{e}"
    );

    // A plain name that is a symlink out of the run.
    let outside = temp("escape-target");
    std::fs::write(outside.join("samples.csv"), "time,cpu\n1,2\n").unwrap();
    run.info.trials[0].dir = "trials/elsewhere".into();
    run.save().unwrap();
    symlink(&outside, run.path.join("trials/elsewhere")).unwrap();
    let e = format!("{:#}", load_within_time(&run.path).unwrap_err());
    assert!(
        e.contains("trial \"trials/elsewhere\" leads to")
            && e.contains("outside the run directory"),
        "{e}"
    );
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

#[test]
fn non_finite_numbers_are_counted_and_named_never_silently_null() {
    let dir = temp("nan");
    let file = dir.join("x.csv");
    // `extra` is not a schema column: its nan/inf become null, said once with a count.
    // `cpu` is: a nan there is a bad cell, so its row is skipped, said with its line.
    std::fs::write(&file, "time,cpu,extra\n1,2,nan\n2,3,5\n3,4,inf\n4,nan,1\n").unwrap();
    let rec = load_within_time(&file).unwrap();
    assert_eq!(rec.samples.len(), 3);
    assert_eq!(rec.samples[0].fields["extra"], json!(null));
    assert_eq!(rec.samples[1].fields["extra"], json!(5.0));
    let w = rec.warnings.join("\n");
    assert!(
        w.contains("x.csv:2: 2 non-finite value(s) (nan/inf) read as unmeasured (null), the first in column \"extra\""),
        "{w}"
    );
    assert!(
        w.contains("x.csv:5: column \"cpu\": \"nan\" is not a finite number"),
        "{w}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
