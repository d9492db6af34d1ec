//! Open loop against real local servers: rate accuracy, the same schedule on several hosts,
//! and latency measured from the intended send time (a stalling server shows in p99).
use crate::common;

use std::time::Duration;

use crate::common::{run_load, Behavior, Server};

#[test]
fn achieved_rate_is_within_one_percent_on_every_host_with_the_same_schedule() {
    let a = Server::start(Behavior::default());
    let b = Server::start(Behavior::default());
    let out = run_load(&format!(
        "--host {} --host {} --rate 1000 --run-time 3s",
        a.url, b.url
    ));
    let s = &out.summary;
    assert_eq!(s.mode, "open");
    assert_eq!(s.target_rate, Some(1000.0));
    assert!(
        (s.achieved_rate - 1000.0).abs() <= 10.0,
        "achieved {}",
        s.achieved_rate
    );
    assert_eq!((s.failures, s.dropped), (0, 0));
    for host in [&a.url, &b.url] {
        let all = out.total(host, "all");
        assert!((all.rps - 1000.0).abs() <= 10.0, "{host}: {}", all.rps);
    }
    // Same intended times and tasks on both hosts: identical per-task counts, and the servers agree.
    for task in &s.tasks {
        assert_eq!(
            out.total(&a.url, task).requests,
            out.total(&b.url, task).requests,
            "{task}"
        );
        assert_eq!(
            a.count(task),
            out.total(&a.url, task).requests,
            "{task} as seen by the server"
        );
    }
    // The per-second stream: one "all" line per host per second, each about `rate` requests.
    let a_all: Vec<_> = out
        .seconds
        .iter()
        .filter(|r| r.host == a.url && r.task == "all")
        .collect();
    assert!(a_all.len() >= 3, "{} lines", a_all.len());
    assert_eq!(
        a_all.iter().map(|r| r.requests).sum::<u64>(),
        out.total(&a.url, "all").requests
    );
    for r in &a_all[..2] {
        assert!(
            (r.requests as f64 - 1000.0).abs() < 50.0,
            "second {}: {}",
            r.elapsed_s,
            r.requests
        );
        assert!(r.p99_ms.is_some() && r.users.is_none());
    }
    assert_eq!(out.returned.requests, s.requests);
}

#[test]
fn alternate_sends_each_slice_to_one_host_in_turn() {
    let a = Server::start(Behavior::default());
    let b = Server::start(Behavior::default());
    let out = run_load(&format!(
        "--host {} --host {} --rate 200 --run-time 4s --alternate 1s",
        a.url, b.url
    ));
    let s = &out.summary;
    assert_eq!(s.alternate_s, Some(1.0));
    assert_eq!((s.failures, s.dropped), (0, 0));
    for server in [&a, &b] {
        // Two of the four seconds each: ~400 requests, and the rate is over those two seconds.
        let all = out.total(&server.url, "all");
        assert!(
            (all.requests as f64 - 400.0).abs() <= 4.0,
            "{}",
            all.requests
        );
        assert!(
            (all.rps - 200.0).abs() <= 2.0,
            "{}: {}",
            server.url,
            all.rps
        );
        assert!((all.interval_s - 2.0).abs() < 0.01, "{}", all.interval_s);
    }
    assert!(
        (s.achieved_rate - 200.0).abs() <= 2.0,
        "{}",
        s.achieved_rate
    );
    // The per-second stream: a has seconds 1 and 3, b seconds 2 and 4 (the rows are 1 s apart,
    // aligned with the slices, so each row is one host's or empty).
    let per_second = |url: &str| -> Vec<u64> {
        out.seconds
            .iter()
            .filter(|r| r.host == url && r.task == "all")
            .map(|r| r.requests)
            .collect()
    };
    let (sa, sb) = (per_second(&a.url), per_second(&b.url));
    assert!(sa[0] >= 195 && sa[1] <= 5 && sa[2] >= 195, "{sa:?}");
    assert!(sb[0] <= 5 && sb[1] >= 195 && sb[2] <= 5, "{sb:?}");
}

#[test]
fn open_loop_p99_sees_a_200ms_stall_every_2s_that_closed_loop_hides() {
    let server = Server::start(Behavior {
        stall: Some((Duration::from_secs(2), Duration::from_millis(200))),
        ..Behavior::default()
    });

    let open = run_load(&format!("--host {} --rate 200 --run-time 5s", server.url));
    let open_all = open.total(&server.url, "all");
    assert_eq!(open_all.failures, 0);
    let open_p99 = open_all.p99_ms.unwrap();
    assert!(
        open_p99 >= 150.0,
        "open-loop p99 {open_p99} ms must show the 200 ms stalls"
    );

    // Two users with no think time: during a stall only the two in-flight requests wait; the
    // thousands sent between stalls are fast, so the percentiles hide the stall.
    let closed = run_load(&format!(
        "--host {} -u 2 -r 100 --wait 0,0 --run-time 5s",
        server.url
    ));
    let closed_all = closed.total(&server.url, "all");
    let (closed_p99, closed_max) = (closed_all.p99_ms.unwrap(), closed_all.max_ms.unwrap());
    assert!(
        closed_max >= 150.0,
        "closed loop did meet the stall (max {closed_max} ms)"
    );
    assert!(
        closed_p99 * 5.0 < open_p99 && closed_p99 < 30.0,
        "closed-loop p99 {closed_p99} ms should hide the stall that open loop shows ({open_p99} ms)"
    );
    eprintln!("stall: open p99 {open_p99} ms; closed p99 {closed_p99} ms, max {closed_max} ms");
}

#[test]
fn poisson_arrivals_average_the_target_rate() {
    let server = Server::start(Behavior::default());
    let out = run_load(&format!(
        "--host {} --rate 500 --arrivals poisson --run-time 4s",
        server.url
    ));
    // 2000 expected arrivals; a Poisson count has sd sqrt(2000) ≈ 45: allow 4 sigma.
    let n = out.total(&server.url, "all").requests as f64;
    assert!((n - 2000.0).abs() < 180.0, "{n} requests");
    assert_eq!(out.summary.arrivals.as_deref(), Some("poisson"));
}

#[test]
fn in_flight_cap_drops_and_counts() {
    let server = Server::start(Behavior::default());
    let dir = common::temp_dir("tasks");
    let tasks = dir.join("slow.toml");
    std::fs::write(&tasks, "[[task]]\npath = \"/slow\"\n").unwrap();
    let out = run_load(&format!(
        "--host {} --rate 50 --run-time 1s --max-in-flight 10 --tasks {} --timeout 5s",
        server.url,
        tasks.to_str().unwrap()
    ));
    let all = out.total(&server.url, "all");
    // Every arrival is either sent (and completes: /slow answers in 2 s) or dropped — none lost.
    assert_eq!(all.requests, 10);
    assert_eq!(all.dropped, 40);
    assert_eq!(all.requests + all.dropped, 50);
    assert!(all.p50_ms.unwrap() >= 2000.0);
}

#[test]
fn late_starts_are_counted_against_the_threshold() {
    let server = Server::start(Behavior::default());
    // With a zero threshold every dispatch is late (it cannot happen before its intended time);
    // with the default 10 ms almost none is on an idle generator.
    let strict = run_load(&format!(
        "--host {} --rate 200 --run-time 1s --late-threshold 0ms",
        server.url
    ));
    let all = strict.total(&server.url, "all");
    assert_eq!(all.late_starts, all.requests);
    assert_eq!(strict.summary.late_starts, 200);
    let normal = run_load(&format!("--host {} --rate 200 --run-time 1s", server.url));
    assert!(
        normal.summary.late_starts < 20,
        "{}",
        normal.summary.late_starts
    );
}

#[test]
fn alternate_writes_one_line_per_host_and_turn() {
    let a = Server::start(Behavior::default());
    let b = Server::start(Behavior::default());
    let out = run_load(&format!(
        "--host {} --host {} --rate 200 --run-time 4s --alternate 1s",
        a.url, b.url
    ));
    // Slices a, b, a, b: rounds 0 and 1 for each host, each about 200 requests.
    let mut turns: Vec<(String, u64, u64)> = out
        .turns
        .iter()
        .map(|r| (r.host.clone(), r.turn.unwrap(), r.requests))
        .collect();
    turns.sort();
    assert_eq!(turns.len(), 4, "{turns:?}");
    for url in [&a.url, &b.url] {
        let mine: Vec<_> = turns.iter().filter(|(h, ..)| h == url).collect();
        assert_eq!(mine.len(), 2, "{turns:?}");
        for (i, (_, round, requests)) in mine.iter().enumerate() {
            assert_eq!(*round, i as u64);
            assert!((*requests as f64 - 200.0).abs() <= 2.0, "{turns:?}");
        }
    }
    for r in &out.turns {
        assert_eq!(
            (r.kind.as_str(), r.task.as_str(), r.interval_s),
            ("turn", "all", 1.0)
        );
        assert!(r.p99_ms.is_some());
    }
    // Every request is in exactly one turn.
    let in_turns: u64 = out.turns.iter().map(|r| r.requests).sum();
    assert_eq!(in_turns, out.summary.requests);
}

#[test]
fn bursts_send_only_in_their_on_periods() {
    let a = Server::start(Behavior::default());
    let dir = common::temp_dir("bursts");
    let tasks = dir.join("bursty.toml");
    std::fs::write(
        &tasks,
        "[[task]]\npath = \"/b\"\n[bursts]\non = [\"200ms\", \"200ms\"]\noff = [\"300ms\", \"300ms\"]\n",
    )
    .unwrap();
    let out = run_load(&format!(
        "--host {} --rate 500 --run-time 3s --tasks {}",
        a.url,
        tasks.display()
    ));
    // On 200 ms of every 500 ms: 40 % of the 1500 arrivals, none dropped or counted.
    let sent = out.summary.requests as f64;
    assert!((sent - 600.0).abs() <= 10.0, "{sent}");
    assert_eq!((out.summary.dropped, out.summary.failures), (0, 0));
    let accepted = a.log.lock().unwrap().requests.clone();
    // Nothing arrives in the gaps: requests cluster in [0, 200) ms of each 500 ms cycle.
    let first = accepted[0];
    let in_gap = accepted
        .iter()
        .filter(|t| {
            let phase = (t.duration_since(first).as_secs_f64() * 1000.0) % 500.0;
            (215.0..490.0).contains(&phase)
        })
        .count();
    assert!(in_gap <= 5, "{in_gap} requests arrived in the idle gaps");
}

#[test]
fn a_turn_begins_only_once_the_host_before_it_has_answered() {
    // `a` answers every request 200 ms late: at the end of each of its turns it owes ~20.
    let a = Server::start(Behavior {
        delay: Some(Duration::from_millis(200)),
        ..Behavior::default()
    });
    let b = Server::start(Behavior::default());
    let dir = common::temp_dir("drain");
    let out = run_load(&format!(
        "--host {} --host {} --rate 100 --run-time 4s --alternate 1s --requests-out {}",
        a.url,
        b.url,
        dir.display()
    ));
    let log = |url: &str| {
        let path = neurogc_load::requests::path(&dir, url);
        neurogc_load::requests::read(&path, "requests.csv").unwrap()
    };
    let (of_a, of_b) = (log(&a.url), log(&b.url));
    let s = &out.summary;
    assert_eq!((s.failures, s.dropped), (0, 0));
    // No request of b's was due while one of a's, due before it, was still unanswered.
    for r in &of_b {
        let owed = of_a
            .iter()
            .filter(|q| q.intended < r.intended && q.done > r.intended)
            .count();
        assert_eq!(
            owed, 0,
            "b's request due at {} overlapped a's queue",
            r.intended
        );
    }
    // Both of a's turns ended owing ~200 ms of answers, and the run waited for them: every
    // turn kept its whole second and its ~100 requests.
    let waited = s.turn_waits_s.unwrap();
    assert!(waited > 0.3 && waited < 1.0, "waited {waited} s");
    assert_eq!(out.turns.len(), 4);
    for t in &out.turns {
        assert!((t.requests as f64 - 100.0).abs() <= 20.0, "{t:?}");
    }
    // a's turns include the wait for their answers; b's, answered at once, do not.
    for t in &out.turns {
        let drained = t.interval_s - 1.0;
        if t.host == a.url {
            assert!(drained > 0.15 && drained < 0.5, "{t:?}");
        } else {
            // (a wait counts from the first request's due time: a late wake-up shows)
            assert!(drained < 0.15, "{t:?}");
        }
    }
    // The rates are over the load's own time, without the waits.
    assert!((s.duration_s - 4.0).abs() < 0.01, "{}", s.duration_s);
    assert!(
        (s.achieved_rate - 100.0).abs() <= 10.0,
        "{}",
        s.achieved_rate
    );
    // Turn lines end where the next turn began: the last one after 4 s plus the waits.
    let last = out.turns.iter().map(|t| t.elapsed_s).fold(0.0, f64::max);
    assert!((last - (4.0 + waited)).abs() < 0.01, "{last} vs {waited}");
    // Whole seconds of run time end on a tick: no sliver of a second after the last one.
    assert!(
        out.seconds.iter().all(|r| r.interval_s > 0.5),
        "{:?}",
        out.seconds.iter().map(|r| r.interval_s).collect::<Vec<_>>()
    );
}
