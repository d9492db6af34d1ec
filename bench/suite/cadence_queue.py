"""Where pauses are in the p99 whatever the cadence: how often should they come?

A single-server queue (one worker, as one process holding the GIL serves): Poisson arrivals,
lognormal service times (mean 6 ms, sigma 0.5), and after every ``w``-th request a collection
that blocks the server for ``a + b·w`` ms (``a``: what stays live in the collected part, ``b``:
garbage per request). For each (busy share, a, b), the p99 of the requests' latencies at
cadences from 5 to 5,120 requests, and the p99 at two rules for ``w``: every ``a / b``
(pauses of ``2a``) and as often as a CPU budget of 10 % allows (``a / (100 / rate - b)``, or
``a / b`` where the garbage alone takes more). Only the settings where no cadence keeps the
pauses under 0.5 % of the requests (the scheduler's rule for "in the p99 whatever the cadence")
are printed. A model, not a measurement: it shows which rule is near the best cadence, not what a
service's p99 will be.

    python3 bench/suite/cadence_queue.py > bench/suite/cadence-queue.txt
"""

from __future__ import annotations

import math
import random

SERVICE_MS = 6.0
SIGMA = 0.5
REQUESTS = 40_000
CADENCES = [round(5 * 2 ** (k / 2)) for k in range(21)]
TAIL_SHARE = 0.005
CPU = 0.10


def p99(w: int, a: float, b: float, rate: float, seed: int = 1) -> float:
    """The p99 latency (ms) with a pause of ``a + b·w`` after every ``w``-th request."""
    rnd = random.Random(seed)
    mu = math.log(SERVICE_MS) - SIGMA**2 / 2
    now = free = 0.0
    latencies = []
    for i in range(1, REQUESTS + 1):
        now += rnd.expovariate(rate / 1e3)
        done = max(now, free) + rnd.lognormvariate(mu, SIGMA)
        latencies.append(done - now)
        free = done + (a + b * w if i % w == 0 else 0.0)
    latencies.sort()
    return latencies[int(0.99 * len(latencies))]


def nearest(results: dict[int, float], w: float) -> float:
    return results[min(results, key=lambda c: abs(math.log(c / w)))]


def main() -> None:
    print(
        "busy   a ms  b ms/req | best w   p99 | every a/b: w   p99  × best | 10 % CPU: w   p99  × best"
    )
    worst = {"2a": 1.0, "cpu": 1.0}
    for busy in (0.4, 0.6, 0.7):
        rate = busy * 1e3 / SERVICE_MS
        queue = 1 / (1 - busy)
        for a in (2.0, 5.0, 13.0, 30.0):
            for b in (0.02, 0.05, 0.2):
                if TAIL_SHARE - rate * b * queue / 1e3 > 0:
                    continue
                results = {w: p99(w, a, b, rate) for w in CADENCES}
                best_w = min(results, key=results.__getitem__)
                best = results[best_w]
                cpu_room = 1e3 * CPU / rate - b
                w_cpu = a / cpu_room if cpu_room > 0 else a / b
                at_2a, at_cpu = nearest(results, a / b), nearest(results, w_cpu)
                worst["2a"] = max(worst["2a"], at_2a / best)
                worst["cpu"] = max(worst["cpu"], at_cpu / best)
                print(
                    f"{busy:4.1f} {a:6.1f} {b:9.2f} | {best_w:6d} {best:5.1f} |"
                    f" {a / b:11.0f} {at_2a:5.1f} {at_2a / best:5.2f} |"
                    f" {w_cpu:10.0f} {at_cpu:5.1f} {at_cpu / best:5.2f}"
                )
    print(
        f"\nfarthest from the best cadence: every a/b {worst['2a']:.2f}×, 10 % CPU {worst['cpu']:.2f}×"
    )


if __name__ == "__main__":
    main()
