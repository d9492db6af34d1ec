//! This process's own resource use, read from `/proc/<pid>/{stat,status,io}`.
//!
//! Per-process, not machine-wide: the seed's profiler used psutil's system counters, so its "process"
//! CPU, disk and network columns measured the whole machine. Network bytes are not in `/proc` per
//! process at all; the middleware counts them.

use std::fs;
use std::path::{Path, PathBuf};

/// Cumulative counters at one instant. `None` where the file or field could not be read.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessCounters {
    /// utime + stime, in clock ticks.
    pub cpu_ticks: Option<u64>,
    pub rss_bytes: Option<u64>,
    /// Bytes fetched from / sent to the storage layer (`read_bytes` / `write_bytes`).
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
}

/// Rates between two readings.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessRates {
    /// % of one core.
    pub cpu_percent: Option<f64>,
    /// RSS as % of the machine's memory.
    pub mem_percent: Option<f64>,
    pub rss_bytes: Option<u64>,
    pub disk_read_per_s: Option<f64>,
    pub disk_write_per_s: Option<f64>,
}

/// Reads one process's counters. `proc_root` is `/proc` except in tests of unreadable entries.
#[derive(Clone, Debug)]
pub struct ProcessReader {
    proc_root: PathBuf,
    clock_ticks_per_s: f64,
    mem_total_bytes: Option<u64>,
}

impl ProcessReader {
    pub fn new(proc_root: impl Into<PathBuf>) -> Self {
        let proc_root = proc_root.into();
        let mem_total_bytes = fs::read_to_string(proc_root.join("meminfo"))
            .ok()
            .and_then(|text| parse_kib_field(&text, "MemTotal:"));
        ProcessReader {
            proc_root,
            clock_ticks_per_s: clock_ticks_per_second(),
            mem_total_bytes,
        }
    }

    /// CPU time (user + system) in `counters`, in seconds.
    pub fn cpu_seconds(&self, counters: &ProcessCounters) -> Option<f64> {
        counters
            .cpu_ticks
            .map(|ticks| ticks as f64 / self.clock_ticks_per_s)
    }

    pub fn mem_total_bytes(&self) -> Option<u64> {
        self.mem_total_bytes
    }

    /// Reads the current process's counters (the pid is looked up each time: it changes in a fork child).
    pub fn read(&self) -> ProcessCounters {
        self.read_pid(std::process::id())
    }

    /// A reader of this process's RSS alone, under the same root, for frequent reads.
    pub fn rss_reader(&self) -> RssReader {
        RssReader::new(self.proc_root.clone())
    }

    /// `/proc/<pid>` (under the configured root).
    pub fn proc_dir(&self, pid: u32) -> PathBuf {
        self.proc_root.join(pid.to_string())
    }

    pub fn read_pid(&self, pid: u32) -> ProcessCounters {
        let dir = self.proc_dir(pid);
        let io = fs::read_to_string(dir.join("io")).ok();
        ProcessCounters {
            cpu_ticks: fs::read_to_string(dir.join("stat"))
                .ok()
                .and_then(|s| parse_stat_cpu_ticks(&s)),
            rss_bytes: read_rss_bytes(&dir),
            read_bytes: io
                .as_deref()
                .and_then(|t| parse_plain_field(t, "read_bytes:")),
            write_bytes: io
                .as_deref()
                .and_then(|t| parse_plain_field(t, "write_bytes:")),
        }
    }

    /// Rates over `elapsed_s` seconds between `before` and `after`.
    pub fn rates(
        &self,
        before: &ProcessCounters,
        after: &ProcessCounters,
        elapsed_s: f64,
    ) -> ProcessRates {
        let per_s = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) if elapsed_s > 0.0 => Some(b.saturating_sub(a) as f64 / elapsed_s),
            _ => None,
        };
        ProcessRates {
            cpu_percent: per_s(before.cpu_ticks, after.cpu_ticks)
                .map(|ticks_per_s| ticks_per_s / self.clock_ticks_per_s * 100.0),
            mem_percent: match (after.rss_bytes, self.mem_total_bytes) {
                (Some(rss), Some(total)) if total > 0 => Some(rss as f64 / total as f64 * 100.0),
                _ => None,
            },
            rss_bytes: after.rss_bytes,
            disk_read_per_s: per_s(before.read_bytes, after.read_bytes),
            disk_write_per_s: per_s(before.write_bytes, after.write_bytes),
        }
    }
}

/// The resident set (bytes): `<dir>/statm`'s second field, in pages (the kernel's VmRSS), else
/// VmRSS from `<dir>/status`. The policies read it every 10-50 ms: `statm` is one short line,
/// while `status` makes the kernel format some fifty.
pub fn read_rss_bytes(dir: &Path) -> Option<u64> {
    let from_statm = fs::read_to_string(dir.join("statm"))
        .ok()
        .and_then(|t| parse_statm_rss(&t));
    from_statm.or_else(|| {
        fs::read_to_string(dir.join("status"))
            .ok()
            .and_then(|t| parse_kib_field(&t, "VmRSS:"))
    })
}

/// This process's RSS, read again and again from one open `statm` (a read at offset 0 makes the
/// kernel write it afresh). The scheduler asks at every tick, 20-100 times a second; opening the
/// file each time was most of an idle agent's CPU. Reopened after a fork (the pid changes).
#[derive(Debug)]
pub struct RssReader {
    proc_root: PathBuf,
    open: Option<(u32, fs::File)>,
}

impl RssReader {
    pub fn new(proc_root: impl Into<PathBuf>) -> Self {
        RssReader {
            proc_root: proc_root.into(),
            open: None,
        }
    }

    pub fn read(&mut self) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let pid = std::process::id();
        let dir = || self.proc_root.join(pid.to_string());
        if self.open.as_ref().is_none_or(|(opened, _)| *opened != pid) {
            self.open = fs::File::open(dir().join("statm")).ok().map(|f| (pid, f));
        }
        let mut buf = [0u8; 128];
        let from_statm = self.open.as_ref().and_then(|(_, statm)| {
            let n = statm.read_at(&mut buf, 0).ok()?;
            parse_statm_rss(std::str::from_utf8(&buf[..n]).ok()?)
        });
        from_statm.or_else(|| read_rss_bytes(&dir()))
    }
}

fn parse_statm_rss(statm: &str) -> Option<u64> {
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size())
}

/// Bytes the C allocator holds free (glibc's `mallinfo2().fordblks`): memory a collection gave
/// back to the allocator, which new allocations reuse before RSS grows again. glibc seldom hands
/// it to the system by itself, so RSS after a collection stays near its peak; RSS minus this is
/// what the heap uses. `None` where the allocator does not tell (glibc before 2.33, musl).
/// Costs ~0.1 ms with a heap of 100 MiB free: read it every few hundred ms, not at every tick.
pub fn malloc_free_bytes() -> Option<u64> {
    #[repr(C)]
    struct Mallinfo2 {
        arena: usize,
        ordblks: usize,
        smblks: usize,
        hblks: usize,
        hblkhd: usize,
        usmblks: usize,
        fsmblks: usize,
        uordblks: usize,
        fordblks: usize,
        keepcost: usize,
    }
    type MallinfoFn = unsafe extern "C" fn() -> Mallinfo2;
    // Looked up at run time: the wheel links against glibc 2.17, which has no mallinfo2.
    static MALLINFO2: std::sync::OnceLock<Option<MallinfoFn>> = std::sync::OnceLock::new();
    let f = MALLINFO2.get_or_init(|| {
        // SAFETY: dlsym with a NUL-terminated name; a non-null result is glibc's mallinfo2,
        // whose signature is the one above.
        let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"mallinfo2".as_ptr()) };
        (!sym.is_null())
            .then(|| unsafe { std::mem::transmute::<*mut libc::c_void, MallinfoFn>(sym) })
    });
    // SAFETY: mallinfo2 takes the allocator's own locks; it only reads its statistics.
    f.map(|f| unsafe { f() }.fordblks as u64)
}

/// [`malloc_free_bytes`], read at most every `every`, and at a cost kept small. mallinfo2 walks
/// every free chunk with the allocator's lock held, stalling every thread's malloc meanwhile: 30 ms
/// of CPU a call on a heap with 150,000 free chunks of about 1 KB (`make bench`). So the next read waits
/// [`HeapFree::COST_FACTOR`] times the last one's CPU time (at most 0.25 % of the time with malloc
/// locked), and a call over [`HeapFree::TOO_SLOW`] is the last: a stall that long is the kind the
/// scheduler exists to keep out of requests. In between, and after the last, the value is the
/// last one read (the scheduler's baselines were taken with it: RSS alone would jump) while RSS
/// stays within [`HeapFree::GREW`] of what it was then. Once RSS has grown past that, it is the
/// lowest value read: the allocator takes memory from the system only when what it holds free
/// cannot serve, so that was back at its floor. (Kept at the last value, growing-cache's 21 MiB
/// free after its freeze, read last 13 ms long, hid as much garbage as the allocator then
/// reused: its frozen garbage reached 1.16× the default's peak RSS unseen.)
#[derive(Debug)]
pub struct HeapFree {
    every: std::time::Duration,
    too_slow_ms: f64,
    /// When the last read was, what it found, and how long until the next.
    last: Option<(std::time::Instant, Option<u64>, std::time::Duration)>,
    /// RSS at the last read.
    rss_at_last: Option<u64>,
    /// The lowest value read.
    lowest: Option<u64>,
    /// The CPU time of the call that was too slow, and whether it was told (see [`Self::take_stopped`]).
    stopped: Option<(f64, bool)>,
}

impl HeapFree {
    /// A call longer than this (CPU time) stops the reading.
    pub const TOO_SLOW: std::time::Duration = std::time::Duration::from_millis(10);
    /// The wait after a read, in multiples of its CPU time.
    pub const COST_FACTOR: u32 = 400;
    /// RSS grown past its value at the last read by more than this: the allocator's free memory
    /// is at its floor (thread stacks and the like move RSS by less).
    pub const GREW: u64 = 2 << 20;

    pub fn new(every: std::time::Duration) -> Self {
        HeapFree {
            every,
            too_slow_ms: Self::TOO_SLOW.as_secs_f64() * 1e3,
            last: None,
            rss_at_last: None,
            lowest: None,
            stopped: None,
        }
    }

    /// What the allocator holds free, with the process's RSS now.
    pub fn read(&mut self, rss: Option<u64>) -> Option<u64> {
        let now = std::time::Instant::now();
        match self.last {
            Some((at, value, wait)) if self.stopped.is_some() || now.duration_since(at) < wait => {
                self.between_reads(value, rss)
            }
            _ => {
                let cpu = thread_cpu_ms();
                let value = malloc_free_bytes();
                let took = (thread_cpu_ms() - cpu).max(0.0);
                if took > self.too_slow_ms {
                    self.stopped = Some((took, false));
                }
                let wait = self
                    .every
                    .max(std::time::Duration::from_secs_f64(took / 1e3) * Self::COST_FACTOR);
                self.last = Some((now, value, wait));
                self.rss_at_last = rss;
                self.lowest = match (self.lowest, value) {
                    (Some(low), Some(v)) => Some(low.min(v)),
                    (low, v) => v.or(low),
                };
                value
            }
        }
    }

    /// The last value read, or the lowest once RSS has grown past [`Self::GREW`] since.
    fn between_reads(&self, last: Option<u64>, rss: Option<u64>) -> Option<u64> {
        match (rss, self.rss_at_last) {
            (Some(now), Some(then)) if now > then + Self::GREW => self.lowest.or(last),
            _ => last,
        }
    }

    /// How long the next read waits after the last (None before the first).
    pub fn wait(&self) -> Option<std::time::Duration> {
        self.last.map(|(_, _, wait)| wait)
    }

    /// Once, after the reading stopped: how long (ms of CPU) the call that stopped it took.
    pub fn take_stopped(&mut self) -> Option<f64> {
        match &mut self.stopped {
            Some((took, told @ false)) => {
                *told = true;
                Some(*took)
            }
            _ => None,
        }
    }
}

/// This thread's CPU time, ms: what a collection run on it cost (a wall clock would also count
/// a stopped or descheduled process).
pub fn thread_cpu_ms() -> f64 {
    cpu_clock_ms(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0.0)
}

/// One of the kernel's CPU clocks (this thread's, this process's), ms.
fn cpu_clock_ms(clock: libc::clockid_t) -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we pass; no other memory is involved.
    let ok = unsafe { libc::clock_gettime(clock, &mut ts) } == 0;
    ok.then(|| ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6)
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 on error, handled below.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|&s| s > 0).unwrap_or(4096)
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions; it returns -1 on error, handled below.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

/// utime + stime from `/proc/<pid>/stat`. The command name (field 2) may contain spaces and
/// parentheses, so fields are counted from the last ')'.
fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // After the comm: state is field 3 (index 0 here); utime is field 14, stime field 15.
    let utime: u64 = fields.get(14 - 3)?.parse().ok()?;
    let stime: u64 = fields.get(15 - 3)?.parse().ok()?;
    Some(utime + stime)
}

/// A `Key:   123 kB` line, in bytes.
fn parse_kib_field(text: &str, key: &str) -> Option<u64> {
    parse_plain_field(text, key).map(|kib| kib * 1024)
}

/// The first number after `key` on its line.
fn parse_plain_field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing_survives_odd_command_names() {
        let stat =
            "4242 (my (odd) app) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 75 0 0 20 0 3 0 1 1 1";
        assert_eq!(parse_stat_cpu_ticks(stat), Some(325));
        assert_eq!(parse_stat_cpu_ticks("garbage"), None);
    }

    #[test]
    fn reads_own_process() {
        let reader = ProcessReader::new("/proc");
        let c = reader.read();
        assert!(c.cpu_ticks.is_some());
        let rss = c.rss_bytes.expect("VmRSS readable");
        assert!(rss > 1_000_000 && rss < 10_000_000_000, "{rss}");
        assert!(reader.mem_total_bytes().unwrap() > rss);
    }

    #[test]
    fn cpu_percent_of_a_busy_loop_is_what_the_process_used() {
        // Against the kernel's own CPU clock for the process, not the wall: on a busy machine the
        // loop gets less than a core, and the reading must say so, not be near 100 %.
        fn process_cpu_s() -> f64 {
            cpu_clock_ms(libc::CLOCK_PROCESS_CPUTIME_ID).expect("process CPU clock") / 1e3
        }
        let reader = ProcessReader::new("/proc");
        let before = reader.read();
        let (start, cpu_start) = (std::time::Instant::now(), process_cpu_s());
        let mut x = 0u64;
        while start.elapsed().as_millis() < 500 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let after = reader.read();
        let wall = start.elapsed().as_secs_f64();
        let expected = (process_cpu_s() - cpu_start) / wall * 100.0;
        let cpu = reader.rates(&before, &after, wall).cpu_percent.unwrap();
        // /proc counts in clock ticks (10 ms): two ticks of slack at each end.
        let slack = 2.0 * 0.01 / wall * 100.0 * 2.0;
        assert!(expected > 5.0, "the loop ran: {expected} %");
        assert!(
            (cpu - expected).abs() <= slack,
            "cpu {cpu} %, the process used {expected} %"
        );
    }

    #[test]
    fn unreadable_root_gives_none_not_zero() {
        let reader = ProcessReader::new("/nonexistent-proc-root");
        let c = reader.read();
        assert_eq!(c, ProcessCounters::default());
        let r = reader.rates(&c, &c, 1.0);
        assert_eq!(r, ProcessRates::default());
    }

    #[test]
    fn rss_from_statm_is_vmrss() {
        // The same pages the kernel reports as VmRSS, within 1 MiB: they are two reads, and
        // newer kernels keep the counters per CPU, which statm reads unsummed (71 pages apart
        // here on a 4 MiB process; a unit mistaken, pages for KiB, would be 4x off).
        let own = Path::new("/proc/self");
        let status = fs::read_to_string(own.join("status")).unwrap();
        let vm_rss = parse_kib_field(&status, "VmRSS:").unwrap() as f64;
        let rss = read_rss_bytes(own).unwrap() as f64;
        assert!((rss - vm_rss).abs() <= 1048576.0, "{rss} against {vm_rss}");
        // Without statm (a copied status file), VmRSS.
        let dir = std::env::temp_dir().join(format!("neurogc-rss-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("status"), "VmRSS:\t  1024 kB\n").unwrap();
        assert_eq!(read_rss_bytes(&dir), Some(1024 * 1024));
        fs::write(dir.join("statm"), "900 25 10 1 0 50 0\n").unwrap();
        assert_eq!(read_rss_bytes(&dir), Some(25 * page_size()));
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The allocator is the process's: its tests run one at a time (one's fragmented heap makes
    /// another's reads slow, and its frees move another's free bytes).
    static ALLOCATOR: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn free_heap_memory_is_read_less_often_as_reads_cost_more() {
        let _alone = ALLOCATOR.lock().unwrap_or_else(|e| e.into_inner());
        let mut reads = HeapFree::new(std::time::Duration::from_millis(200));
        assert_eq!(reads.wait(), None);
        if reads.read(None).is_none() {
            return; // not glibc 2.33+
        }
        // A fragmented heap: many free chunks for mallinfo2 to walk.
        let blocks: Vec<Vec<u8>> = (0..200_000).map(|i| vec![1u8; 600 + i % 64]).collect();
        let kept: Vec<_> = blocks.into_iter().step_by(2).collect();
        let mut fragmented = HeapFree::new(std::time::Duration::from_millis(200));
        let cpu = thread_cpu_ms();
        fragmented.read(None);
        let took = thread_cpu_ms() - cpu;
        let wait = fragmented.wait().unwrap().as_secs_f64() * 1e3;
        eprintln!(
            "a read of 100,000 free chunks: {took:.2} ms of CPU, the next {wait:.0} ms later"
        );
        assert!(
            wait > 200.0 && wait >= took * 0.9 * f64::from(HeapFree::COST_FACTOR),
            "{wait} ms after a read of {took} ms"
        );
        drop(kept);
    }

    #[test]
    fn free_heap_memory_is_read_no_more_once_a_read_was_too_slow() {
        let _alone = ALLOCATOR.lock().unwrap_or_else(|e| e.into_inner());
        let Some(_) = malloc_free_bytes() else {
            return; // not glibc 2.33+
        };
        // Any call is too slow for a limit of nothing: the first read is the last.
        let mut slow = HeapFree {
            too_slow_ms: 0.0,
            ..HeapFree::new(std::time::Duration::ZERO)
        };
        let first = slow.read(Some(100 << 20));
        let blocks: Vec<Vec<u8>> = (0..20_000).map(|i| vec![1u8; 900 + i % 64]).collect();
        let freed: Vec<_> = blocks.into_iter().step_by(2).collect();
        assert!(
            malloc_free_bytes() != first,
            "the allocator's free memory changed"
        );
        assert_eq!(
            slow.read(Some(101 << 20)),
            first,
            "the last value read, not a new call"
        );
        assert!(slow.take_stopped().is_some_and(|ms| ms >= 0.0));
        assert_eq!(slow.take_stopped(), None, "told once");
        drop(freed);
    }

    #[test]
    fn once_rss_grows_past_the_last_read_the_lowest_free_memory_read_stands() {
        let _alone = ALLOCATOR.lock().unwrap_or_else(|e| e.into_inner());
        let Some(_) = malloc_free_bytes() else {
            return; // not glibc 2.33+
        };
        let mut reads = HeapFree::new(std::time::Duration::ZERO);
        let low = reads.read(Some(100 << 20)).unwrap();
        // 16 MiB freed to the allocator, a block kept every 16 so it cannot trim them.
        let blocks: Vec<Vec<u8>> = (0..256).map(|i| vec![i as u8; 64 << 10]).collect();
        let kept: Vec<_> = blocks.into_iter().step_by(16).collect();
        // The next read is due (no minimum wait): it sees them free.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let high = reads.read(Some(100 << 20)).unwrap();
        assert!(high >= low + (8 << 20), "{low} then {high}");
        // Stopped: between reads from then on.
        reads.stopped = Some((0.0, true));
        assert_eq!(reads.read(Some((100 << 20) + HeapFree::GREW)), Some(high));
        assert_eq!(
            reads.read(Some((100 << 20) + HeapFree::GREW + 1)),
            Some(low),
            "RSS grew: the free memory was used first"
        );
        assert_eq!(reads.read(None), Some(high), "no RSS: the last value");
        drop(kept);
    }

    #[test]
    fn an_open_statm_reads_the_rss_of_now() {
        let mut reader = RssReader::new("/proc");
        let before = reader.read().unwrap();
        // 64 MiB touched: the same open file sees the pages arrive.
        let block = vec![1u8; 64 << 20];
        let after = reader.read().unwrap();
        assert!(after >= before + (60 << 20), "{before} then {after}");
        assert_eq!(std::hint::black_box(block).len(), 64 << 20);
        // Where there is no statm, nothing is made up.
        let mut nowhere = RssReader::new(std::env::temp_dir().join("neurogc-no-proc"));
        assert_eq!(nowhere.read(), None);
    }

    #[test]
    fn free_heap_memory_is_what_freed_blocks_left_with_the_allocator() {
        let _alone = ALLOCATOR.lock().unwrap_or_else(|e| e.into_inner());
        let Some(before) = malloc_free_bytes() else {
            return; // not glibc 2.33+
        };
        // 64 MiB in 64 KiB blocks (under glibc's mmap threshold: they come from the heap), a
        // block kept every 16 so the freed ones cannot go back as a trimmed top.
        let blocks: Vec<Vec<u8>> = (0..1024).map(|i| vec![i as u8; 64 << 10]).collect();
        let kept: Vec<Vec<u8>> = blocks.into_iter().step_by(16).collect();
        let after = malloc_free_bytes().unwrap();
        assert!(
            after >= before + (48 << 20),
            "free {} MiB before, {} MiB after freeing 60 MiB",
            before >> 20,
            after >> 20
        );
        drop(kept);
    }

    #[test]
    fn kib_fields() {
        let status = "Name:\tpython\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
        assert_eq!(parse_kib_field(status, "VmRSS:"), Some(1024 * 1024));
        assert_eq!(parse_kib_field(status, "VmSwap:"), None);
    }
}
