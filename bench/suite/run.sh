#!/usr/bin/env bash
# The workload suite's scoreboard on this machine (make bench-suite): every bundled workload ×
# the default policies plus the learned scheduler, in turns on one pinned core, scored against each
# workload's best fixed policy and the GC-off bound (docs/suite.md).
# The raw runs stay local (bench/suite/run.tmp, gitignored); the scoreboard, its JSON and heat map
# are committed, with the command, the commit, the time it took and the machine's speed, and
# beside them how well the scheduler predicted its own pauses (CALIBRATION.md).
#   QUICK=1 bench/suite/run.sh   # --quick, written to RESULTS-quick.md
#   LONG=1 bench/suite/run.sh    # the workloads whose heap turns over (growing-cache, cycle-leak)
#                                # and large-heap in 3 turns of 60 s, 3 minutes a policy: what
#                                # happens after the first stale re-freeze, and to the garbage a
#                                # recipe that never collects the old generations piles up, which
#                                # 5 × 6 s may not reach (~65 min); written to RESULTS-long.md
#   RESCORE=DIR bench/suite/run.sh  # score the recorded suite DIR again with this build's report
#                                   # (after a change to the scoring): its measurement lines stay
#   RESIMULATE=DIR bench/suite/run.sh  # replay the recorded suite DIR again with this build's
#                                      # simulator: SIMULATION.md only
set -euo pipefail
cd "$(dirname "$0")/../.."
NEUROGC=${NEUROGC:-target/release/neurogc}
# The suite's own default policies (with --quick, its quick ones) unless POLICIES names others.
suffix=""; extra=()
if [ -n "${QUICK:-}" ]; then suffix="-quick"; extra=(--quick); fi
if [ -n "${LONG:-}" ]; then
  suffix="-long"
  extra=(--name suite-long --workloads growing-cache,cycle-leak,large-heap --repeat 3 --turn 60s
    --policies "${POLICIES:-default,freeze:3,periodic:5,threshold:50000,500,1000,gc-off,neurogc}")
fi
if [ -n "${POLICIES:-}" ] && [ -z "${LONG:-}" ]; then extra+=(--policies "$POLICIES"); fi
. bench/lib.sh
# What the scores depend on: the code, not the outputs this script rewrites.
commit=$(commit_stamp "" crates python)

# The trace simulator against the live runs of the suite in $run: each workload's traffic
# replayed, into SIMULATION.md ($1: what was measured at, and by whom).
simulate_suite() {
  for d in "$run"/*/; do
    [ -f "$d/run.json" ] || continue
    # The explore runs (the models' data) are not benches of the policies.
    case "$d" in *-explore/) continue ;; esac
    "$NEUROGC" simulate "$d" >/dev/null || echo "simulate: $d could not be replayed" >&2
  done
  {
    echo "<!-- written by bench/suite/run.sh; do not edit -->"
    echo
    echo "- Command: \`neurogc simulate\` on each workload run of the suite above ($1)"
    echo
    ${PYTHON:-.venv/bin/python} bench/suite/simulation.py "$run"
  } > bench/suite/SIMULATION.md
}

if [ -n "${RESIMULATE:-}" ]; then
  run=$RESIMULATE
  # The runs were measured at the commit RESULTS.md names; the replay is this build's.
  measured=$(grep -oE '^- Commit: [0-9a-f]+(-dirty)?' bench/suite/RESULTS.md | cut -d' ' -f3)
  simulate_suite "runs at ${measured:-?}, replayed at $commit: \`RESIMULATE=$run bench/suite/run.sh\`"
  echo "simulation: bench/suite/SIMULATION.md"
  exit 0
fi
if [ -n "${RESCORE:-}" ]; then
  run=$RESCORE
  # The recorded suite says whether it was a quick one; its results file is the one to rewrite.
  suffix=""
  if grep -q '"quick": true' "$run/suite.json"; then suffix="-quick"; fi
  if grep -q '"name": "suite-long"' "$run/suite.json"; then suffix="-long"; fi
  out=bench/suite/RESULTS$suffix.md
  [ -f "$out" ] || { echo "RESCORE: no $out to take the measurement lines from" >&2; exit 2; }
  "$NEUROGC" suite --rescore "$run"
  # What was measured, and when, stays as the measuring run wrote it.
  measured=$(grep -E '^- (Command|Commit|Machine (load|speed))' "$out")
  {
    echo "<!-- written by bench/suite/run.sh; do not edit -->"
    echo
    echo "$measured"
    echo "- Rescored: \`RESCORE=$run bench/suite/run.sh\` → \`neurogc suite --rescore\` at $commit · $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    sed "s|(heatmap.png)|(heatmap$suffix.png)|" "$run/README.md"
  } > "$out.tmp"
  mv "$out.tmp" "$out"
else
  out=bench/suite/RESULTS$suffix.md
  tmp=bench/suite/run.tmp$suffix
  rm -rf "$tmp" && mkdir -p "$tmp"
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  speed_before=$(machine_speed) || speed_before="? (bench/aa/machine_speed.py failed)"
  started=$(date +%s)
  # A workload that failed leaves the others' scores: they are written all the same, and the
  # suite's status (1: a workload failed) is this script's.
  status=0
  "$NEUROGC" suite "${extra[@]}" --runs-dir "$tmp" "$@" || status=$?
  [ "$status" -eq 130 ] && exit 130
  took=$(( $(date +%s) - started ))
  run=$(ls -d "$tmp"/*-suite*/)
  run=${run%/}
  {
    echo "<!-- written by bench/suite/run.sh; do not edit -->"
    echo
    echo "- Command: \`bench/suite/run.sh${QUICK:+ (QUICK=1)}${LONG:+ (LONG=1)}\` → \`neurogc suite ${extra[*]}\`"
    echo "- Commit: $commit · $(date -u '+%Y-%m-%d %H:%M UTC') · took $((took / 60)) min $((took % 60)) s"
    echo "- Machine load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- Machine speed: a full collection of 150,000 linked objects took $speed_before before, $(machine_speed) after (\`bench/aa/machine_speed.py --once\`)"
    echo
    sed "s|(heatmap.png)|(heatmap$suffix.png)|" "$run/README.md"
  } > "$out"
  # How well the scheduler predicted its own pauses, per workload.
  {
    echo "<!-- written by bench/suite/run.sh (bench/suite/pause_calibration.py); do not edit -->"
    echo
    echo "# The scheduler's predicted pauses against the measured ones ($commit)"
    echo
    ${PYTHON:-.venv/bin/python} bench/suite/pause_calibration.py "$run" ||
      echo "(bench/suite/pause_calibration.py failed on $run)"
  } > "bench/suite/CALIBRATION$suffix.md"
fi
if [ -z "${RESCORE:-}" ] && [ -z "${QUICK:-}" ] && [ -z "${LONG:-}" ]; then
  simulate_suite "commit $commit"
fi
cp "$run/heatmap.png" "bench/suite/heatmap$suffix.png"
cp "$run/scoreboard.json" "bench/suite/scoreboard$suffix.json"
echo "scoreboard: $out"
exit "${status:-0}"
