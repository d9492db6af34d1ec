#!/usr/bin/env bash
# The suite's noise floor: the same policy against itself (A/A) in the suite's design (turns with
# idle servers stopped), on the seed workload, for the full design (5 rounds of 6 s turns) and the
# --quick one (2 rounds of 2.5 s). Each becomes a floor compiled into the report
# (crates/neurogc-report/floors/; listed in noise.rs BUILT_IN), which only runs of the same design
# use. The A/A reports are committed beside this script.
set -euo pipefail
cd "$(dirname "$0")/../.."
NEUROGC=${NEUROGC:-target/release/neurogc}
. bench/lib.sh
commit=$(commit_stamp)
for design in "5 6" "2 2.5"; do
  set -- $design
  rounds=$1 turn=$2
  name=aa-turns-${rounds}x${turn}s
  duration=$(awk -v r="$rounds" -v t="$turn" 'BEGIN {print r * t}')
  tmp=bench/suite/$name.tmp
  rm -rf "$tmp" && mkdir -p "$tmp"
  "$NEUROGC" bench --workload seed --policy default --policy default --mode turns \
    --slice "${turn}s" --duration "${duration}s" --warmup 6s --repeat 1 --rate auto \
    --name "$name" --runs-dir "$tmp" --no-dashboard --no-report
  run=$(ls -d "$tmp"/*-"$name")
  "$NEUROGC" report "$run" --write-noise-floor "crates/neurogc-report/floors/turns-${rounds}x${turn}s.json"
  mkdir -p "bench/suite/$name"
  {
    echo "<!-- written by bench/suite/aa.sh; do not edit -->"
    echo
    echo "- Command: \`bench/suite/aa.sh\` (floor: crates/neurogc-report/floors/turns-${rounds}x${turn}s.json)"
    echo "- Commit: $commit · $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    cat "$run/README.md"
  } >"bench/suite/$name/README.md"
  rm -rf "$tmp"
done
