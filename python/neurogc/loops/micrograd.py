"""micrograd: a pure-Python autograd MLP, where every step builds a graph full of reference cycles.

The GC story. Each step runs a small MLP (2-16-16-1, ReLU) over a mini-batch of a two-moons data
set and backpropagates a max-margin loss through a scalar autograd graph: about 5,000 nodes for
the default batch of 8, each a ``Value`` whose backward closure refers back to it, so every node is
a reference cycle (~7 tracked containers per node: the value, its parents tuple, the closure, its
cells). Reference counting frees none of it; the whole graph is garbage the moment the step ends.

Under CPython's default the young generation fills many times per step (threshold0 700 or 2000
against ~35,000 new containers), so collections run *inside* the step, while the graph is still
alive: they scan it, free nothing of it, and promote it; it then dies in an older generation,
where only a later, bigger collection frees it. Collected at the step boundary instead, the graph
is all dead: one young collection frees it whole and promotes nothing. ``every:1,gen=1`` or
``learned`` do that; ``disable`` alone lets it pile up until the memory guard steps in (about
10 MB per step at the default batch).
"""

from __future__ import annotations

import random
from typing import Any

import neurogc

from ._autograd import MLP, moons, sgd

#: Sizes a run can change (``--set key=value``).
OPTIONS = {"batch": 8, "hidden": 16, "points": 200, "lr": 0.05}


def train(
    steps: int, policy: str | None = None, directory: Any = None, seed: int = 0, **options: Any
) -> dict:
    """Builds the data and the model, then runs ``steps`` steps under the step hook (``policy``
    and ``directory`` as for ``neurogc.training``; the environment overrides them). Returns the
    last loss, the accuracy on the data set and the hook's summary."""
    opts = {**OPTIONS, **options}
    rng = random.Random(seed)
    data = moons(int(opts["points"]), rng)
    hidden = int(opts["hidden"])
    model = MLP([2, hidden, hidden, 1], rng)
    params = model.parameters()
    batch_size, lr = int(opts["batch"]), float(opts["lr"])
    loss = float("nan")
    with neurogc.training(policy=policy, directory=directory) as gc_steps:
        for _ in range(steps):
            loss = _step(model, params, rng.sample(data, batch_size), lr)
            gc_steps.step()
    correct = sum((model(x)[0].data > 0) == (label > 0) for x, label in data)
    return {
        "loss": round(loss, 4),
        "accuracy": round(correct / len(data), 3),
        "gc": gc_steps.summary(),
    }


def _step(model: MLP, params: list, batch: list, lr: float) -> float:
    """One SGD step on a mini-batch; its graph is garbage when this returns."""
    loss = (1.0 + -batch[0][1] * model(batch[0][0])[0]).relu()
    for x, label in batch[1:]:
        loss = loss + (1.0 + -label * model(x)[0]).relu()
    loss = loss * (1.0 / len(batch))
    loss.backward()
    sgd(params, lr)
    return loss.data
