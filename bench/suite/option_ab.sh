#!/usr/bin/env bash
# One scheduler option against the default, live, on every workload of the suite at the rate the
# committed scoreboard ran it (bench/suite/RESULTS.md): `neurogc suite` per workload with
# default, gc-off, neurogc and neurogc with the option, in turns (5 rounds of 6 s). About 20 min.
# The table goes to bench/suite/option-ab-<name>.md.
#   bench/suite/option_ab.sh s5 slack=5ms       # neurogc-s5 = neurogc,slack=5ms
#   TABLE=DIR bench/suite/option_ab.sh s5 slack=5ms   # only the table, from the runs in DIR
#   WORKLOADS=bursty REPEAT=15 bench/suite/option_ab.sh gaps bursts=gaps   # fewer, longer
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 2 ] || { echo "usage: bench/suite/option_ab.sh NAME OPTION (e.g. s5 slack=5ms)" >&2; exit 2; }
name=$1 option=$2
NEUROGC=${NEUROGC:-target/release/neurogc}
. bench/lib.sh
commit=$(commit_stamp "" crates python)
# Each workload's rate in the committed scoreboard: "every policy ran at R req/s" under "## W".
rates=$(awk '/^## / {w=$2} /every policy ran at/ {match($0, /ran at [0-9.]+/); print w ":" substr($0, RSTART+7, RLENGTH-7)}' bench/suite/RESULTS.md)
[ -n "$rates" ] || { echo "no rates in bench/suite/RESULTS.md" >&2; exit 2; }
runs=${TABLE:-bench/suite/run.tmp-ab}
if [ -z "${TABLE:-}" ]; then
  rm -rf "$runs"
  start=$(date +%s)
  for wr in $rates; do
    w=${wr%%:*} r=${wr##*:}
    [ -n "${WORKLOADS:-}" ] && [[ ",$WORKLOADS," != *",$w,"* ]] && continue
    "$NEUROGC" suite --workloads "$w" --rate "$r" --runs-dir "$runs" --name "$w" \
      --repeat "${REPEAT:-5}" --policies "default,gc-off,neurogc,neurogc-$name=neurogc,$option" \
      || echo "option_ab.sh: $w failed (its suite.json says why)" >&2
  done
  took="$(( ($(date +%s) - start) / 60 )) min"
  load="- Machine load after the runs: $(busiest)"
else
  took="the runs recorded in $runs"
  load="- Machine load: not measured here (TABLE=: the table only)"
fi
out=bench/suite/option-ab-$name.md
{
  echo "<!-- written by bench/suite/option_ab.sh; do not edit -->"
  echo
  env=""
  for v in WORKLOADS REPEAT; do [ -n "${!v:-}" ] && env+="$v=${!v} "; done
  echo "- Command: \`${env}bench/suite/option_ab.sh $name $option\` at $commit, $took"
  echo "$load"
  echo
  ${PYTHON:-.venv/bin/python} bench/suite/option_ab.py "$runs" "neurogc-$name" "neurogc,$option"
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "table: $out"
