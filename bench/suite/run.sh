#!/usr/bin/env bash
# The workload suite's scoreboard on this machine (make bench-suite): every bundled workload ×
# the default policies plus the learned scheduler, in turns on one pinned core, scored against each
# workload's best fixed policy and the GC-off bound (docs/suite.md).
# The raw runs stay local (bench/suite/run.tmp, gitignored); the scoreboard, its JSON and heat map
# are committed, with the command, the commit and the time it took.
#   QUICK=1 bench/suite/run.sh   # --quick, written to RESULTS-quick.md
set -euo pipefail
cd "$(dirname "$0")/../.."
NEUROGC=${NEUROGC:-target/release/neurogc}
# The suite's own default policies (with --quick, its quick ones) unless POLICIES names others.
suffix=""; extra=()
if [ -n "${QUICK:-}" ]; then suffix="-quick"; extra=(--quick); fi
if [ -n "${POLICIES:-}" ]; then extra+=(--policies "$POLICIES"); fi
commit=$(git rev-parse --short HEAD)$( [ -z "$(git status --porcelain -- crates python)" ] || echo "-dirty")
tmp=bench/suite/run.tmp$suffix
rm -rf "$tmp" && mkdir -p "$tmp"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date +%s)
"$NEUROGC" suite "${extra[@]}" --runs-dir "$tmp" "$@"
took=$(( $(date +%s) - started ))
run=$(ls -d "$tmp"/*-suite)
out=bench/suite/RESULTS$suffix.md
{
  echo "<!-- written by bench/suite/run.sh; do not edit -->"
  echo
  echo "- Command: \`bench/suite/run.sh${QUICK:+ (QUICK=1)}\` → \`neurogc suite ${extra[*]}\`"
  echo "- Commit: $commit · $(date -u '+%Y-%m-%d %H:%M UTC') · took $((took / 60)) min $((took % 60)) s"
  echo "- Machine load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  sed "s|(heatmap.png)|(heatmap$suffix.png)|" "$run/README.md"
} > "$out"
cp "$run/heatmap.png" "bench/suite/heatmap$suffix.png"
cp "$run/scoreboard.json" "bench/suite/scoreboard$suffix.json"
echo "scoreboard: $out (took $took s)"
