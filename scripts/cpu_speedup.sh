#!/usr/bin/env bash
# scripts/cpu_speedup.sh — tokens per CPU-second of every method x dataset of a config, each
# (method, dataset) pair run as its own `arbor run` process so that the process's CPU time
# (user + sys, from bash's `times`) is that pair's alone. On a shared machine this is the figure
# to trust: wall-clock tok/s moves with the other jobs' load, the CPU time of a one-thread
# process much less. Results go to the same database as a plain `arbor run` of the config
# (run keys do not depend on how the config is split), so `arbor report` reads them as usual.
#   usage: scripts/cpu_speedup.sh CONFIG.json DB [ARBOR]     (ARBOR: build-release/harness/arbor)
# Prints one markdown row per dataset and method: CPU s, tok/s (CPU), speedup over the
# config's first method (AR). Includes model load (~0.1 s a process) and the config's warm-up
# prompts, so keep "warmup": 0 for this use. Needs jq.
set -euo pipefail
config=$1 db=$2 arbor=${3:-build-release/harness/arbor}
[ -f "$config" ] || { echo "cpu_speedup: $config: no such file" >&2; exit 2; }
[ ! -e "$db" ] || { echo "cpu_speedup: $db exists: a resumed run would count no CPU time; give a new path" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n_m=$(jq '.methods | length' "$config")
n_d=$(jq '.datasets | length' "$config")
TIMEFORMAT='%3U %3S' # bash's `time`: user and sys CPU seconds of the command
echo "| dataset | method | tokens | CPU s | tok/CPU-s | speedup (CPU) |"
echo "|---|---|---:|---:|---:|---:|"
for ((d = 0; d < n_d; d++)); do
  ds=$(jq -r ".datasets[$d].name" "$config")
  ref=""
  for ((k = 0; k < n_m; k++)); do
    id=$(jq -r ".methods[$k].id" "$config")
    jq ".datasets = [.datasets[$d]] | .methods = [.methods[$k]]" "$config" > "$tmp/one.json"
    { time nice "$arbor" run "$tmp/one.json" --db "$db" --threads 1 --quiet 2>"$tmp/err" ; } 2>"$tmp/time" ||
      { cat "$tmp/err" >&2; exit 1; }
    cpu=$(awk '{ print $1 + $2 }' "$tmp/time")
    toks=$(sqlite3 "$db" "SELECT SUM(p.n_gen) FROM prompts p JOIN runs r USING(run_key) WHERE r.method = '$id' AND r.dataset = '$ds'")
    awk -v ds="$ds" -v id="$id" -v t="$toks" -v c="$cpu" -v ref="$ref" 'BEGIN {
      r = t / c; printf "| %s | %s | %d | %.2f | %.1f | %s |\n", ds, id, t, c, r, ref == "" ? "1.00x" : sprintf("%.2fx", r / ref) }'
    [ -n "$ref" ] || ref=$(awk -v t="$toks" -v c="$cpu" 'BEGIN { print t / c }')
  done
done
