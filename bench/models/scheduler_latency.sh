#!/usr/bin/env bash
# What the scheduler's quiet-window net costs per question, as the agent asks it, against the
# online survival estimate alone (interleaved): a scheduler model trained on the bundled
# large-heap run, at the trainer's default size and at the largest size a model may have.
# Writes bench/models/SCHEDULER-LATENCY.md.
#   bash bench/models/scheduler_latency.sh     (or: make bench-scheduler-latency)
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib.sh
NEUROGC=${NEUROGC:-target/release/neurogc}
cargo build --release -q -p neurogc-cli
cargo build --release -q -p neurogc-train --example scheduler_latency
data=crates/neurogc-sim/tests/fixtures/large-heap
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=bench/models/SCHEDULER-LATENCY.md
commit=$(commit_stamp "" crates)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "<!-- written by bench/models/scheduler_latency.sh; do not edit -->"
  echo
  echo "# The scheduler's quiet-window net: time per question"
  echo
  echo "- Command: \`bash bench/models/scheduler_latency.sh\` (the example \`scheduler_latency\`)"
  echo "- Commit: $commit · $(date -u '+%Y-%m-%d %H:%M UTC') · machine load average before: $load_before"
  echo "- Model: \`neurogc train --model scheduler --data $data --hidden H --layers L --epochs 2\`"
  echo "  (the time per question depends on the net's size, not on how well it is trained); each question: features from a"
  echo "  full ring of 1,024 arrivals, normalised, the LSTM over 16 steps, the survival estimate it"
  echo "  reads; against the survival estimate alone, 10,000 questions each, interleaved."
  echo
  for size in "16 1" "64 2"; do
    set -- $size
    "$NEUROGC" train --model scheduler --data "$data" --out "$tmp/m$1" --hidden "$1" --layers "$2" \
      --epochs 2 >/dev/null
    echo "## hidden $1, layers $2"
    echo
    echo '```'
    target/release/examples/scheduler_latency "$tmp/m$1"
    echo '```'
    echo
  done
} > "$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
