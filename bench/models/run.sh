#!/usr/bin/env bash
# Model benchmark: NeuroGC's trainer and in-agent inference against PyTorch, side by side.
# PyTorch is installed here only (into .venv-bench), never as a test dependency.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=.venv-bench
if ! "$VENV/bin/python" -c "import torch, numpy" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q torch numpy
fi
cargo build --release -q -p neurogc-cli
cargo build --release -q -p neurogc-train --example inference_latency
exec "$VENV/bin/python" bench/models/compare.py --torch-python "$VENV/bin/python" "$@"
