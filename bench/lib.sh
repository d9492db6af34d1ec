# Shared by the benchmark scripts (source it): what a result was produced from and on what.

# The commit, "-dirty" when tracked files had changes (under the paths after $1 only, if any:
# what the result depends on, not the outputs it rewrites); the changes are listed in $1 if given.
commit_stamp() {
  local commit dirty list=${1:-}
  shift || true
  commit=$(git rev-parse --short HEAD)
  dirty=$(git status --porcelain --untracked-files=no -- "$@")
  if [ -n "$list" ]; then
    if [ -n "$dirty" ]; then printf '%s\n' "$dirty" >"$list"; else : >"$list"; fi
  fi
  if [ -n "$dirty" ]; then commit="$commit-dirty"; fi
  echo "$commit"
}

# The processes using more than 5 % of a core over one second (the machine's other work).
busiest() {
  top -b -n 2 -d 1 -w 200 -o %CPU | awk '/^top -/ {n++} n == 2 && $1 ~ /^[0-9]+$/ && $9 >= 5 \
    {printf "%s%s %.0f %%", (k++ ? ", " : ""), $12, $9} END {if (!k) printf "none above 5 %%"}'
}

# How fast this machine collects now: a full collection of 150,000 linked objects, the median of
# five (bench/aa/machine_speed.py --once; 16 ms on 2026-11-25). The machine is shared: the same
# code measured on another day can be twice as slow, and the rates a search finds follow it.
machine_speed() {
  "${PYTHON:-.venv/bin/python}" bench/aa/machine_speed.py --once
}
