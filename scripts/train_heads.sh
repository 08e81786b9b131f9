#!/usr/bin/env bash
# scripts/train_heads.sh — the default model's Medusa, Hydra and EAGLE heads from a clean machine,
# in one command: fetch the model, self-distill training prompts (ShareGPT multi-turn dump, GSM8K
# train, MBPP non-test; never an evaluation set), train the three heads into the cache where the
# `medusa`, `hydra`, `eagle2-head` and `eagle-dte` presets find them (docs/heads.md).
#   usage: scripts/train_heads.sh [quick|full]      (default quick)
#   quick: the recipe behind the docs' tables — 360 prompts (329 records, ~40 k response tokens),
#          Medusa 150 steps, Hydra 80, EAGLE 250 (200 records). Measured from an empty cache on
#          the 2-core build machine (load 2-3): 12.0 min wall, 10.6 CPU-min (distill 156 s, hidden
#          states 26 s, Medusa 60 s, Hydra 46 s, EAGLE 428 s), held-out top-1 as in docs/heads.md
#          (Medusa head 1 0.228, Hydra 0.270, EAGLE 0.427): the recipe is deterministic.
#   full:  every training prompt (8427) and one epoch per head: ~10 h of one core (estimate,
#          docs/heads.md §6); distill is resumable, so an interrupted run continues.
# An existing head file is kept (FORCE=1 retrains). THREADS (default 1) is the target's threads.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-quick}
case "$mode" in quick|full) ;; *) echo "usage: $0 [quick|full]" >&2; exit 2 ;; esac
threads=${THREADS:-1}
if [ -z "${ARBOR_DATA:-}" ]; then
  if [ -d ../shared/datasets ]; then export ARBOR_DATA=$(cd ../shared/datasets && pwd)
  else export ARBOR_DATA=${ARBOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/arbor}/data; datasets/fetch; fi
fi
[ -x build/harness/arbor ] || scripts/setup.sh build >/dev/null
arbor=build/harness/arbor
model=$($arbor fetch-model --quiet | tail -1)
heads_file() { # the default heads path of kind $1 (what the presets load)
  local dir=${ARBOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/arbor}/heads
  local sha; sha=$(sha256sum "$model" | cut -c1-12)
  echo "$dir/$1-$(basename "$model").$sha.gguf"
}
start=$(date +%s)
if [ "$mode" = quick ]; then
  $arbor distill --limit 360 --threads "$threads"
  common=(--limit 200 --eval-rows 600 --seed 1 --threads "$threads")
  medusa=(--steps 150 --batch 32); hydra=(--steps 80 --batch 32); eagle=(--steps 250 --lr 1e-3 --eval-every 50)
else
  $arbor distill --threads "$threads"
  common=(--seed 1 --threads "$threads"); medusa=(--epochs 1); hydra=(--epochs 1); eagle=(--epochs 1)
fi
for kind in medusa hydra eagle; do
  out=$(heads_file "$kind")
  if [ -f "$out" ] && [ "${FORCE:-0}" != 1 ]; then echo "train_heads: $out exists (FORCE=1 retrains)"; continue; fi
  args=("${common[@]}"); case $kind in medusa) args+=("${medusa[@]}");; hydra) args+=("${hydra[@]}");; eagle) args+=("${eagle[@]}");; esac
  $arbor train "$kind" "${args[@]}"
done
echo "train_heads: $mode recipe done in $(( $(date +%s) - start )) s; heads in $(dirname "$(heads_file medusa)")"
