"""The seed's PyTorch models, as its article and repository define them (see MISSION.md), used
only by the benchmark and the fixture generator: NeuroGC itself never imports torch."""

from __future__ import annotations

import csv

import numpy as np
import torch
from torch import nn

FEATURES = ["cpu", "mem", "disk_read", "disk_write", "net_sent", "net_recv", "rps", "p95", "p99",
            "gc_triggered"]  # fmt: skip


class LSTMNetwork(nn.Module):
    """The seed's model, line for line from its article."""

    def __init__(self, input_size: int = 10, hidden_size: int = 64, num_layers: int = 2,
                 dropout: float = 0.2):  # fmt: skip
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(
            input_size=input_size,
            hidden_size=hidden_size,
            num_layers=num_layers,
            batch_first=True,
            dropout=dropout if num_layers > 1 else 0,
        )
        self.fc = nn.Linear(hidden_size, 1)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lstm_out, _ = self.lstm(x)
        last_output = lstm_out[:, -1, :]
        return self.sigmoid(self.fc(last_output))


def load_rows(path: str) -> np.ndarray:
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            rows.append([
                (1.0 if r[c] in ("True", "true", "1") else 0.0) if c == "gc_triggered" else float(r[c])
                for c in FEATURES
            ])  # fmt: skip
    return np.asarray(rows, dtype=np.float32)


def seed_targets(rows: np.ndarray) -> np.ndarray:
    cpu, mem, gc = rows[:, 0], rows[:, 1], rows[:, 9]
    return np.clip(0.4 * mem / 100 + 0.3 * cpu / 100 + 0.3 * (1 - 0.5 * gc), 0, 1).astype(
        np.float32
    )


def windows(rows: np.ndarray, mean: np.ndarray, std: np.ndarray, seq: int):
    z = np.where(std > 0, (rows - mean) / np.where(std > 0, std, 1), 0).astype(np.float32)
    y = seed_targets(rows)
    xs = np.stack([z[i : i + seq] for i in range(len(rows) - seq + 1)])
    ys = np.asarray([y[i + seq - 1] for i in range(len(rows) - seq + 1)], dtype=np.float32)
    return xs, ys
