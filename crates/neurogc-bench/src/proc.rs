//! Child processes that must never outlive the run: each in its own process group (so a terminal's
//! Ctrl-C reaches us first and we stop them in order), killed with the parent if it dies, and
//! optionally pinned to CPUs. Also the Ctrl-C flag every loop polls.
//!
//! "Killed with the parent" holds for the whole group, grandchildren included: the parent-death
//! signal reaches only the leader (a `sh -c` wrapper, say), so every group also gets a keeper,
//! `neurogc __keep PGID`, that watches a pipe whose only write end is this process's. However
//! this process ends, `kill -9` included, the keeper reads end of file and kills the group.

use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Turns SIGINT and SIGTERM into a flag, so a run stops its children and keeps what it measured.
pub fn install_interrupt_handler() {
    let handler: extern "C" fn(libc::c_int) = on_sigint;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Sleeps up to `d`, waking early on Ctrl-C. Returns false if interrupted.
pub fn sleep_unless_interrupted(d: Duration) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if interrupted() {
            return false;
        }
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
    }
    !interrupted()
}

/// CPUs this process may run on, in order.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// A process group we started; dropping it stops the whole group.
pub struct Group {
    child: Child,
    /// Kills the group if this process dies without stopping it.
    keeper: Option<Child>,
    name: String,
    stopped: bool,
}

/// Spawns `cmd` as the leader of a new process group, output to `log` (or discarded), pinned to
/// `cpus` if any, and sent SIGTERM if this process dies first.
pub fn spawn_group(
    mut cmd: Command,
    name: &str,
    log: Option<&Path>,
    cpus: &[usize],
) -> Result<Group> {
    let (out, err) = match log {
        Some(path) => {
            let f =
                File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            (Stdio::from(f.try_clone()?), Stdio::from(f))
        }
        None => (Stdio::null(), Stdio::null()),
    };
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    let cpus = cpus.to_vec();
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
            if !cpus.is_empty() {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                for &c in &cpus {
                    libc::CPU_SET(c, &mut set);
                }
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot start {name} ({:?})", cmd.get_program()))?;
    let keeper = spawn_keeper(child.id() as libc::pid_t);
    Ok(Group {
        child,
        keeper,
        name: name.to_string(),
        stopped: false,
    })
}

/// This process's lifeline: a pipe whose write end only this process holds (close-on-exec, never
/// written), and whose read end every keeper watches.
fn lifeline() -> Option<&'static (OwnedFd, OwnedFd)> {
    static LIFELINE: OnceLock<Option<(OwnedFd, OwnedFd)>> = OnceLock::new();
    LIFELINE
        .get_or_init(|| {
            let mut fds = [0; 2];
            // SAFETY: pipe2 fills both descriptors; each is then owned exactly once.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return None;
            }
            // SAFETY: fresh descriptors from pipe2, owned by nothing else.
            Some(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
        })
        .as_ref()
}

/// Starts the keeper of group `pgid` (see the module's comment). Without one (no pipe, no
/// executable) the group still gets the parent-death signal on its leader.
fn spawn_keeper(pgid: libc::pid_t) -> Option<Child> {
    let (read, _write) = lifeline()?;
    let exe = std::env::current_exe().ok()?;
    let stdin = read.try_clone().ok()?;
    let mut cmd = Command::new(exe);
    cmd.arg("__keep")
        .arg(pgid.to_string())
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: only async-signal-safe calls between fork and exec. Its own group: a terminal's
    // Ctrl-C is ours to handle, not the keeper's.
    unsafe {
        cmd.pre_exec(|| {
            libc::setpgid(0, 0);
            Ok(())
        });
    }
    cmd.spawn().ok()
}

/// `neurogc __keep PGID`: waits until standard input (the lifeline) ends, then stops the group
/// (SIGCONT, SIGTERM, then SIGKILL after 3 s); exits by itself once the group is gone.
pub fn keep(pgid: libc::pid_t) -> i32 {
    let alive = || {
        // SAFETY: signal 0 only checks that the group exists.
        unsafe { libc::kill(-pgid, 0) == 0 }
    };
    loop {
        let mut fd = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut fd, 1, 1000) };
        if ready > 0 {
            let mut byte = [0u8; 1];
            // SAFETY: reads at most one byte into a local buffer.
            let n = unsafe { libc::read(0, byte.as_mut_ptr().cast(), 1) };
            if n <= 0 {
                break; // the parent is gone
            }
        }
        if !alive() {
            return 0;
        }
    }
    // SAFETY: negative pids address the group this keeper was started for.
    unsafe {
        libc::kill(-pgid, libc::SIGCONT);
        libc::kill(-pgid, libc::SIGTERM);
    }
    let end = Instant::now() + Duration::from_secs(3);
    while alive() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: as above.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    0
}

impl Group {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The exit status if the leader has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Sends `signal` to every process of the group.
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: a negative pid addresses the process group we created.
        unsafe {
            libc::kill(-(self.child.id() as libc::pid_t), signal);
        }
    }

    /// Waits for the leader to exit, up to `timeout`.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_wait() {
                return Some(status);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGCONT and SIGINT (graceful: flushes CSVs, runs atexit), then SIGTERM, then SIGKILL; always ends with
    /// the whole group killed so no grandchild (the demo's upstream, a worker) is left behind.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.stopped {
            return self.try_wait();
        }
        self.stopped = true;
        let mut status = self.try_wait();
        if status.is_none() {
            // A group stopped between its turns (`--mode turns`) must run to handle SIGINT.
            self.signal(libc::SIGCONT);
            self.signal(libc::SIGINT);
            status = self.wait_timeout(grace);
        }
        if status.is_none() {
            self.signal(libc::SIGTERM);
            status = self.wait_timeout(grace);
        }
        self.signal(libc::SIGKILL);
        if status.is_none() {
            status = self.child.wait().ok();
        }
        if let Some(mut keeper) = self.keeper.take() {
            let _ = keeper.kill();
            let _ = keeper.wait();
        }
        status
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(3));
    }
}
