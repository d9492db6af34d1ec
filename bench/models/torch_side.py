"""The PyTorch side of the model benchmark (run inside the torch venv by compare.py).

Trains the seed's models on the seed's data with the seed's hyper-parameters and times each
epoch; then times single-window inference the way the seed's NeuroGC called it each interval
(`model.eval()`, `torch.no_grad()`, one window). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np
import torch
from seed_models import LSTMNetwork, load_rows, windows
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, d: int, window: int):
        super().__init__()
        pe = torch.zeros(window, d)
        for t in range(window):
            for i in range(0, d, 2):
                angle = t / (10000 ** (i / d))
                pe[t, i] = np.sin(angle)
                if i + 1 < d:
                    pe[t, i + 1] = np.cos(angle)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe


class TransformerNet(nn.Module):
    """NeuroGC's transformer definition (d_model 64, 4 heads, 2 layers, seq 10), in PyTorch."""

    def __init__(self, d=64, heads=4, layers=2, ff=128, dropout=0.2, window=10):
        super().__init__()
        self.input_proj = nn.Linear(10, d)
        self.pos = PositionalEncoding(d, window)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.fc = nn.Linear(d, 1)

    def forward(self, x):
        h = self.encoder(self.pos(self.input_proj(x)))
        return torch.sigmoid(self.fc(h[:, -1, :]))


class FeedforwardNet(nn.Module):
    """64-32-16-8 over a 20-sample lookback."""

    def __init__(self, window=20, hidden=(64, 32, 16, 8), dropout=0.2):
        super().__init__()
        sizes = [window * 10, *hidden, 1]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        h = x.flatten(1)
        for layer in self.layers[:-1]:
            h = self.dropout(torch.relu(layer(h)))
        return torch.sigmoid(self.layers[-1](h))


MODELS = {
    "lstm": (LSTMNetwork, 10),
    "transformer": (TransformerNet, 10),
    "feedforward": (FeedforwardNet, 20),
}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--data", action="append", required=True)
    p.add_argument("--model", choices=MODELS, required=True)
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--decisions", type=int, default=2000)
    args = p.parse_args()
    torch.manual_seed(42)
    cls, seq = MODELS[args.model]
    rows = [load_rows(d) for d in args.data]
    allrows = np.concatenate(rows)
    mean, std = allrows.mean(axis=0), allrows.std(axis=0, ddof=1)
    xs, ys = zip(*(windows(r, mean, std, seq) for r in rows))
    x = torch.from_numpy(np.concatenate(xs))
    y = torch.from_numpy(np.concatenate(ys)).unsqueeze(1)
    model = cls() if args.model != "lstm" else LSTMNetwork()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()
    epoch_s = []
    for _ in range(args.epochs):
        model.train()
        t0 = time.perf_counter()
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 32):
            idx = perm[i : i + 32]
            opt.zero_grad()
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
        epoch_s.append(time.perf_counter() - t0)
    model.eval()
    one = x[:1].clone()
    lat = []
    with torch.no_grad():
        for i in range(args.decisions):
            one[0, :-1] = one[0, 1:].clone()
            one[0, -1] = x[i % len(x), -1]
            t0 = time.perf_counter()
            model(one).item()
            lat.append((time.perf_counter() - t0) * 1e6)
    lat.sort()
    print(json.dumps({
        "model": args.model,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "epoch_ms_median": statistics.median(epoch_s) * 1e3,
        "inference_us_p50": lat[len(lat) // 2],
        "inference_us_p99": lat[int(len(lat) * 0.99)],
        "final_loss": float(loss.detach()),
    }))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
