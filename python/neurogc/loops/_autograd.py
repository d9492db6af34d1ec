"""A scalar reverse-mode autograd engine in pure Python, in the style of Karpathy's micrograd
(written here from the idea, not copied): every operation makes a ``Value`` whose ``_backward``
closure refers to the output ``Value`` itself, so every node of every graph is a reference cycle
that only the cyclic collector frees. That is the point of using it in the bundled loops.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence


def _noop() -> None:
    pass


class Value:
    """A scalar with a gradient. Tracked by the collector (it has slots that hold objects)."""

    __slots__ = ("data", "grad", "_backward", "_prev")

    def __init__(self, data: float, prev: tuple = ()) -> None:
        self.data = data
        self.grad = 0.0
        self._backward = _noop
        self._prev = prev

    def __add__(self, other: object) -> Value:
        other = other if isinstance(other, Value) else Value(float(other))  # type: ignore[arg-type]
        out = Value(self.data + other.data, (self, other))

        def backward() -> None:
            self.grad += out.grad
            other.grad += out.grad

        out._backward = backward
        return out

    def __mul__(self, other: object) -> Value:
        other = other if isinstance(other, Value) else Value(float(other))  # type: ignore[arg-type]
        out = Value(self.data * other.data, (self, other))

        def backward() -> None:
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = backward
        return out

    def relu(self) -> Value:
        out = Value(self.data if self.data > 0 else 0.0, (self,))

        def backward() -> None:
            if out.data > 0:
                self.grad += out.grad

        out._backward = backward
        return out

    def tanh(self) -> Value:
        t = math.tanh(self.data)
        out = Value(t, (self,))

        def backward() -> None:
            self.grad += (1.0 - t * t) * out.grad

        out._backward = backward
        return out

    def __neg__(self) -> Value:
        return self * -1.0

    def __sub__(self, other: object) -> Value:
        return self + (-other if isinstance(other, Value) else -float(other))  # type: ignore[arg-type]

    __radd__ = __add__
    __rmul__ = __mul__

    def backward(self) -> None:
        """Gradients of this value with respect to every node of its graph."""
        order: list[Value] = []
        seen = set()
        stack = [(self, False)]
        while stack:  # iterative topological sort: deep graphs must not hit the recursion limit
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if node in seen:
                continue
            seen.add(node)
            stack.append((node, True))
            for child in node._prev:
                if child not in seen:
                    stack.append((child, False))
        self.grad = 1.0
        for node in reversed(order):
            node._backward()


class Neuron:
    def __init__(self, n_in: int, rng: random.Random, act: str) -> None:
        scale = 1.0 / math.sqrt(n_in)
        self.w = [Value(rng.uniform(-scale, scale)) for _ in range(n_in)]
        self.b = Value(0.0)
        self.act = act

    def __call__(self, x: Sequence) -> Value:
        total = self.b
        for w, xi in zip(self.w, x):
            total = total + w * xi
        if self.act == "relu":
            return total.relu()
        if self.act == "tanh":
            return total.tanh()
        return total

    def parameters(self) -> list[Value]:
        return [*self.w, self.b]


class MLP:
    """Fully connected layers; hidden layers use ``act``, the last is linear."""

    def __init__(self, sizes: Sequence[int], rng: random.Random, act: str = "relu") -> None:
        self.layers = [
            [Neuron(a, rng, act if i < len(sizes) - 2 else "linear") for _ in range(b)]
            for i, (a, b) in enumerate(zip(sizes, sizes[1:]))
        ]

    def __call__(self, x: Sequence) -> list:
        for layer in self.layers:
            x = [neuron(x) for neuron in layer]
        return x

    def parameters(self) -> list[Value]:
        return [p for layer in self.layers for n in layer for p in n.parameters()]


def sgd(params: Iterable[Value], lr: float) -> None:
    for p in params:
        p.data -= lr * p.grad
        p.grad = 0.0


def moons(n: int, rng: random.Random, noise: float = 0.1) -> list:
    """Two interleaving half circles (as scikit-learn's make_moons): ``[(x0, x1), label ±1]``."""
    points = []
    for i in range(n):
        t = math.pi * rng.random()
        if i % 2 == 0:
            x, y, label = math.cos(t), math.sin(t), 1.0
        else:
            x, y, label = 1.0 - math.cos(t), 0.5 - math.sin(t), -1.0
        points.append(([x + rng.gauss(0, noise), y + rng.gauss(0, noise)], label))
    return points
