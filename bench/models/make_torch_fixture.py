"""Writes the import-torch fixture: a state_dict saved by the seed's own LSTMNetwork (small hidden
size, to keep the file small) plus input windows and PyTorch's outputs for them. The Rust test
imports the .pth and must reproduce these outputs to 1e-5, with no torch at test time.

Usage (needs torch; `bench/models/run.sh` sets it up):
    python bench/models/make_torch_fixture.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from seed_models import LSTMNetwork, load_rows, windows

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "seed-neurogc" / "training_data.csv"
OUT = REPO / "crates" / "neurogc-train" / "tests" / "fixtures"


def main() -> None:
    torch.manual_seed(7)
    model = LSTMNetwork(hidden_size=8).eval()
    rows = load_rows(str(DATA))
    mean = rows.mean(axis=0)
    std = rows.std(axis=0, ddof=1)
    xs, _ = windows(rows, mean, std, 10)
    picks = xs[::7][:6]
    with torch.no_grad():
        outputs = model(torch.from_numpy(np.ascontiguousarray(picks))).squeeze(-1).tolist()
    OUT.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), OUT / "seed_lstm_h8.pth")
    torch.save(
        {"epoch": 3, "model_state_dict": model.state_dict()}, OUT / "seed_lstm_h8_checkpoint.pth"
    )
    (OUT / "seed_lstm_h8.json").write_text(
        json.dumps(
            {
                "torch_version": torch.__version__,
                "data": "training_data.csv (seed)",
                "mean": mean.tolist(),
                "std": std.tolist(),
                "windows": picks.tolist(),
                "torch_outputs": outputs,
            },
            indent=1,
        )
    )
    print(f"wrote {OUT}/seed_lstm_h8.pth and .json; outputs {outputs}")


if __name__ == "__main__":
    main()
