"""numpy_loop: a NumPy training loop whose arrays make no GC work and whose bookkeeping does.

The GC story. A two-layer MLP (softmax output) trained with NumPy on a synthetic classification
set: the numeric work allocates arrays, which the cyclic collector does not track (an ndarray of
numbers is no container). What it does track is the Python around the math, as real training
scripts have it:

- every batch arrives as a list of per-example dicts (``{"x": ..., "y": ..., "meta": {...}}``,
  what a Python data pipeline yields; each example's meta refers back to its batch), collated
  into arrays: a few hundred containers of young cyclic garbage per step;
- every step's record (loss, accuracy, learning rate, and the callbacks to run on it, bound
  methods of the record itself) is a small reference cycle: young cyclic garbage once the next
  step's record replaces it;
- the metrics history keeps one dict per step for the whole run: a live heap that only grows,
  so every full collection scans a longer history than the last.

Under the default, young collections run inside steps every ``threshold0`` new containers (a few
steps' worth), and full collections come ever rarer but ever longer as the history grows.
At step boundaries a young collection frees the step's records whole; the history is the old
generation's growth, and ``learned`` sees that its full collections free little of it.
"""

from __future__ import annotations

import random
from typing import Any

import neurogc

try:
    import numpy as np
except ImportError:  # the loop says so when run; the registry lists it as unavailable
    np = None  # type: ignore[assignment]

#: Sizes a run can change (``--set key=value``).
OPTIONS = {"features": 64, "hidden": 128, "classes": 8, "batch": 128, "examples": 8192, "lr": 0.1}

REQUIRES = ("numpy",)


class _Record:
    """One step's record; its ``callbacks`` are its own bound methods: a reference cycle."""

    __slots__ = ("step", "loss", "accuracy", "lr", "callbacks")

    def __init__(self, step: int, loss: float, accuracy: float, lr: float) -> None:
        self.step, self.loss, self.accuracy, self.lr = step, loss, accuracy, lr
        self.callbacks = [self.log]

    def log(self) -> dict:
        return {"step": self.step, "loss": self.loss, "accuracy": self.accuracy, "lr": self.lr}


def _examples(rng: random.Random, x: Any, y: Any, idx: list) -> list:
    batch: list = []
    for i in idx:
        meta = {"index": i, "source": "synthetic", "weight": rng.random(), "batch": batch}
        batch.append({"x": x[i], "y": int(y[i]), "meta": meta})
    return batch


def train(
    steps: int, policy: str | None = None, directory: Any = None, seed: int = 0, **options: Any
) -> dict:
    """Builds the data set and the model, then runs ``steps`` steps under the step hook
    (``policy`` and ``directory`` as for ``neurogc.training``; the environment overrides them).
    Returns the last loss and accuracy, the history's length and the hook's summary."""
    if np is None:
        raise RuntimeError("the numpy_loop needs numpy: pip install numpy")
    opts = {**OPTIONS, **options}
    rng = random.Random(seed)
    gen = np.random.default_rng(seed)
    d, h, k = int(opts["features"]), int(opts["hidden"]), int(opts["classes"])
    n, batch, lr = int(opts["examples"]), int(opts["batch"]), float(opts["lr"])
    centers = gen.normal(0, 2, size=(k, d))
    y_all = gen.integers(0, k, size=n)
    x_all = centers[y_all] + gen.normal(0, 1, size=(n, d))
    w1 = gen.normal(0, 1 / np.sqrt(d), size=(d, h))
    b1 = np.zeros(h)
    w2 = gen.normal(0, 1 / np.sqrt(h), size=(h, k))
    b2 = np.zeros(k)
    history: list = []
    state: dict = {"history": history, "last": None}
    loss = accuracy = float("nan")
    with neurogc.training(policy=policy, directory=directory) as gc_steps:
        for step in range(1, steps + 1):
            examples = _examples(rng, x_all, y_all, rng.sample(range(n), batch))
            x = np.stack([e["x"] for e in examples])
            y = np.array([e["y"] for e in examples])
            hidden = np.maximum(x @ w1 + b1, 0.0)
            logits = hidden @ w2 + b2
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            loss = float(-np.log(p[np.arange(batch), y] + 1e-12).mean())
            accuracy = float((p.argmax(axis=1) == y).mean())
            grad = p
            grad[np.arange(batch), y] -= 1.0
            grad /= batch
            gw2, gb2 = hidden.T @ grad, grad.sum(axis=0)
            gh = (grad @ w2.T) * (hidden > 0)
            gw1, gb1 = x.T @ gh, gh.sum(axis=0)
            w1 -= lr * gw1
            b1 -= lr * gb1
            w2 -= lr * gw2
            b2 -= lr * gb2
            record = _Record(step, loss, accuracy, lr)
            state["last"] = record
            history.append(record.callbacks[0]())
            del examples, record
            gc_steps.step()
    return {
        "loss": round(loss, 4),
        "accuracy": round(accuracy, 3),
        "history": len(history),
        "gc": gc_steps.summary(),
    }
