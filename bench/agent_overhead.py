"""Agent overhead, measured side by side (A/B/A/B) in one run.

1. Time the ASGI and WSGI middlewares add per request (in process, a trivial app, no network,
   so the middleware's cost is not hidden in socket time).
2. CPU the sampler thread uses at 1 s and 10 ms intervals (its own thread's on-CPU time, from
   /proc/self/task/<tid>/schedstat, in nanoseconds), with and without the CSV sink; and under
   the scheduler (`neurogc`, asked every 10-200 ms between samples), idle on a 200,000-object
   heap, serving a request every 3 ms through the ASGI middleware, and idle on a fragmented
   C heap (150,000 free chunks of about 1 KB, which glibc's mallinfo2 walks with malloc locked).
3. Time the gc callback adds per collection (a loop that triggers many gen0 collections).

Usage: python bench/agent_overhead.py [--rounds 5] [--out bench/results/agent_overhead.md]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import neurogc

FLOORS = {"request_us": 20.0, "cpu_1s_pct": 1.0, "cpu_10ms_pct": 5.0, "cpu_scheduler_pct": 1.0}
SCHEDULER = "neurogc,warmup=0.2"
REPO = Path(__file__).resolve().parents[1]


def _git_commit() -> str:
    """`git rev-parse --short HEAD`, plus "-dirty" and the changed paths if the tree has any."""
    try:
        git = ["git", "-C", str(REPO)]
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.rstrip("\n")  # each line starts with its two status columns: no strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    if not status:
        return head
    paths = ", ".join(f"`{line[3:]}`" for line in status.splitlines())
    return f"{head}-dirty (uncommitted changes in {paths})"


def _native_mtime() -> float:
    """When the extension module was installed (pip writes it then)."""
    native = sys.modules["neurogc._native"].__file__
    return os.path.getmtime(native) if native else 0.0


def _shown(path: Path) -> str:
    """A path relative to the checkout when it is inside it."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


# ---- 1. per-request time -------------------------------------------------------------------


async def _asgi_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"a", b"b")]})
    await send({"type": "http.response.body", "body": b"ok"})


_SCOPE = {
    "type": "http",
    "method": "GET",
    "path": "/x",
    "raw_path": b"/x",
    "headers": [(b"host", b"127.0.0.1:8001"), (b"user-agent", b"bench"), (b"accept", b"*/*")],
}


async def _receive():
    return {"type": "http.request", "body": b"", "more_body": False}


async def _send(message):
    pass


def _time_asgi(app, n: int, loop) -> float:
    async def run():
        t0 = time.perf_counter_ns()
        for _ in range(n):
            await app(_SCOPE, _receive, _send)
        return (time.perf_counter_ns() - t0) / n

    return loop.run_until_complete(run())


def _wsgi_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


_ENVIRON = {
    "REQUEST_METHOD": "GET",
    "PATH_INFO": "/x",
    "HTTP_HOST": "127.0.0.1",
    "CONTENT_LENGTH": "",
}


def _time_wsgi(app, n: int) -> float:
    def start_response(status, headers, exc_info=None):
        return None

    t0 = time.perf_counter_ns()
    for _ in range(n):
        body = app(dict(_ENVIRON), start_response)
        for _chunk in body:
            pass
        close = getattr(body, "close", None)
        if close:
            close()
    return (time.perf_counter_ns() - t0) / n


def bench_requests(rounds: int, n: int) -> dict:
    agent = neurogc.start(interval=1.0)
    asgi_wrapped = neurogc.NeuroGCMiddleware(_asgi_app, agent=agent)
    wsgi_wrapped = neurogc.NeuroGCWSGIMiddleware(_wsgi_app, agent=agent)
    loop = asyncio.new_event_loop()
    asgi, wsgi = [], []
    _time_asgi(asgi_wrapped, n // 10, loop)  # warm-up
    for _ in range(rounds):  # A B A B ...
        a = _time_asgi(_asgi_app, n, loop)
        b = _time_asgi(asgi_wrapped, n, loop)
        asgi.append((a, b))
        a = _time_wsgi(_wsgi_app, n)
        b = _time_wsgi(wsgi_wrapped, n)
        wsgi.append((a, b))
    loop.close()
    agent.stop()  # writes the last partial interval, so totals include every request
    recorded = agent.totals()["requests"]
    return {"asgi": asgi, "wsgi": wsgi, "recorded": recorded}


# ---- 2. sampler CPU ------------------------------------------------------------------------


def _sampler_cpu_ns() -> int:
    for tid in os.listdir("/proc/self/task"):
        try:
            if Path(f"/proc/self/task/{tid}/comm").read_text().strip() == "neurogc-sampler":
                return int(Path(f"/proc/self/task/{tid}/schedstat").read_text().split()[0])
        except OSError:
            continue
    raise RuntimeError("sampler thread not found")


def _serve_for(agent, seconds: float, every: float) -> None:
    """Requests through the ASGI middleware, one every ``every`` seconds, for ``seconds``."""
    app = neurogc.NeuroGCMiddleware(_asgi_app, agent=agent)
    loop = asyncio.new_event_loop()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        loop.run_until_complete(app(_SCOPE, _receive, _send))
        time.sleep(every)
    loop.close()


def _mallinfo2_cpu_ms() -> float | None:
    """The CPU time of one glibc mallinfo2() call on this process's heap, ms."""
    import ctypes

    class Mallinfo2(ctypes.Structure):  # ten size_t fields, returned by value
        _fields_ = [(f"f{i}", ctypes.c_size_t) for i in range(10)]

    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except AttributeError:
        return None  # glibc before 2.33, or not glibc
    mallinfo2.restype = Mallinfo2
    t = time.thread_time()
    mallinfo2()
    return (time.thread_time() - t) * 1e3


def _heap(kind: str) -> list:
    """A heap for the scheduler to freeze, as a service has; `fragmented`: 150,000 free chunks
    of about 1 KB between live ones (bytes objects over 512 bytes come from malloc)."""
    if kind == "fragmented":
        blocks = [bytes(1000 + (i % 50) * 8) for i in range(300_000)]
        del blocks[::2]
        return blocks
    return [[i] for i in range(200_000)] if kind == "lists" else []


def bench_sampler(
    interval: float,
    seconds: float,
    with_csv: bool,
    policy: str = "default",
    serve: bool = False,
    heap_kind: str = "none",
) -> dict:
    heap = _heap(heap_kind)
    mallinfo_ms = _mallinfo2_cpu_ms()
    with tempfile.TemporaryDirectory() as d:
        agent = neurogc.start(
            policy,
            interval=interval,
            csv=os.path.join(d, "s.csv") if with_csv else None,
        )
        time.sleep(max(0.5, min(1.0, interval * 2)))  # past the scheduler's warm-up and freeze
        cpu0, wall0, n0 = _sampler_cpu_ns(), time.perf_counter(), agent.totals()["samples"]
        if serve:
            _serve_for(agent, seconds, every=0.003)
        else:
            time.sleep(seconds)
        cpu1, wall1, n1 = _sampler_cpu_ns(), time.perf_counter(), agent.totals()["samples"]
        agent.stop()
    del heap
    samples = n1 - n0
    return {
        "interval": interval,
        "csv": with_csv,
        "policy": policy,
        "serve": serve,
        "heap": heap_kind,
        "mallinfo_ms": mallinfo_ms,
        "cpu_pct": (cpu1 - cpu0) / 1e9 / (wall1 - wall0) * 100,
        "us_per_sample": (cpu1 - cpu0) / 1e3 / max(samples, 1),
        "samples": samples,
    }


# ---- 3. gc callback ------------------------------------------------------------------------


class _Cyclic:
    def __init__(self):
        self.me = self


def _time_collections(n_objects: int) -> tuple[float, int]:
    """The loop's CPU time (this thread's: time spent preempted by other processes is not
    counted; the gc callbacks run on this thread) and the number of collections it caused."""
    before = sum(s["collections"] for s in gc.get_stats())
    t0 = time.thread_time_ns()
    for _ in range(n_objects):
        _Cyclic()
    elapsed = time.thread_time_ns() - t0
    return elapsed, sum(s["collections"] for s in gc.get_stats()) - before


def _noop_callback(phase, info):
    pass


def bench_callback(rounds: int, n_objects: int, pieces: int = 20) -> list[dict[str, float]]:
    """Per round, loop CPU time per collection (ns) for each arm: no callback, a no-op Python
    callback (CPython's own cost of calling callbacks: it builds an info dict per phase), and the
    agent's. Each arm allocates n_objects a round in `pieces` parts, the arms interleaved part by
    part (their order rotating), so that all three see the same moments of a drifting machine."""

    def run(arm: str, n_objects: int) -> tuple[float, int]:
        agent = neurogc.start(interval=1.0) if arm == "agent" else None
        if arm == "noop":
            gc.callbacks.append(_noop_callback)
        try:
            return _time_collections(n_objects)
        finally:
            if arm == "noop":
                gc.callbacks.remove(_noop_callback)
            if agent is not None:
                agent.stop()

    _time_collections(n_objects)  # warm-up, not counted
    order = ["none", "noop", "agent"]
    result = []
    for _ in range(rounds):
        total = {arm: [0.0, 0] for arm in order}
        for k in range(pieces):
            for arm in order[k % 3 :] + order[: k % 3]:
                ns, n = run(arm, n_objects // pieces)
                total[arm][0] += ns
                total[arm][1] += n
        result.append({arm: ns / max(n, 1) for arm, (ns, n) in total.items()})
    return result


# ---- report --------------------------------------------------------------------------------


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--requests", type=int, default=50_000, help="requests per round and side")
    p.add_argument("--seconds-1s", type=float, default=20.0)
    p.add_argument("--seconds-10ms", type=float, default=10.0)
    p.add_argument("--out", default="bench/results/agent_overhead.md")
    args = p.parse_args()

    commit = _git_commit()
    load_before = _loadavg()
    req = bench_requests(args.rounds, args.requests)
    sampler = [
        bench_sampler(1.0, args.seconds_1s, False),
        bench_sampler(1.0, args.seconds_1s, True),
        bench_sampler(0.01, args.seconds_10ms, False),
        bench_sampler(0.01, args.seconds_10ms, True),
        bench_sampler(1.0, args.seconds_1s, False, SCHEDULER, heap_kind="lists"),
        bench_sampler(1.0, args.seconds_1s, False, SCHEDULER, serve=True, heap_kind="lists"),
        bench_sampler(1.0, args.seconds_1s, False, SCHEDULER, heap_kind="fragmented"),
    ]
    callback = bench_callback(args.rounds, 2_000_000)
    load_after = _loadavg()

    def added(pairs):
        diffs = [(b - a) / 1e3 for a, b in pairs]
        return statistics.median(diffs), min(diffs), max(diffs)

    asgi_med, asgi_lo, asgi_hi = added(req["asgi"])
    wsgi_med, wsgi_lo, wsgi_hi = added(req["wsgi"])
    cb = {arm: statistics.median(r[arm] for r in callback) / 1e3 for arm in callback[0]}
    cb_added = {arm: added([(r["none"], r[arm]) for r in callback]) for arm in ("noop", "agent")}
    fixed = [s for s in sampler if s["policy"] == "default"]
    cpu_1s = max(s["cpu_pct"] for s in fixed if s["interval"] == 1.0)
    cpu_10ms = max(s["cpu_pct"] for s in fixed if s["interval"] == 0.01)
    cpu_scheduler = max(s["cpu_pct"] for s in sampler if s["policy"] == SCHEDULER)

    lines = [
        "# Agent overhead",
        "",
        f"Command: `{shlex.join(['python', 'bench/agent_overhead.py', *sys.argv[1:]])}` "
        "(run by `make bench`).",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}, "
        f"Python {platform.python_version()}. Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        f"Commit: {commit}; the agent measured is the installed `neurogc` "
        f"({_shown(Path(neurogc.__file__).parent)}, installed "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(_native_mtime()))}).",
        f"Machine load average (1, 5, 15 min) before: {load_before}; after: {load_after}.",
        "",
        "## Time added per request (in process, trivial app; A/B alternated, "
        f"{args.rounds} rounds × {args.requests:,} requests a side)",
        "",
        "| middleware | bare app (median) | with NeuroGC (median) | added: median [min, max] | floor |",
        "|---|---|---|---|---|",
        f"| ASGI | {statistics.median(a for a, _ in req['asgi']) / 1e3:.2f} µs "
        f"| {statistics.median(b for _, b in req['asgi']) / 1e3:.2f} µs "
        f"| **{asgi_med:.2f} µs** [{asgi_lo:.2f}, {asgi_hi:.2f}] | < {FLOORS['request_us']:.0f} µs |",
        f"| WSGI | {statistics.median(a for a, _ in req['wsgi']) / 1e3:.2f} µs "
        f"| {statistics.median(b for _, b in req['wsgi']) / 1e3:.2f} µs "
        f"| **{wsgi_med:.2f} µs** [{wsgi_lo:.2f}, {wsgi_hi:.2f}] | < {FLOORS['request_us']:.0f} µs |",
        "",
        f"The agent recorded {req['recorded']:,} requests (every wrapped call).",
        "",
        "## Sampler CPU (the sampler thread's own on-CPU time, /proc/self/task/<tid>/schedstat)",
        "",
        "| policy | interval | CSV sink | the process | its heap (one mallinfo2 call) | samples "
        "| CPU per sample | CPU, % of one core | floor |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in sampler:
        if s["policy"] == SCHEDULER:
            floor = FLOORS["cpu_scheduler_pct"]
        else:
            floor = FLOORS["cpu_1s_pct"] if s["interval"] == 1.0 else FLOORS["cpu_10ms_pct"]
        process = "a request every 3 ms" if s["serve"] else "idle"
        heap = {"none": "—", "lists": "200,000 lists", "fragmented": "fragmented"}[s["heap"]]
        if s["mallinfo_ms"] is not None:
            heap += f" ({s['mallinfo_ms']:.2f} ms)"
        lines.append(
            f"| `{s['policy']}` | {s['interval'] * 1000:g} ms | {'yes' if s['csv'] else 'no'} "
            f"| {process} | {heap} | {s['samples']} | {s['us_per_sample']:.0f} µs "
            f"| **{s['cpu_pct']:.3f} %** | < {floor:g} % |"
        )
    lines += [
        "",
        f"`{SCHEDULER}` is asked between samples (every 50 ms, every 10 ms while a collection "
        "may come in a quiet moment, 100-200 ms while nothing moves); its CPU per sample "
        "includes those ticks. On the fragmented heap each read of the allocator's free memory "
        "(mallinfo2, one call's CPU time in the heap column) holds malloc's lock that long: the "
        "agent waits 400 times a read's cost before the next, and reads no more after one over "
        "10 ms.",
    ]
    lines += [
        "",
        "## gc callback (timing every collection through `gc.callbacks`)",
        "",
        "A loop allocating 2,000,000 cyclic objects per arm and round, in 20 parts of 100,000 "
        "with the arms interleaved part by part (their order rotating); its CPU time per "
        "collection (the thread's own, so that time spent preempted by other processes does not "
        f"count), medians of {args.rounds} rounds. Added: the median of the per-round "
        "differences from the no-callback arm [min, max].",
        "",
        "| no callback | a no-op Python callback | the NeuroGC agent |",
        "|---|---|---|",
        f"| {cb['none']:.2f} µs "
        + " ".join(
            f"| {cb[arm]:.2f} µs (added **{cb_added[arm][0]:+.2f} µs** "
            f"[{cb_added[arm][1]:+.2f}, {cb_added[arm][2]:+.2f}])"
            for arm in ("noop", "agent")
        )
        + " |",
        "",
        "CPython's own cost of calling any callback (building the info dict per phase) is the "
        "no-op column; the agent's timing and bookkeeping add the difference between the last two.",
        "",
        "## Verdict",
        "",
        f"- per request: ASGI {asgi_med:.2f} µs, WSGI {wsgi_med:.2f} µs "
        f"({'meets' if max(asgi_med, wsgi_med) < FLOORS['request_us'] else 'MISSES'} the < 20 µs floor)",
        f"- sampler at 1 s: {cpu_1s:.3f} % of a core "
        f"({'meets' if cpu_1s < FLOORS['cpu_1s_pct'] else 'MISSES'} < 1 %); at 10 ms: {cpu_10ms:.3f} % "
        f"({'meets' if cpu_10ms < FLOORS['cpu_10ms_pct'] else 'MISSES'} < 5 %)",
        f"- the scheduler (`{SCHEDULER}`), idle or serving: at most {cpu_scheduler:.3f} % of a "
        f"core ({'meets' if cpu_scheduler < FLOORS['cpu_scheduler_pct'] else 'MISSES'} < 1 %)",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    ok = (
        max(asgi_med, wsgi_med) < FLOORS["request_us"]
        and cpu_1s < FLOORS["cpu_1s_pct"]
        and cpu_10ms < FLOORS["cpu_10ms_pct"]
        and cpu_scheduler < FLOORS["cpu_scheduler_pct"]
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
