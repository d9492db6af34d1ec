#!/usr/bin/env bash
# Does the method grant a collect-on-a-timer policy free idle time? The same two policies
# (default, periodic:5) on growing-cache, three ways: taking turns with idle servers left running
# (--mode alternating: each is idle half the time, and a timer may fire into it), taking turns with
# idle servers stopped (--mode turns: the suite's), and one at a time under continuous load
# (--mode sequential: no idle time at all, the ground truth, drift and all). Writes METHOD.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
NEUROGC=${NEUROGC:-target/release/neurogc}
tmp=bench/suite/method.tmp
rm -rf "$tmp" && mkdir -p "$tmp"
common=(--workload growing-cache --policy default --policy periodic:5 --warmup 6s --rate auto --no-dashboard)
"$NEUROGC" bench "${common[@]}" --mode alternating --slice 5s --duration 30s --repeat 1 --name alternating --runs-dir "$tmp"
"$NEUROGC" bench "${common[@]}" --mode turns --slice 5s --duration 30s --repeat 1 --name turns --runs-dir "$tmp"
"$NEUROGC" bench "${common[@]}" --mode sequential --duration 30s --repeat 3 --name sequential --runs-dir "$tmp"
commit=$(git rev-parse --short HEAD)
{
  echo "<!-- written by bench/suite/method.sh; do not edit -->"
  echo "# Does the method give a timer policy free idle time?"
  echo
  echo "Command: \`bench/suite/method.sh\` · commit $commit · $(date -u '+%Y-%m-%d %H:%M UTC')."
  echo "growing-cache, \`periodic:5\` against \`default\`, each method's own capacity search (the lower of gc-off's and default's, 60 %)."
  echo
  echo "| method | idle time a server gets | periodic:5 vs default (from each run's report) |"
  echo "|---|---|---|"
  for m in alternating turns sequential; do
    run=$(ls -d "$tmp"/*-"$m")
    case $m in
      alternating) idle="half of the run, running: its timer fires into it" ;;
      turns) idle="none: stopped outside its turns" ;;
      sequential) idle="none: loaded the whole trial (ground truth)" ;;
    esac
    lines=$(grep -E '^periodic:5: p99(\.9)? ' "$run/README.md" | sed 's/$/<br>/' | tr -d '\n')
    echo "| $m | $idle | $lines |"
  done
  echo
  echo "Per-method reports: \`bench/suite/method/<method>/README.md\`."
} > bench/suite/METHOD.md
for m in alternating turns sequential; do
  run=$(ls -d "$tmp"/*-"$m")
  mkdir -p "bench/suite/method/$m" && cp "$run/README.md" "bench/suite/method/$m/README.md"
done
rm -rf "$tmp"
echo "bench/suite/METHOD.md"
