"""many_nets: one step updates many small networks (seed 004), and the step that meets a full
collection can spend most of its time in it.

The setting of seed 004 (Flux: "200 networks, ~5,000 parameters each", every fourth iteration 99 %
GC time), in CPython. A step trains each of ``nets`` small pure-Python MLPs (4-8-1, autograd
graphs of reference cycles as in ``micrograd``) on a few samples of a replay buffer. Two things
make its collections expensive:

- the live heap is large: ``buffer`` samples (one list each) plus every network's parameters, and
  a full collection scans all of it (~100 ns per object here, 0.1-1 s per million in the wild);
- each network keeps its last loss, graph and all, until its next update (for logging: the
  "stores tensor + entire gradient graph" pattern of seed 002, bounded to one step). A collection
  run while a graph is kept promotes it; one step later it is garbage in the *old* generation,
  which only a full collection frees.

Under CPython's default the young collections inside the step promote the kept graphs, the old
generation grows by a step's worth of graph each step, and its 25 % rule fires a full collection
every few steps, inside the step that meets it. ``every:N,gen=1`` (torchtitan's recipe) frees the
young garbage at boundaries but never the kept graphs: its memory grows until the guard's full
collection. ``every:N,gen=2`` (Megatron's) frees everything, every N steps. ``learned`` counts the
promotions and times its full collections to stay within its share of step time.
"""

from __future__ import annotations

import random
from typing import Any

import neurogc

from ._autograd import MLP, Value, sgd

#: Sizes a run can change (``--set key=value``).
OPTIONS = {"nets": 32, "inputs": 4, "hidden": 8, "batch": 2, "buffer": 100_000, "lr": 0.05}


class _Net:
    __slots__ = ("model", "params", "last_loss")

    def __init__(self, n_in: int, hidden: int, rng: random.Random) -> None:
        self.model = MLP([n_in, hidden, 1], rng, act="tanh")
        self.params = self.model.parameters()
        self.last_loss: Value | None = None


def _target(x: list) -> float:
    return 1.0 if x[0] * x[1] + x[2] - x[3] > 0 else -1.0


def train(
    steps: int, policy: str | None = None, directory: Any = None, seed: int = 0, **options: Any
) -> dict:
    """Builds the buffer and the networks, then runs ``steps`` steps (each updates every network
    once) under the step hook (``policy`` and ``directory`` as for ``neurogc.training``; the
    environment overrides them). Returns the networks' mean last loss and the hook's summary."""
    opts = {**OPTIONS, **options}
    rng = random.Random(seed)
    n_in = int(opts["inputs"])
    buffer = [[rng.uniform(-1, 1) for _ in range(n_in)] for _ in range(int(opts["buffer"]))]
    nets = [_Net(n_in, int(opts["hidden"]), rng) for _ in range(int(opts["nets"]))]
    batch, lr = int(opts["batch"]), float(opts["lr"])
    with neurogc.training(policy=policy, directory=directory) as gc_steps:
        for _ in range(steps):
            for net in nets:
                net.last_loss = _update(net, rng.sample(buffer, batch), lr)
            gc_steps.step()
    losses = [net.last_loss.data for net in nets if net.last_loss is not None]
    return {
        "loss": round(sum(losses) / max(1, len(losses)), 4),
        "nets": len(nets),
        "gc": gc_steps.summary(),
    }


def _update(net: _Net, batch: list, lr: float) -> Value:
    """One SGD step of one network: squared error on ``batch``; returns the loss, graph and all."""
    loss = Value(0.0)
    for x in batch:
        err = net.model(x)[0] - _target(x)
        loss = loss + err * err
    loss = loss * (1.0 / len(batch))
    loss.backward()
    sgd(net.params, lr)
    return loss
