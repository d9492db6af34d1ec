#!/usr/bin/env bash
# The method's own noise: the same policy against itself (A/A), 5 repetitions, at 60 % of the
# sustainable rate, both servers up on one pinned core and the load switched between them every
# 2 s (--mode alternating), so both see the same minutes of this machine's drifting speed. The report of the run
# must show no significant difference and |Δp99| under 5 %; its measured spread becomes the noise
# floor every report of the same design prints (crates/neurogc-report/floors/, compiled in:
# list a new file in noise.rs BUILT_IN).
# The raw measurements stay local (bench/aa/.gitignore); the report and per-trial summaries are committed.
set -euo pipefail
cd "$(dirname "$0")/../.."
NEUROGC=${NEUROGC:-target/release/neurogc}
. bench/lib.sh
commit=$(commit_stamp)
rm -rf bench/aa/run.tmp && mkdir -p bench/aa/run.tmp
"$NEUROGC" bench --policy default --policy default --mode alternating --repeat 5 --rate auto \
  --warmup 10s --duration 60s --name aa --runs-dir bench/aa/run.tmp --no-dashboard --no-report "$@"
run=$(ls -d bench/aa/run.tmp/*-aa)
rm -rf bench/aa/run && mv "$run" bench/aa/run && rm -rf bench/aa/run.tmp
"$NEUROGC" report bench/aa/run --write-noise-floor crates/neurogc-report/floors/alternating-5x60s.json
{
  echo "<!-- written by bench/aa/run.sh; do not edit -->"
  echo
  echo "- Command: \`bench/aa/run.sh\` · commit $commit · $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  cat bench/aa/run/README.md
} >bench/aa/run/README.tmp && mv bench/aa/run/README.tmp bench/aa/run/README.md
echo "A/A report: bench/aa/run/README.md"
