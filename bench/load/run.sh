#!/usr/bin/env bash
# Benchmark of `neurogc load` against wrk and Locust (issue 3), written to bench/load/RESULTS.md.
#
# One minimal local HTTP server (crates/neurogc-load/examples/bench_server.rs, one thread) pinned
# to CPU 0; every load generator pinned to CPU 1, one after the other, interleaved A B C D A B C D
# over REPS repetitions. Throughput: 64 keep-alive connections, no think time, DUR seconds each;
# the figure of merit is requests per CPU-second of the generator (user + sys, from bash's `time`,
# start-up included for every tool). Then the generator's own CPU at the seed's load (100 users,
# spawn 10/s, wait 0.1-0.5 s, SEED_DUR seconds), for neurogc load and for Locust, and the CPU of
# neurogc load's open loop at OPEN_RATE requests/s.
#
# Usage: bash bench/load/run.sh   (REPS=3 DUR=10 SEED_DUR=30 CONNS=64 OPEN_RATE=50000 by default)
# Needs: wrk (Debian package; installed here if missing and we are root), Locust (PyPI; installed
# into $VENV, default .venv-bench, if missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
REPS=${REPS:-3}
DUR=${DUR:-10}
SEED_DUR=${SEED_DUR:-30}
CONNS=${CONNS:-64}
OPEN_RATE=${OPEN_RATE:-50000}
PORT=${PORT:-18080}
VENV=${VENV:-$REPO/.venv-bench}
TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
OUT=${OUT:-$REPO/bench/load/RESULTS.md}
WORK=$(mktemp -d /tmp/neurogc-load-bench.XXXXXX)
URL=http://127.0.0.1:$PORT
[ "$(nproc)" -ge 2 ] || { echo "needs 2 CPUs (server on 0, generator on 1)" >&2; exit 1; }

# --- tools -----------------------------------------------------------------------------------
if ! command -v wrk >/dev/null; then
  if [ "$(id -u)" = 0 ]; then apt-get install -y -q wrk >/dev/null; else echo "install wrk (apt-get install wrk)" >&2; exit 1; fi
fi
if [ ! -x "$VENV/bin/locust" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q locust
fi
cargo build -q --release -p neurogc-cli
cargo build -q --release -p neurogc-load --example bench_server
NEUROGC=$TARGET_DIR/release/neurogc
SERVER=$TARGET_DIR/release/examples/bench_server
LOCUST="$VENV/bin/locust -f $REPO/bench/load/locustfile.py --headless --only-summary --loglevel WARNING -H $URL"

# --- server ----------------------------------------------------------------------------------
taskset -c 0 "$SERVER" "127.0.0.1:$PORT" 2>"$WORK/server.log" &
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done

server_ticks() { awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"; }
TICK=$(getconf CLK_TCK)

# measure NAME KIND COMMAND...: runs COMMAND on CPU 1 and appends
# "name kind rep requests wall_s cpu_s server_cpu_s" to $WORK/runs.tsv. The command's own
# output goes to $WORK/NAME.out; the request count is parsed from it by count_NAME.
measure() {
  local name=$1 kind=$2; shift 2
  local t0 s0 t1 s1 times
  s0=$(server_ticks)
  t0=$(date +%s.%N)
  times=$( { TIMEFORMAT='%U %S'; time taskset -c 1 "$@" >"$WORK/$name.out" 2>&1; } 2>&1 )
  t1=$(date +%s.%N)
  s1=$(server_ticks)
  local n; n=$("count_$name")
  echo "$name $kind $REP $n $(awk -v a="$t1" -v b="$t0" 'BEGIN{print a - b}') \
    $(echo "$times" | tail -1 | awk '{print $1 + $2}') $(awk -v a="$s1" -v b="$s0" -v t="$TICK" 'BEGIN{print (a - b) / t}')" >>"$WORK/runs.tsv"
  echo "  $name ($kind): $n requests, cpu $(echo "$times" | tail -1)" >&2
}
json_requests() { tail -1 "$WORK/$1.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])'; }
locust_requests() { awk -F, '$2=="Aggregated"{print $3}' "$WORK/$1_stats.csv"; }
count_neurogc() { json_requests neurogc; }
count_wrk() { awk '/requests in/{print $1}' "$WORK/wrk.out"; }
count_locust() { locust_requests locust; }
count_locust_fast() { locust_requests locust_fast; }
count_neurogc_open() { json_requests neurogc_open; }
count_neurogc_seed() { json_requests neurogc_seed; }
count_locust_seed() { locust_requests locust_seed; }

# What the results were produced from: the commit, "-dirty" if the tree had changes (listed).
. bench/lib.sh
COMMIT=$(commit_stamp "$WORK/dirty.txt")

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
BUSY_BEFORE=$(busiest)
for REP in $(seq "$REPS"); do
  echo "repetition $REP/$REPS" >&2
  measure neurogc throughput "$NEUROGC" load --host "$URL" --tasks bench/load/health.toml \
    -u "$CONNS" -r 100000 --wait 0,0 --run-time "${DUR}s" --quiet --json-out "$WORK/neurogc.jsonl"
  measure wrk throughput wrk -t1 -c"$CONNS" -d"${DUR}s" "$URL/health"
  measure locust throughput $LOCUST -u "$CONNS" -r 1000 -t "${DUR}s" --csv "$WORK/locust" Bench
  measure locust_fast throughput env LOCUST_CLIENT=fast $LOCUST -u "$CONNS" -r 1000 -t "${DUR}s" --csv "$WORK/locust_fast" Bench
  measure neurogc_open open "$NEUROGC" load --host "$URL" --tasks bench/load/health.toml \
    --rate "$OPEN_RATE" --run-time "${DUR}s" --quiet --json-out "$WORK/neurogc_open.jsonl"
  tail -1 "$WORK/neurogc_open.jsonl" | python3 -c 'import json,sys; s=json.load(sys.stdin); a=[r for r in s["rows"] if r["task"]=="all"][0]
print(s["dropped"], s["late_starts"], a["p50_ms"], a["p99_ms"])' >>"$WORK/open_extra.tsv"
  measure neurogc_seed seed "$NEUROGC" load --host "$URL" -u 100 -r 10 --run-time "${SEED_DUR}s" \
    --quiet --json-out "$WORK/neurogc_seed.jsonl"
  measure locust_seed seed $LOCUST -u 100 -r 10 -t "${SEED_DUR}s" --csv "$WORK/locust_seed" SeedLoad
done

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
BUSY_AFTER=$(busiest)
python3 bench/load/summarize.py "$WORK/runs.tsv" --open-extra "$WORK/open_extra.tsv" \
  --loadavg "before: $LOAD_BEFORE; after: $LOAD_AFTER" \
  --busiest "before: $BUSY_BEFORE; after: $BUSY_AFTER" \
  --command "bash bench/load/run.sh  (REPS=$REPS DUR=$DUR SEED_DUR=$SEED_DUR CONNS=$CONNS OPEN_RATE=$OPEN_RATE)" \
  --dur "$DUR" --seed-dur "$SEED_DUR" --conns "$CONNS" --open-rate "$OPEN_RATE" \
  --commit "$COMMIT" --dirty "$WORK/dirty.txt" \
  --versions "$(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2); $("$VENV/bin/locust" --version 2>&1 | cut -d' ' -f1-2)" \
  >"$OUT"
cat "$OUT"
