"""torch_cnn: a PyTorch CNN on the CPU (seed 003), where the autograd graph is not Python's.

The GC story. A LeNet-style CNN (two 5x5 convolutions with max-pooling, three linear layers)
trained with SGD on synthetic 28x28 images, as seed 003's PyTorch CNN was. PyTorch's autograd
graph lives in C++ and is freed by reference counts, so a step leaves little for the cyclic
collector: the Python objects around the tensors (modules' hooks dicts, the optimizer's state,
the loop's bookkeeping). Seed 003 found no significant difference between its GC settings on this
model; the per-step CSV shows why (few, short collections inside steps) and what remains of them:
collections that land inside a step while a full collection scans the framework's own objects
(a few hundred thousand once ``torch`` is imported).

Runs only where ``torch`` is installed (it is not a NeuroGC dependency).
"""

from __future__ import annotations

from typing import Any

import neurogc

#: Sizes a run can change (``--set key=value``).
OPTIONS = {"batch": 32, "examples": 1024, "lr": 0.05, "threads": 1}

REQUIRES = ("torch",)


def _model(torch: Any) -> Any:
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120),
        nn.ReLU(),
        nn.Linear(120, 84),
        nn.ReLU(),
        nn.Linear(84, 10),
    )


def train(
    steps: int, policy: str | None = None, directory: Any = None, seed: int = 0, **options: Any
) -> dict:
    """Builds synthetic data and the CNN, then runs ``steps`` SGD steps under the step hook
    (``policy`` and ``directory`` as for ``neurogc.training``; the environment overrides them).
    Returns the last loss and the hook's summary."""
    try:
        import torch
    except ImportError:
        raise RuntimeError("the torch_cnn loop needs PyTorch: pip install torch") from None
    opts = {**OPTIONS, **options}
    torch.manual_seed(seed)
    torch.set_num_threads(int(opts["threads"]))
    n, batch = int(opts["examples"]), int(opts["batch"])
    # Ten classes, each a fixed random pattern plus noise: learnable, no download.
    patterns = torch.randn(10, 1, 28, 28)
    labels = torch.randint(0, 10, (n,))
    images = patterns[labels] + 0.5 * torch.randn(n, 1, 28, 28)
    model = _model(torch)
    optimizer = torch.optim.SGD(model.parameters(), lr=float(opts["lr"]), momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    losses: list = []
    generator = torch.Generator().manual_seed(seed)
    with neurogc.training(policy=policy, directory=directory) as gc_steps:
        for _ in range(steps):
            idx = torch.randint(0, n, (batch,), generator=generator)
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(images[idx]), labels[idx])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())  # a float: keeping the tensor would keep its graph
            gc_steps.step()
    return {"loss": round(losses[-1], 4) if losses else None, "gc": gc_steps.summary()}
