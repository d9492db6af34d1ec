# Shared by the benchmark scripts (source it): what a result was produced from and on what.

# The commit, "-dirty" when tracked files had changes; the changes are listed in $1 if given.
commit_stamp() {
  local commit dirty
  commit=$(git rev-parse --short HEAD)
  dirty=$(git status --porcelain --untracked-files=no)
  if [ -n "${1:-}" ]; then
    if [ -n "$dirty" ]; then printf '%s\n' "$dirty" >"$1"; else : >"$1"; fi
  fi
  if [ -n "$dirty" ]; then commit="$commit-dirty"; fi
  echo "$commit"
}

# The processes using more than 5 % of a core over one second (the machine's other work).
busiest() {
  top -b -n 2 -d 1 -w 200 -o %CPU | awk '/^top -/ {n++} n == 2 && $1 ~ /^[0-9]+$/ && $9 >= 5 \
    {printf "%s%s %.0f %%", (k++ ? ", " : ""), $12, $9} END {if (!k) printf "none above 5 %%"}'
}
