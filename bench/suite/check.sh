#!/usr/bin/env bash
# A targeted check of this build's `neurogc` against the committed scoreboard, in ~20 min: per
# workload, `default`, the scoreboard's best fixed policy of that workload and `neurogc`, in turns,
# at the rate the scoreboard ran it (no capacity search), 5 rounds. For a change made after the
# full suite ran (bench/suite/RESULTS.md): it does not replace it (one trial per policy, three
# policies, so its own A/A floor applies), it says whether the change moved what it aimed at.
#   bench/suite/check.sh                  # every workload: bench/suite/CHECK.md
#   WORKLOADS=large-heap,seed bench/suite/check.sh
#   ASSEMBLE=DIR bench/suite/check.sh     # write CHECK.md from the runs already in DIR
# More power where the scoreboard's 5 rounds left a verdict within the noise: REPEAT rounds, EXTRA
# policies after those three (the GC-off bound, A/A pairs), the table to OUT:
#   REPEAT=15 EXTRA=gc-off,default-aa=default,neurogc-aa=neurogc WORKLOADS=churn,bursty \
#     OUT=bench/suite/CHECK-15.md bench/suite/check.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
NEUROGC=${NEUROGC:-target/release/neurogc}
PYTHON=${PYTHON:-.venv/bin/python}
REPEAT=${REPEAT:-5}
EXTRA=${EXTRA:+,$EXTRA}
out=${OUT:-bench/suite/CHECK.md}
. bench/lib.sh
commit=$(commit_stamp "" crates python)
board=bench/suite/scoreboard.json
# name rate best-fixed, one workload a line, from the scoreboard.
plan=$("$PYTHON" - "$board" "${WORKLOADS:-}" <<'EOF'
import json, sys
board = json.load(open(sys.argv[1]))
wanted = [w for w in sys.argv[2].split(",") if w]
for w in board["workloads"]:
    if not wanted or w["name"] in wanted:
        print(w["name"], int(w["rate_rps"]), w["best_fixed"])
EOF
)
if [ -n "${ASSEMBLE:-}" ]; then
  runs=$ASSEMBLE
  took="(assembled from $runs)"
else
  runs=bench/suite/check.tmp
  rm -rf "$runs" && mkdir -p "$runs"
  started=$(date +%s)
  while read -r name rate best; do
    policies="default,neurogc$EXTRA"
    [ "$best" != default ] && policies="default,$best,neurogc$EXTRA"
    "$NEUROGC" suite --workloads "$name" --policies "$policies" --rate "$rate" --repeat "$REPEAT" \
      --runs-dir "$runs" >/dev/null || echo "check.sh: $name failed (its suite.json says why)" >&2
  done <<<"$plan"
  took="took $(( ($(date +%s) - started) / 60 )) min"
fi
{
  echo "<!-- written by bench/suite/check.sh; do not edit -->"
  echo
  env=""
  for v in REPEAT EXTRA WORKLOADS OUT; do [ -n "${!v:-}" ] && env+="$v=${!v#,} "; done
  echo "- Command: \`${env}bench/suite/check.sh\` → per workload \`neurogc suite --workloads W --policies default,BEST,neurogc$EXTRA --rate R --repeat $REPEAT\` (R and BEST from \`$board\`)"
  echo "- Commit: $commit · $(date -u '+%Y-%m-%d %H:%M UTC') · $took"
  echo
  while read -r name rate best; do
    # The suite directory holding this workload's run: its scoreboard.
    readme=$(dirname "$(ls -d "$runs"/*-suite/*-"$name" | tail -1)")/README.md
    echo "## $name ($rate req/s; best fixed in the scoreboard: $best)"
    echo
    # The p99 ratios (best fixed of this run), then the bar's table for neurogc.
    sed -n '/^| workload | best fixed/,/^$/p' "$readme"
    sed -n '/^### neurogc$/,/^neurogc meets/p' "$readme" | sed '1,2d'
    echo
  done <<<"$plan"
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "check: $out"
