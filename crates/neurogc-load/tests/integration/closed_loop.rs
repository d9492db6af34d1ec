//! Closed loop (Locust semantics) against real local servers: task weights, spawn rate, failures.
use crate::common;

use crate::common::{run_load, Behavior, Server};

#[test]
fn task_weights_are_respected_within_four_sigma() {
    let server = Server::start(Behavior::default());
    let out = run_load(&format!(
        "--host {} -u 2 -r 100 --wait 0,0 --run-time 2s",
        server.url
    ));
    let total = out.total(&server.url, "all").requests as f64;
    assert!(total > 2000.0, "only {total} requests");
    let weights = [
        ("/cpu-heavy", 3.0),
        ("/memory-heavy", 3.0),
        ("/network-heavy", 2.0),
        ("/io-heavy", 2.0),
        ("/health", 1.0),
    ];
    let mut chi2 = 0.0;
    for (task, w) in weights {
        let p = w / 11.0;
        let n = out.total(&server.url, task).requests as f64;
        let sigma = (total * p * (1.0 - p)).sqrt();
        assert!(
            (n - total * p).abs() < 4.0 * sigma,
            "{task}: {n} of {total}, expected {}",
            total * p
        );
        chi2 += (n - total * p).powi(2) / (total * p);
        assert_eq!(server.count(task) as f64, n, "{task} as seen by the server");
    }
    // 4 degrees of freedom: P(chi2 > 23.5) = 1e-4.
    assert!(chi2 < 23.5, "chi-square {chi2}");
    assert_eq!(out.summary.failures, 0);
}

#[test]
fn users_ramp_at_the_spawn_rate() {
    let server = Server::start(Behavior::default());
    let out = run_load(&format!(
        "--host {} -u 8 -r 4 --wait 0.05,0.1 --run-time 3.5s",
        server.url
    ));
    // Users at the end of each second: k starts at k/4 s, so ~4 per second then capped at 8.
    let users: Vec<u64> = out
        .seconds
        .iter()
        .filter(|r| r.task == "all")
        .map(|r| r.users.unwrap())
        .collect();
    assert!(users.len() >= 3, "{users:?}");
    for (i, &u) in users.iter().take(3).enumerate() {
        let expected = ((i as f64 + 1.0) * 4.0 + 1.0).min(8.0);
        assert!(
            (u as f64 - expected).abs() <= 1.0,
            "second {}: {u} users, expected ~{expected} ({users:?})",
            i + 1
        );
    }
    assert_eq!(out.summary.users, Some(8));
    // Each closed-loop user keeps one connection: the server's accept times are the spawn times.
    let accepted = server.log.lock().unwrap().accepted.clone();
    assert_eq!(
        accepted.len(),
        8 + 1,
        "one probe connection plus one per user"
    );
    let first_user = accepted[1];
    for (k, t) in accepted[1..].iter().enumerate() {
        let at = t.duration_since(first_user).as_secs_f64();
        assert!(
            (at - k as f64 * 0.25).abs() < 0.08,
            "user {k} connected at {at:.3}s, expected {}",
            k as f64 * 0.25
        );
    }
}

#[test]
fn failures_are_counted_by_kind() {
    let server = Server::start(Behavior::default());
    let dir = common::temp_dir("tasks");
    let tasks = dir.join("mixed.toml");
    std::fs::write(
        &tasks,
        r#"
        [[task]]
        path = "/ok"
        [[task]]
        path = "/missing"
        [[task]]
        path = "/error"
        [[task]]
        path = "/slow"
        "#,
    )
    .unwrap();
    let out = run_load(&format!(
        "--host {} -u 4 -r 100 --wait 0.01,0.02 --run-time 2s --timeout 300ms --tasks {}",
        server.url,
        tasks.to_str().unwrap()
    ));
    let row = |t| out.total(&server.url, t);
    assert_eq!(row("/ok").failures, 0);
    assert!(row("/ok").requests > 0);
    assert_eq!(
        row("/missing").failures_by_kind.get("http_404"),
        Some(&row("/missing").requests)
    );
    assert_eq!(
        row("/error").failures_by_kind.get("http_500"),
        Some(&row("/error").requests)
    );
    assert_eq!(
        row("/slow").failures_by_kind.get("timeout"),
        Some(&row("/slow").requests)
    );
    assert!(row("/slow").requests > 0 && row("/missing").requests > 0);
    let all = row("all");
    assert_eq!(all.failures, all.failures_by_kind.values().sum::<u64>());
    assert_eq!(all.failures, all.requests - row("/ok").requests);
    assert_eq!(out.exit_code, 1);
}

#[test]
fn a_server_that_goes_away_mid_run_shows_as_connect_failures() {
    let mut server = Server::start(Behavior::default());
    let url = server.url.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(1000));
        server.stop();
    });
    let out = run_load(&format!(
        "--host {} --rate 100 --run-time 2s --timeout 1s",
        url
    ));
    stopper.join().unwrap();
    let all = out.total(&url, "all");
    let connect = all.failures_by_kind.get("connect").copied().unwrap_or(0);
    assert!(connect >= 80, "{:?}", all.failures_by_kind);
    assert!(
        all.requests - all.failures >= 90,
        "the first second succeeded: {all:?}"
    );
    // Nothing is dropped silently: every one of the 200 arrivals is a success or a counted failure.
    assert_eq!(all.requests + all.dropped, 200);
}
