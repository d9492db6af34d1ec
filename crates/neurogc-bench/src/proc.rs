//! Child processes that must never outlive the run: each in its own process group (so a terminal's
//! Ctrl-C reaches us first and we stop them in order), killed with the parent if it dies, and
//! optionally pinned to CPUs. Also the Ctrl-C flag every loop polls.
//!
//! "Killed with the parent" holds for every descendant, even one that left the group (`setsid`, a
//! double-forked daemon): each service runs under a keeper, `neurogc __keep PID`, its parent and a
//! child subreaper, so an orphaned descendant is re-parented to the keeper rather than to init. The
//! keeper watches a pipe whose only write end is this process's: however this process ends,
//! `kill -9` included, it reads end of file and kills its whole descendant tree (SIGTERM, 3 s,
//! SIGKILL until none is left). When the service itself exits it kills what the service left
//! behind the same way (1 s), then exits with the service's status, which is what [`Group`] reports.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
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
    /// The service's keeper (its parent), which exits with the service's status.
    keeper: Child,
    /// The service: the leader of the group.
    pid: u32,
    name: String,
    stopped: bool,
}

/// Spawns `cmd` as the leader of a new process group, output to `log` (or discarded), pinned to
/// `cpus` if any, under a keeper that kills it and every descendant if this process dies first.
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
    let (lifeline, _) = lifeline().context("cannot create the keepers' lifeline pipe")?;
    let lifeline = lifeline.as_raw_fd();
    let (report_read, report_write) = pipe().context("cannot create a pipe")?;
    let report = report_write.as_raw_fd();
    let exe = CString::new("/proc/self/exe").expect("no NUL");
    let arg0 = CString::new("neurogc").expect("no NUL");
    let arg1 = CString::new("__keep").expect("no NUL");
    let mut pid_arg = [0u8; 16];
    let cpus = cpus.to_vec();
    // SAFETY: only async-signal-safe calls between fork and exec (fork included: the process
    // forked from ours has one thread), on memory allocated before the fork.
    unsafe {
        cmd.pre_exec(move || {
            // The keeper-to-be: a group of its own (a terminal's Ctrl-C is ours to handle), and the
            // subreaper of everything the service starts (kept across exec).
            if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong);
            let keeper = libc::getpid();
            let service = libc::fork();
            if service < 0 {
                return Err(io::Error::last_os_error());
            }
            if service == 0 {
                // The service: returning lets `cmd` exec it.
                if libc::setpgid(0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
                if libc::getppid() != keeper {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                if !cpus.is_empty() {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    for &c in &cpus {
                        libc::CPU_SET(c, &mut set);
                    }
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                }
                return Ok(());
            }
            // The keeper: tells us the service's pid, takes the lifeline as its standard input and
            // becomes `neurogc __keep PID` (this very executable, even if replaced since).
            let bytes = service.to_ne_bytes();
            libc::write(report, bytes.as_ptr().cast(), bytes.len());
            let argv = [
                arg0.as_ptr(),
                arg1.as_ptr(),
                decimal(service, &mut pid_arg),
                std::ptr::null(),
            ];
            if libc::dup2(lifeline, 0) == 0 {
                libc::execv(exe.as_ptr(), argv.as_ptr());
            }
            let e = io::Error::last_os_error();
            libc::kill(service, libc::SIGKILL);
            libc::waitpid(service, std::ptr::null_mut(), 0);
            Err(e)
        });
    }
    let keeper = cmd
        .spawn()
        .with_context(|| format!("cannot start {name} ({:?})", cmd.get_program()))?;
    drop(report_write); // our copy: the keeper's is closed by its exec
    let mut bytes = [0u8; 4];
    if let Err(e) = File::from(report_read).read_exact(&mut bytes) {
        let mut keeper = keeper;
        let _ = keeper.kill();
        let _ = keeper.wait();
        return Err(e).with_context(|| format!("{name}: its keeper did not report its pid"));
    }
    Ok(Group {
        keeper,
        pid: libc::pid_t::from_ne_bytes(bytes) as u32,
        name: name.to_string(),
        stopped: false,
    })
}

/// `n` in decimal, NUL-terminated, in `buf`: no allocation (it runs between fork and exec).
fn decimal(n: libc::pid_t, buf: &mut [u8; 16]) -> *const libc::c_char {
    let mut digits = [0u8; 16];
    let (mut n, mut len) = (n.unsigned_abs(), 0);
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        buf[i] = digits[len - 1 - i];
    }
    buf[len] = 0;
    buf.as_ptr().cast()
}

/// A close-on-exec pipe: (read end, write end), both above 2 (a child's standard streams, set up
/// before `pre_exec`, would replace a pipe end that took one of their numbers).
fn pipe() -> Option<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills both descriptors; each is then owned exactly once.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    // SAFETY: fresh descriptors from pipe2, owned by nothing else (a low one is moved up).
    let [read, write] = fds.map(|fd| unsafe {
        let fd = if fd < 3 {
            let moved = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3);
            libc::close(fd);
            moved
        } else {
            fd
        };
        (fd >= 0).then(|| OwnedFd::from_raw_fd(fd))
    });
    Some((read?, write?))
}

/// This process's lifeline: a pipe whose write end only this process holds (close-on-exec, never
/// written), and whose read end every keeper watches.
fn lifeline() -> Option<&'static (OwnedFd, OwnedFd)> {
    static LIFELINE: OnceLock<Option<(OwnedFd, OwnedFd)>> = OnceLock::new();
    LIFELINE.get_or_init(pipe).as_ref()
}

/// How long the keeper gives its descendants between SIGTERM and SIGKILL once this process is gone,
/// and once the service has exited (what it left behind).
const PARENT_GONE_GRACE: Duration = Duration::from_secs(3);
const LEFTOVER_GRACE: Duration = Duration::from_secs(1);

/// `neurogc __keep PID`, the parent of service PID (see the module's comment): waits until the
/// service exits or standard input (the lifeline) ends, kills every descendant left, and exits
/// with the service's status (0 if the lifeline ended first: no one is waiting any more).
pub fn keep(service: libc::pid_t) -> i32 {
    let wake = child_exit_fd();
    let mut status = None;
    loop {
        reap(service, &mut status);
        if let Some(status) = status {
            kill_descendants(LEFTOVER_GRACE, service, &mut None);
            return exit_like(status);
        }
        let mut fds = [
            libc::pollfd {
                fd: 0,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: wake.as_ref().map_or(-1, |f| f.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let timeout = if wake.is_some() { -1 } else { 100 };
        // SAFETY: two valid pollfds (poll ignores a negative fd).
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
        if ready > 0 && fds[0].revents != 0 {
            let mut byte = [0u8; 1];
            // SAFETY: reads at most one byte into a local buffer.
            let n = unsafe { libc::read(0, byte.as_mut_ptr().cast(), 1) };
            if n <= 0 {
                break; // the parent is gone
            }
        }
        if ready > 0 && fds[1].revents != 0 {
            let mut info = [0u8; std::mem::size_of::<libc::signalfd_siginfo>()];
            // SAFETY: drains the signalfd (non-blocking) into a local buffer.
            while unsafe { libc::read(fds[1].fd, info.as_mut_ptr().cast(), info.len()) } > 0 {}
        }
    }
    kill_descendants(PARENT_GONE_GRACE, service, &mut status);
    0
}

/// A signalfd that becomes readable when a child exits (not when one stops or resumes).
fn child_exit_fd() -> Option<OwnedFd> {
    // SAFETY: plain data initialised by sigemptyset; SIGCHLD keeps its default action (ignored),
    // blocked, so it queues for the signalfd.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        action.sa_flags = libc::SA_NOCLDSTOP;
        libc::sigaction(libc::SIGCHLD, &action, std::ptr::null_mut());
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        (fd >= 0).then(|| OwnedFd::from_raw_fd(fd))
    }
}

/// Reaps every child that has exited (the service, and descendants re-parented to us); keeps the
/// service's status.
fn reap(service: libc::pid_t, status: &mut Option<libc::c_int>) {
    loop {
        let mut s = 0;
        // SAFETY: waits, without blocking, for any child of this process.
        let pid = unsafe { libc::waitpid(-1, &mut s, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        if pid == service {
            *status = Some(s);
        }
    }
}

/// Kills every descendant of this process: SIGTERM (and SIGCONT, for a stopped one), up to `grace`
/// for them to exit, then SIGKILL until none is left. Descendants are found afresh each round (one
/// may fork meanwhile; an orphan is re-parented to us, the subreaper), by parent pid in /proc.
fn kill_descendants(grace: Duration, service: libc::pid_t, status: &mut Option<libc::c_int>) {
    let signal_all = |signal: libc::c_int| {
        let alive = descendants();
        for &pid in &alive {
            // SAFETY: a descendant of this process, found just now.
            unsafe {
                libc::kill(pid, signal);
                if signal == libc::SIGTERM {
                    libc::kill(pid, libc::SIGCONT);
                }
            }
        }
        !alive.is_empty()
    };
    reap(service, status);
    if signal_all(libc::SIGTERM) {
        let end = Instant::now() + grace;
        loop {
            std::thread::sleep(Duration::from_millis(20));
            reap(service, status);
            if descendants().is_empty() || Instant::now() >= end {
                break;
            }
        }
        // Unkillable ones (stuck in the kernel) are left after 5 s: this must end.
        let end = Instant::now() + Duration::from_secs(5);
        while signal_all(libc::SIGKILL) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
            reap(service, status);
        }
    }
    reap(service, status);
}

/// The live (not zombie) descendants of this process, from /proc/*/stat.
fn descendants() -> Vec<libc::pid_t> {
    let mut parent_of = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue; // gone meanwhile
            };
            // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
            let mut rest = stat[stat.rfind(')').map_or(0, |i| i + 1)..].split_whitespace();
            let state = rest.next().unwrap_or("");
            if let Some(ppid) = rest.next().and_then(|s| s.parse::<libc::pid_t>().ok()) {
                parent_of.push((pid, ppid, state != "Z" && state != "X"));
            }
        }
    }
    // SAFETY: getpid has no preconditions.
    let mut tree = vec![unsafe { libc::getpid() }];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            parent_of
                .iter()
                .filter(|&&(pid, ppid, _)| ppid == parent && !tree.contains(&pid))
                .map(|&(pid, _, _)| pid)
                .collect::<Vec<_>>(),
        );
        i += 1;
    }
    tree.remove(0);
    tree.retain(|pid| parent_of.iter().any(|&(p, _, live)| p == *pid && live));
    tree
}

/// Exits as the service did: with its code, or killed by the same signal (no core dump).
fn exit_like(status: libc::c_int) -> i32 {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        // SAFETY: resets one signal to its default action, unblocks it and raises it.
        unsafe {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::raise(signal);
        }
        return 128 + signal;
    }
    libc::WEXITSTATUS(status)
}

impl Group {
    /// The service's pid (the group's id), not its keeper's.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The exit status if the leader has exited (and its keeper has killed what it left behind).
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.keeper.try_wait().ok().flatten()
    }

    /// Sends `signal` to every process of the group.
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: a negative pid addresses the process group we created.
        unsafe {
            libc::kill(-(self.pid as libc::pid_t), signal);
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

    /// Waits until the leader has exited (and its keeper has killed what it left behind), with
    /// the raw wait status (the keeper exits or dies as the leader did) and the resource usage
    /// of the keeper and every process it reaped: `ru_maxrss` is the largest of them.
    pub fn wait_with_usage(&mut self) -> io::Result<(libc::c_int, libc::rusage)> {
        let keeper = libc::pid_t::try_from(self.keeper.id())
            .map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
        let mut status = 0;
        // SAFETY: rusage is plain data; wait4 writes it and status for our own child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: pointers to live locals; the keeper is our child.
            if unsafe { libc::wait4(keeper, &mut status, 0, &mut usage) } == keeper {
                // Reaped: nothing is left to stop.
                self.stopped = true;
                return Ok((status, usage));
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }

    /// SIGCONT and SIGINT (graceful: flushes CSVs, runs atexit), then SIGTERM, then SIGKILL; always ends with
    /// the whole group killed so no grandchild (the demo's upstream, a worker) is left behind, and
    /// the keeper kills any descendant outside the group before it reports the exit.
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
            status = self.keeper.wait().ok();
        }
        status
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(3));
    }
}
