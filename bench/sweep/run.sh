#!/usr/bin/env bash
# Issue 15's bar, measured: `neurogc sweep` on every bundled training loop (every step policy
# configuration, rounds interleaved, the order rotated), then bench/sweep/RESULTS.md with, per
# loop, each configuration's medians and the learned policy against the bar (step p99 <= 1.05 x
# the best fixed configuration's, the best within the memory bound as the suite picks it; mean
# <= default's, peak RSS <= 1.10 x default's). `--aa` runs default a second time each round under
# its own name: its ratios to default are the day's noise floor, shown under each loop's bars.
# torch_cnn needs PyTorch, which `make setup` does not install: it goes into its own virtualenv
# (.venv-torch) here; where it cannot be installed, RESULTS.md says so.
# Each loop's sweep report stays beside RESULTS.md (bench/sweep/<loop>/README.md, step-time.png,
# summary.json, sweep.json, and RUN.md: the command, commit and time it ran at); the per-run step
# records stay local (bench/sweep/.gitignore). `LOOPS="many_nets:300"` sweeps some loops again:
# RESULTS.md then shows each loop's own commit.
set -euo pipefail
cd "$(dirname "$0")/../.."
NEUROGC=${NEUROGC:-target/release/neurogc}
PYTHON=${PYTHON:-.venv/bin/python}
REPEATS=${REPEATS:-5}
TORCH_VENV=${TORCH_VENV:-.venv-torch}
. bench/lib.sh
# Steps per run: each run takes 5-15 s on this machine (sizes are the loops' defaults). Where a
# step is short (a few ms), enough steps that a run's p99 rests on 20 steps beyond it: at 300
# steps torch_cnn's runs took 4 s, mostly importing torch, and each p99 was its 3rd-slowest step
# (the configurations' 95 % intervals overlapped by 3x their differences). At 2000 steps (20 beyond
# the p99) torch_cnn's A/A pair still came out 0.89x apart on p99, more than the bar's 5 %, with
# collections 0.0 % of the time in every configuration that could pass it: 6000 steps.
# A third field sets a loop's rounds (REPEATS otherwise): torch_cnn's collector has next to
# nothing to do, so its configurations differ by the hook's few microseconds a step and its mean
# bar is decided inside the machine's noise; 10 rounds (at 5, its round-by-round mean ratio's
# interval was 0.87-1.29x). numpy_loop's collections take ~5 % of its ~0.9 ms steps and the
# rest of a step moves +-8 % from one run to the next (at 5 rounds the A/A pair's means came out
# 1.021x apart and learned's round-by-round mean ratio's interval was 0.95-1.06x, against a GC
# time 20 us a step lower in every round): 20 rounds, ~8 min.
LOOPS=${LOOPS:-"micrograd:600 many_nets:300 numpy_loop:3000:20 torch_cnn:6000:10"}

torch_python() {
  if ! "$TORCH_VENV/bin/python" -c "import torch, numpy" 2>/dev/null; then
    "$PYTHON" -m venv "$TORCH_VENV" && "$TORCH_VENV/bin/pip" install -q numpy torch || return 1
  fi
  "$TORCH_VENV/bin/pip" install -q --force-reinstall --no-deps target/wheels/neurogc-*.whl || return 1
  echo "$TORCH_VENV/bin/python"
}

commit=$(commit_stamp)
others=$(busiest)
notes=bench/sweep/notes.tmp
: >"$notes"
for spec in $LOOPS; do
  IFS=: read -r loop steps rounds <<<"$spec"
  rounds=${rounds:-$REPEATS}
  py=$PYTHON
  if [ "$loop" = torch_cnn ]; then
    if ! py=$(torch_python); then
      echo "- torch_cnn: not run: PyTorch could not be installed into $TORCH_VENV" >>"$notes"
      continue
    fi
  fi
  rm -rf "bench/sweep/$loop.tmp"
  "$NEUROGC" sweep --aa --repeats "$rounds" --out "bench/sweep/$loop.tmp" -- \
    "$py" -m neurogc.loops "$loop" --steps "$steps"
  rm -rf "bench/sweep/$loop" && mv "bench/sweep/$loop.tmp" "bench/sweep/$loop"
  echo "- $loop: \`$py -m neurogc.loops $loop --steps $steps\`, $rounds rounds, at $commit," \
    "$(date -u '+%Y-%m-%d %H:%M UTC'); other work on the machine at the start: $others" \
    >"bench/sweep/$loop/RUN.md"
done
{
  echo "<!-- written by bench/sweep/run.sh; do not edit -->"
  echo
  echo "# Training loops: the step policies swept, and the learned one against the bar"
  echo
  echo "- Command: \`bench/sweep/run.sh\` (\`make bench-sweep\`). Each loop as last swept:"
  cat bench/sweep/*/RUN.md
  cat "$notes"
  echo
  "$PYTHON" bench/sweep/summarize.py bench/sweep
} >bench/sweep/RESULTS.tmp && mv bench/sweep/RESULTS.tmp bench/sweep/RESULTS.md
rm -f "$notes"
echo "Sweeps: bench/sweep/RESULTS.md"
