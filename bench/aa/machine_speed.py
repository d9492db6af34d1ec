"""How steady is this machine's speed? One process, pinned, no other work of ours: the same full
collection of the same heap, timed every half second for a few minutes. On a dedicated machine
the column is flat; here it is not, and that sets what a sequential bench can resolve.

Usage: taskset -c 0 python bench/aa/machine_speed.py [SECONDS] > bench/aa/machine-speed.txt
       python bench/aa/machine_speed.py --once   # one figure: the median of 5 collections, ms
"""

import gc
import statistics
import subprocess
import sys
import time


class Node:
    def __init__(self) -> None:
        self.refs: list = []
        self.attrs: dict = {}


def collect_ms() -> float:
    """The median of 5 full collections of the heap built by `main`, ms."""
    pauses = []
    for _ in range(5):
        t = time.perf_counter()
        gc.collect()
        pauses.append((time.perf_counter() - t) * 1000)
    return statistics.median(pauses)


def main() -> None:
    heap = [Node() for _ in range(150_000)]
    for i, node in enumerate(heap):
        node.refs.append(heap[i - 1])
    if sys.argv[1:] == ["--once"]:
        print(f"{collect_ms():.1f} ms")
        return
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 300.0
    start = time.time()
    rows = []
    while time.time() - start < seconds:
        rows.append((time.time() - start, collect_ms()))
        time.sleep(0.5)
    commit = subprocess.run(
        ["git", "describe", "--always", "--dirty"], capture_output=True, text=True
    ).stdout.strip()
    print(f"# command: python bench/aa/machine_speed.py {seconds:g} (commit {commit or '?'},")
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")
    print("# gc.collect() of 150,000 linked objects, median of 5, per 10 s window")
    print("# seconds  ms")
    per_window: dict[int, list[float]] = {}
    for t, ms in rows:
        per_window.setdefault(int(t // 10) * 10, []).append(ms)
    medians = [statistics.median(v) for v in per_window.values()]
    for t, v in per_window.items():
        print(f"{t:9d}  {statistics.median(v):5.1f}")
    print(f"# slowest window / fastest window: {max(medians) / min(medians):.2f}")


if __name__ == "__main__":
    main()
