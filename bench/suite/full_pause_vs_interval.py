"""How a full collection's pause grows with the time since the last one, on growing-cache.

The workload's session cache, built as the server builds it, driven in-process by its own request
mix (half logins, a fifth cart updates, the rest pages); CPython's full collections held back, as
the scheduler holds them, and one run by hand every N requests. Prints, per N, the pauses and the
objects each freed (the first of each N is dropped: it collects what the previous N left).

    .venv/bin/python bench/suite/full_pause_vs_interval.py [N ...]
"""

from __future__ import annotations

import argparse
import gc
import random
import time

from neurogc.workloads.growing_cache import SessionCache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("intervals", nargs="*", type=int, default=[100, 300, 1000, 2000, 4000])
    parser.add_argument("--repeat", type=int, default=5, help="collections timed per interval")
    args = parser.parse_args()

    cache = SessionCache(sessions=6_000, items=12, fragment=16_384, products=5_000, recommend=4_000)
    cache.build()
    gc.collect()
    t0, t1, _ = gc.get_threshold()
    gc.set_threshold(t0, t1, 2**31 - 1)
    rnd = random.Random(1)

    def request() -> None:
        r = rnd.random()
        if r < 0.5:
            cache.new_session()
        elif r < 0.7:
            cache.add_to_cart()
        else:
            cache.page()

    print("requests  pauses ms (each)                     objects freed (each)")
    for n in args.intervals:
        pauses, freed = [], []
        for i in range(args.repeat + 1):
            for _ in range(n):
                request()
            start = time.perf_counter()
            collected = gc.collect(2)
            if i:
                pauses.append(f"{(time.perf_counter() - start) * 1e3:.0f}")
                freed.append(str(collected))
        print(f"{n:>8}  {' '.join(pauses):<38} {' '.join(freed)}")


if __name__ == "__main__":
    main()
