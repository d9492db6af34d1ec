"""What threshold0 does to large-heap's requests: young and middle collections per request.

The workload's catalogue, built as the server builds it and frozen as the scheduler freezes it,
driven in-process by its own request mix (four searches to one item page, as bursty's and
large-heap's task files weigh them); full collections held back, as the scheduler holds them.
Prints, per threshold0, the collections of each generation over the requests, their mean pause
and the collection time per request, and the request's own time (its median and p99).

    .venv/bin/python bench/suite/young_threshold.py [THRESHOLD0 ...]
"""

from __future__ import annotations

import argparse
import gc
import time

from neurogc.workloads.large_heap import LargeHeap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("thresholds", nargs="*", type=int, default=[700, 2800, 11200, 50000])
    parser.add_argument("--requests", type=int, default=2000, help="requests per threshold0")
    args = parser.parse_args()

    state = LargeHeap()
    state.build()
    gc.collect()
    gc.freeze()
    started = [0.0]
    pause = {0: 0.0, 1: 0.0}
    count = {0: 0, 1: 0}

    def timed(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        elif info["generation"] in pause:
            pause[info["generation"]] += time.perf_counter() - started[0]
            count[info["generation"]] += 1

    gc.callbacks.append(timed)
    print(
        "threshold0  young: count  mean ms  ms/request   middle: count  mean ms  ms/request"
        "   request ms: median  p99"
    )
    for t0 in args.thresholds:
        gc.set_threshold(t0, 10, 2**31 - 1)
        for g in pause:
            pause[g], count[g] = 0.0, 0
        took = []
        for i in range(args.requests):
            begin = time.perf_counter()
            if i % 5:
                state.search()
            else:
                state.item()
            took.append(time.perf_counter() - begin)
        took.sort()
        n = len(took)
        row = [f"{t0:>10}"]
        for g, name in ((0, "young"), (1, "middle")):
            mean = pause[g] / max(count[g], 1) * 1e3
            row.append(
                f"{' ' * (len(name) + 2)}{count[g]:>6} {mean:>8.3f} {pause[g] / n * 1e3:>11.3f}"
            )
        row.append(f"{' ' * 21}{took[n // 2] * 1e3:>6.2f} {took[int(0.99 * n)] * 1e3:>5.2f}")
        print("".join(row))
        gc.collect()
    gc.callbacks.remove(timed)


if __name__ == "__main__":
    main()
