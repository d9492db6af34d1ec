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

# How fast this machine runs Python now: the median of three timings (s) of a loop of 10 million
# additions in the venv's interpreter. The machine is shared: the same code measured on another
# day can be several times slower, and rates found by a search follow it.
python_speed() {
  "${PYTHON:-.venv/bin/python}" - <<'PY'
import statistics, time
def once():
    t = time.perf_counter()
    s = 0
    for i in range(10_000_000):
        s += i
    return time.perf_counter() - t
print(f"{statistics.median(once() for _ in range(3)):.2f} s")
PY
}
