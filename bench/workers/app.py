"""The pre-fork benchmark's service: a WSGI app whose big read-only heap is built at import, as a
service's caches, tables and models are, so gunicorn --preload builds it once in the master and
its workers share its pages until something writes to them. Each request reads a few records and
leaves a little cyclic garbage (what keeps the collector running in the workers).

Not a workload of the suite: only bench/prefork/run.py serves it.
"""

import random

RECORDS = 200_000
CATALOG = [
    {"id": i, "name": f"item-{i}", "tags": [i % 7, i % 11], "price": i * 0.01}
    for i in range(RECORDS)
]


def app(environ, start_response):
    rng = random.Random()
    picked = [CATALOG[rng.randrange(RECORDS)] for _ in range(20)]
    nodes = [{"record": r} for r in picked]
    for a, b in zip(nodes, nodes[1:] + nodes[:1]):
        a["next"], b["prev"] = b, a  # a ring: garbage only a collection frees
    body = f"{sum(r['price'] for r in picked):.2f}\n".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
