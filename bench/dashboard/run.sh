#!/usr/bin/env bash
# Benchmark of `neurogc dashboard` under ingestion load (docs/dashboard.md), written to
# bench/dashboard/RESULTS.md.
#
# Runs the dashboard's load test (crates/neurogc-dashboard/web/tests/load.test.js) RUNS times at
# its full length: the release binary, headless Chromium on the page and a plain WebSocket client,
# 10 servers × 100 samples/s posted as single-sample POSTs for LOAD_SECONDS. Each run's figures
# (its load.json) go to a temporary folder; bench/dashboard/summarize.py turns them into the table.
# The test's own assertions hold for every run (nothing lost, every seq once), or nothing is written.
#
# Usage: bash bench/dashboard/run.sh   (RUNS=3 LOAD_SECONDS=30 by default)
# Needs: Debian's chromium (installed here if missing and we are root, or CHROMIUM_BIN), Node and
# npm (the page's packages are installed with `npm ci` if missing), cargo, Python 3 (.venv's if there).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
RUNS=${RUNS:-3}
LOAD_SECONDS=${LOAD_SECONDS:-30}
TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
OUT=${OUT:-$REPO/bench/dashboard/RESULTS.md}
PY=${PY:-$REPO/.venv/bin/python}
[ -x "$PY" ] || PY=python3  # summarize.py needs only the standard library
WEB=crates/neurogc-dashboard/web
WORK=$(mktemp -d /tmp/neurogc-dashboard-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# --- tools -----------------------------------------------------------------------------------
if [ -z "${CHROMIUM_BIN:-}" ] && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then apt-get install -y -q chromium >/dev/null; else echo "install chromium (apt-get install chromium)" >&2; exit 1; fi
fi
STAMP=$WEB/node_modules/.package-lock.json
if [ ! -f "$STAMP" ] || [ "$WEB/package.json" -nt "$STAMP" ] || [ "$WEB/package-lock.json" -nt "$STAMP" ]; then
  (cd "$WEB" && npm ci --no-audit --no-fund)
  touch "$STAMP"
fi
cargo build -q --release -p neurogc-cli
NEUROGC=$TARGET_DIR/release/neurogc

# What the results were produced from: the commit, "-dirty" if the tree had changes (listed).
. bench/lib.sh
COMMIT=$(commit_stamp "$WORK/dirty.txt")

# --- runs ------------------------------------------------------------------------------------
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
BUSY_BEFORE=$(busiest)
for i in $(seq "$RUNS"); do
  echo "run $i/$RUNS ($LOAD_SECONDS s of load)" >&2
  (cd "$WEB" && NEUROGC_BIN="$NEUROGC" LOAD_SECONDS="$LOAD_SECONDS" LOAD_JSON="$WORK/load-$i.json" \
    node --test --test-concurrency=1 tests/load.test.js) >"$WORK/run-$i.log" 2>&1 \
    || { cat "$WORK/run-$i.log" >&2; echo "run $i failed: nothing written" >&2; exit 1; }
  grep -E '^# (ingestion|  )' "$WORK/run-$i.log" >&2 || true
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
BUSY_AFTER=$(busiest)

"$PY" bench/dashboard/summarize.py "$WORK"/load-*.json \
  --command "bash bench/dashboard/run.sh  (RUNS=$RUNS LOAD_SECONDS=$LOAD_SECONDS)" \
  --commit "$COMMIT" --dirty "$WORK/dirty.txt" \
  --loadavg "before: $LOAD_BEFORE; after: $LOAD_AFTER" \
  --busiest "before: $BUSY_BEFORE; after: $BUSY_AFTER" \
  --versions "$(node --version | sed 's/^/Node /'); $("${CHROMIUM_BIN:-/usr/bin/chromium}" --version 2>/dev/null | head -1)" \
  >"$OUT"
cat "$OUT"
