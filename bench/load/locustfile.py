"""Locust side of bench/load/run.sh: the same request as wrk and neurogc load, no wait.

LOCUST_CLIENT=fast selects FastHttpUser (geventhttpclient); the default is HttpUser (requests),
which is what the seed's locustfile used. Pick the user class on the command line: `Bench` (no
wait, one request: the throughput test) or `SeedLoad` (the seed's tasks and waits).
"""

import os

from locust import FastHttpUser, HttpUser, between, constant, task

Base = FastHttpUser if os.environ.get("LOCUST_CLIENT") == "fast" else HttpUser


class Bench(Base):
    wait_time = constant(0)

    @task
    def health(self):
        self.client.get("/health")


class SeedLoad(Base):
    """The seed's locustfile: wait 0.1-0.5 s, tasks weighted 3/3/2/2/1 (LOCUST_SHAPE=seed)."""

    wait_time = between(0.1, 0.5)

    @task(3)
    def cpu_heavy(self):
        self.client.get("/cpu-heavy")

    @task(3)
    def memory_heavy(self):
        self.client.get("/memory-heavy")

    @task(2)
    def network_heavy(self):
        self.client.get("/network-heavy")

    @task(2)
    def io_heavy(self):
        self.client.get("/io-heavy")

    @task(1)
    def health(self):
        self.client.get("/health")
