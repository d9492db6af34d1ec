#!/usr/bin/env bash
# Soak: does the memory guard keep its budget for 10 minutes when it is the only thing collecting?
# cycle-leak (documents with cycles and 64 KiB payloads that die old: only a full collection gives
# their memory back) under `guarded=periodic:3600,rss=256M` (automatic collection off; no timed
# collection inside the window; the guard collects when RSS passes 256 MiB), side by side with
# `default` and the unguarded `gc-off` bound, one load generator, 600 s measured.
# Output: bench/soak/RESULTS.md (RSS against the budget per policy), the run's report and its
# memory chart with the budget dashed (bench/soak/run/README.md, bench/soak/run/charts/memory.png).
# The raw samples stay local (bench/soak/.gitignore).
set -euo pipefail
cd "$(dirname "$0")/../.."
NEUROGC=${NEUROGC:-target/release/neurogc}
PYTHON=${PYTHON:-.venv/bin/python}
DURATION=${DURATION:-600s}
WARMUP=${WARMUP:-20s}
. bench/lib.sh
# RESUMMARIZE=1: rewrite RESULTS.md from the kept run (after a change to summarize.py).
if [ -z "${RESUMMARIZE:-}" ]; then
  commit=$(commit_stamp)
  others=$(busiest)
  rm -rf bench/soak/run.tmp && mkdir -p bench/soak/run.tmp
  "$NEUROGC" bench --workload cycle-leak --mode side-by-side --repeat 1 --rate 100 \
    --policy guarded=periodic:3600,rss=256M --policy default --policy gc-off \
    --warmup "$WARMUP" --duration "$DURATION" --name soak --runs-dir bench/soak/run.tmp --no-dashboard --no-report "$@"
  run=$(ls -d bench/soak/run.tmp/*-soak)
  rm -rf bench/soak/run && mv "$run" bench/soak/run && rm -rf bench/soak/run.tmp
  printf '%s\n' "- Command: \`bench/soak/run.sh\` · commit $commit · $(date -u '+%Y-%m-%d %H:%M UTC')" \
    "- Other work on the machine at the start: $others" >bench/soak/run/measured.md
fi
"$NEUROGC" report bench/soak/run
{
  echo "<!-- written by bench/soak/run.sh; do not edit -->"
  echo
  echo "# Soak: the memory guard's budget, cycle-leak, collector off but for the guard"
  echo
  cat bench/soak/run/measured.md
  echo
  "$PYTHON" bench/soak/summarize.py bench/soak/run
  echo
  echo "![RSS per policy, budget dashed](run/charts/memory.png)"
  echo
  echo "The run's full report: [run/README.md](run/README.md)."
} >bench/soak/RESULTS.tmp && mv bench/soak/RESULTS.tmp bench/soak/RESULTS.md
echo "Soak: bench/soak/RESULTS.md"
