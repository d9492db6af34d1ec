//! `--stop-idle`: hosts taking turns are real processes, stopped between their turns and all
//! continued when the run ends.
use crate::common;

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::run_load;

/// A Python HTTP server in its own process group, answering.
struct PyServer {
    child: Child,
    url: String,
}

impl PyServer {
    fn start() -> PyServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("python3")
            .args([
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("python3");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "python3 -m http.server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        PyServer {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The process state letter from /proc/<pid>/stat (`T`: stopped).
    fn state(&self) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.chars().next().unwrap()
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn idle_hosts_are_stopped_between_their_turns_and_continued_at_the_end() {
    let a = PyServer::start();
    let b = PyServer::start();
    let tasks = std::env::temp_dir().join(format!("neurogc-stop-idle-{}.toml", std::process::id()));
    std::fs::write(&tasks, "[[task]]\npath = \"/\"\n").unwrap();
    let flags = format!(
        "--host {} --host {} --rate 50 --run-time 4s --alternate 1s --stop-idle {},{} --tasks {}",
        a.url,
        b.url,
        a.pid(),
        b.pid(),
        tasks.display()
    );
    let states = std::thread::scope(|s| {
        let load = s.spawn(|| run_load(&flags));
        // Sample both processes' states every 20 ms while the load runs.
        let started = Instant::now();
        let mut states = Vec::new();
        while !load.is_finished() {
            states.push((started.elapsed().as_secs_f64(), a.state(), b.state()));
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = load.join().unwrap();
        assert_eq!((out.summary.failures, out.summary.dropped), (0, 0));
        assert_eq!(out.turns.len(), 4);
        states
    });
    std::fs::remove_file(&tasks).unwrap();
    // Slices: a [0, 1) s, b [1, 2) s, a [2, 3) s, b [3, 4) s (plus the probes before the start).
    let stopped = |from: f64, to: f64, which: usize| {
        states
            .iter()
            .filter(|(t, ..)| (from..to).contains(t))
            .all(|(_, sa, sb)| [*sa, *sb][which] == 'T')
    };
    assert!(stopped(0.4, 0.8, 1), "b runs during a's turn: {states:?}");
    assert!(stopped(1.4, 1.8, 0), "a runs during b's turn: {states:?}");
    assert!(
        stopped(2.4, 2.8, 1),
        "b runs during a's second turn: {states:?}"
    );
    assert!(
        !states.iter().any(|(_, sa, sb)| *sa == 'T' && *sb == 'T'),
        "both stopped at once"
    );
    // When the run is over, nobody is left stopped.
    assert_ne!(a.state(), 'T');
    assert_ne!(b.state(), 'T');
}

#[test]
fn stop_idle_needs_one_group_per_host() {
    let flags = [
        "--host",
        "http://127.0.0.1:1",
        "--host",
        "http://127.0.0.1:2",
        "--rate",
        "5",
        "--alternate",
        "1s",
        "--stop-idle",
        "1234",
    ];
    let e = neurogc_load::Config::from_args(common::parse(&flags)).unwrap_err();
    assert!(
        format!("{e:#}").contains("--stop-idle has 1 process groups for 2 hosts"),
        "{e:#}"
    );
}
