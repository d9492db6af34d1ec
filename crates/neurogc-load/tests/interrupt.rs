//! Ctrl-C prints the summary of what ran. Its own test binary: SIGINT reaches the whole process.

#[path = "integration/common/mod.rs"]
mod common;

use common::{parse, temp_dir, Behavior, Server};
use neurogc_load::{execute, Config};

#[test]
fn ctrl_c_ends_the_run_with_a_summary_of_what_ran() {
    let server = Server::start(Behavior::default());
    let dir = temp_dir("sigint");
    let json = dir.join("out.jsonl");
    let cfg = Config::from_args(parse(&[
        "--host",
        &server.url,
        "--rate",
        "100",
        "--quiet",
        "--json-out",
        json.to_str().unwrap(),
    ]))
    .unwrap();
    // No --run-time: only Ctrl-C ends this run.
    std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_millis(1500));
        // SAFETY: sends SIGINT to this process; the generator's handler is installed by then.
        unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
    });
    let summary = execute(cfg).unwrap();
    assert!(summary.interrupted);
    assert!(
        (1.3..2.5).contains(&summary.duration_s),
        "{}",
        summary.duration_s
    );
    assert!(summary.requests >= 120, "{}", summary.requests);
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(text.lines().next().unwrap().contains("\"type\":\"second\""));
    assert!(text
        .lines()
        .last()
        .unwrap()
        .contains("\"interrupted\":true"));
}
