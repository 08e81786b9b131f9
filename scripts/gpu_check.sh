#!/bin/bash
# gpu_check.sh — the GPU checks of docs/gpu.md in one run, for a machine with an NVIDIA GPU
# (a CI runner with a GPU, a borrowed machine): the gpu test suite, `arbor bench engine` on
# the default model (saving each mode's cost profile) and on a synthetic 8B Q4_0 per backend,
# `arbor check-lossless` per mode with the fixed and the "auto" budgets (and Medusa's heads where a
# heads file of the model is in the cache: arbor train medusa, or gpu_bundle.sh --heads), and
# `arbor run configs/gpu.json` with its table. Each step's output goes to OUT/<step>.txt;
# OUT/summary.txt lists every step with its exit status and seconds. A failed step does not
# stop the others; the script exits 1 if any failed (2 on a bad option). Fast mode's
# check-lossless is reported but not counted: near-tie mismatches are allowed there.
#
#   scripts/gpu_check.sh [--build DIR] [--arbor PATH] [--test-gpu PATH] [--out DIR]
#                        [--limit N] [--steps N] [--no-8b] [--env NAME=VALUE ...] [--ab]
#
#   --build DIR      meson build directory with harness/arbor and tests/test_gpu (build-release)
#   --arbor PATH     the arbor binary (default DIR/harness/arbor)
#   --test-gpu PATH  the gpu test binary (default DIR/tests/test_gpu)
#   --out DIR        where the outputs go (default results/gpu-check-<UTC time>)
#   --limit N        prompts per dataset for check-lossless and configs/gpu.json (default 5)
#   --steps N        decode steps of the engine benches (default 512: the context grows to N)
#   --no-8b          skip the synthetic 8B model (it needs ~5 GB in $TMPDIR and ~5 GB of GPU memory)
#   --env NAME=VAL   run every step with this variable set (repeatable), e.g. ARBOR_CUDA_ATTN=block
#   --ab             instead of the benches and runs: the suite, then exact-mode engine benches of
#                    the kernel variants (the defaults, ARBOR_CUDA_MERGE=parallel,
#                    ARBOR_CUDA_MERGE=fused, ARBOR_CUDA_ROWS=2, ARBOR_CUDA_ROWS=4), two
#                    alternated rounds on the default model and the 8B shape,
#                    each with the KV capacity `arbor run` gives (--n-ctx 4096) (bench-ab-*.txt);
#                    then `arbor run configs/gpu.json` under the defaults, serial merge, fused
#                    merge, fused GLU and fused QKV alone (ab-run-*.db: per-step eval times by
#                    context; docs/gpu.md, "The next GPU session"); last, check-lossless of TR and
#                    GOOSE (the top-K output every step) under ARBOR_CUDA_TOPK=rounds and onepass,
#                    alternated twice per mode (ab-topk-*.txt: tok/s, mismatches)
#   --quick-ab       for a device lent for minutes (about 10 on an H100): the suite, then one
#                    exact-mode bench of the defaults, ARBOR_CUDA_ROWS=2 and =4 on the default
#                    model and the 8B shape (128 steps), then check-lossless of TR and GOOSE under
#                    each ARBOR_CUDA_TOPK kernel per mode (--limit 2); the twenty-eighth session's
#                    kernels, written without a device (docs/gpu.md)
#
# Needs the default model (`arbor fetch-model`, or $ARBOR_MODEL / $ARBOR_CACHE) and $ARBOR_DATA
# holding humaneval and gsm8k (`datasets/fetch --only humaneval,gsm8k`). Run from the
# repository root (configs/gpu.json is read from there).
set -u

build=build-release arbor='' test_gpu='' out='' limit=5 steps=512 big=1 ab=0 qab=0
envs=()
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --arbor) arbor=$2; shift 2 ;;
    --test-gpu) test_gpu=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --no-8b) big=0; shift ;;
    --ab) ab=1; shift ;;
    --quick-ab) qab=1; shift ;;
    --env)
        case "$2" in *=*) envs+=("$2") ;; *) echo "gpu_check.sh: --env $2: expected NAME=VALUE" >&2; exit 2 ;; esac
        shift 2 ;;
    -h | --help) sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check.sh: unknown option $1 (--help lists them)" >&2; exit 2 ;;
    esac
done
case "$limit$steps" in *[!0-9]*) echo "gpu_check.sh: --limit and --steps take positive integers" >&2; exit 2 ;; esac
arbor=${arbor:-$build/harness/arbor}
test_gpu=${test_gpu:-$build/tests/test_gpu}
out=${out:-results/gpu-check-$(date -u +%Y%m%dT%H%M%SZ)}
for f in "$arbor" "$test_gpu"; do
    [ -x "$f" ] || { echo "gpu_check.sh: $f: not an executable (build first, or --arbor / --test-gpu)" >&2; exit 2; }
done
[ -f configs/gpu.json ] || { echo "gpu_check.sh: configs/gpu.json not found: run from the repository root" >&2; exit 2; }
if ! nvidia-smi -L > /dev/null 2>&1; then
    echo "gpu_check.sh: no NVIDIA GPU here (nvidia-smi -L failed): the gpu suite would only skip" >&2
    exit 2
fi
mkdir -p "$out" || exit 2
for e in "${envs[@]}"; do export "${e?}"; done
tmp=${TMPDIR:-/tmp}
failed=0

# step NAME TIMEOUT COMMAND...: runs it with its output in OUT/NAME.txt, one summary line;
# a non-zero status fails the check unless NAME ends in "(info)".
step() {
    local name=$1 limit_s=$2
    shift 2
    local t0=$SECONDS
    timeout "$limit_s" "$@" > "$out/${name% (info)}.txt" 2>&1
    local rc=$?
    case "$name" in *"(info)") ;; *) [ $rc -eq 0 ] || failed=1 ;; esac
    printf '%-30s rc %3d  %4d s  %s\n' "$name" $rc $((SECONDS - t0)) "$*" | tee -a "$out/summary.txt"
}

{
    echo "gpu_check.sh $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    "$arbor" --version
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    [ ${#envs[@]} -gt 0 ] && echo "environment: ${envs[*]}"
} > "$out/summary.txt" 2>&1
cat "$out/summary.txt"

# bench_models TIMEOUT: models=(default), plus the synthetic 8B (written to $m8) unless --no-8b
m8=$tmp/arbor-gpu-check-llama-8b-q4_0.gguf
bench_models() {
    models=(default)
    if [ $big -eq 1 ]; then
        step synth-8b "$1" "$arbor" synth-model --shape llama-8b --type q4_0 --out "$m8" && models+=("$m8")
    fi
}
# topk_ab PREFIX TIMEOUT LIMIT: check-lossless of TR and GOOSE (the top-K output every step) under
# each ARBOR_CUDA_TOPK kernel per mode; the same ids, so the same trees and tau: tok/s tells the cost
topk_ab() {
    local b k name
    for b in cuda-exact cuda; do
        for k in rounds onepass; do
            name="$1-$b-$k"
            [ "$b" = cuda ] && name="$name (info)" # fast mode: near-tie mismatches possible
            step "$name" "$2" env ARBOR_CUDA_TOPK=$k "$arbor" check-lossless --backend "$b" \
                --datasets humaneval,gsm8k --limit "$3" --max-new 128 --methods tr,goose
        done
    done
}

step suite 600 "$test_gpu" --verbose=1 -j1
if [ $qab -eq 1 ]; then
    bench_models 300
    for mdl in "${models[@]}"; do
        tag=default
        [ "$mdl" = default ] || tag=8b
        for r in 1 2 4; do
            step "qab-bench-$tag-rows$r" 180 env ARBOR_CUDA_ROWS=$r "$arbor" bench engine --model "$mdl" \
                --backend cuda-exact --steps 128 --prefill 128 --reps 2 --trees-only
        done
    done
    rm -f "$m8"
    topk_ab qab-topk 180 2
    echo "outputs in $out" | tee -a "$out/summary.txt"
    exit $failed
fi
if [ $ab -eq 1 ]; then
    # variant NAME: the environment of one A/B arm (VAR=VALUE words; none for the default)
    variant() {
        case "$1" in
        base) echo ;;
        serial) echo ARBOR_CUDA_MERGE=serial ;;
        merge) echo ARBOR_CUDA_MERGE=parallel ;;
        mfused) echo ARBOR_CUDA_MERGE=fused ;;
        glu) echo ARBOR_CUDA_GLU=fused ;;
        qkv) echo ARBOR_CUDA_QKV=fused ;;
        all) echo ARBOR_CUDA_MERGE=fused ARBOR_CUDA_GLU=fused ARBOR_CUDA_QKV=fused ;;
        rows2) echo ARBOR_CUDA_ROWS=2 ;;
        rows4) echo ARBOR_CUDA_ROWS=4 ;;
        esac
    }
    bench_models 600
    for r in 1 2; do
        for mdl in "${models[@]}"; do
            tag=default
            [ "$mdl" = default ] || tag=8b
            # (glu, qkv and all were benched in the twenty-fourth session; rows2 and rows4, the
            # int8 GEMV with 2 or 4 rows per warp at 2-15 nodes, are new in the twenty-eighth)
            for v in base merge mfused rows2 rows4; do
                # shellcheck disable=SC2046 # the variant's words are separate assignments
                step "bench-ab-$tag-$v-r$r" 300 env $(variant $v) "$arbor" bench engine --model "$mdl" \
                    --backend cuda-exact --steps "$steps" --prefill 128 --reps 2 --n-ctx 4096
            done
        done
    done
    rm -f "$m8"
    # the runs, where the three fused variants together made exact mode's AR steps dearer past
    # ~100 keys of context (docs/gpu.md, twenty-fourth session): each variant alone
    for v in base serial mfused glu qkv; do
        # shellcheck disable=SC2046
        step "ab-run-$v" 900 env $(variant $v) "$arbor" run configs/gpu.json --limit "$limit" \
            --db "$out/ab-run-$v.db" --quiet
    done
    # the top-K kernels (twenty-eighth session: onepass, one read of each row, written without a
    # device), two alternated rounds
    for r in 1 2; do
        topk_ab "ab-topk-r$r" 300 "$limit"
    done
    echo "outputs in $out" | tee -a "$out/summary.txt"
    exit $failed
fi
for b in cuda cuda-exact; do # --save-profile: the GPU's cost model, for the auto budgets below
    step "bench-default-$b" 300 "$arbor" bench engine --backend "$b" --steps "$steps" --prefill 128 --reps 2 --save-profile
done
if [ $big -eq 1 ]; then
    step synth-8b 600 "$arbor" synth-model --shape llama-8b --type q4_0 --out "$m8"
    for b in cuda cuda-exact; do
        step "bench-8b-$b" 300 "$arbor" bench engine --model "$m8" --backend "$b" --steps "$steps" --prefill 128 --reps 2
    done
    rm -f "$m8"
fi
step "lossless-cuda (info)" 900 "$arbor" check-lossless --backend cuda --datasets humaneval,gsm8k --limit "$limit" \
    --max-new 128 --methods pld,tr,goose
step lossless-cuda-exact 900 "$arbor" check-lossless --backend cuda-exact --datasets humaneval,gsm8k \
    --limit "$limit" --max-new 128 --methods pld,tr,goose
for b in cuda cuda-exact; do # budget "auto" from the profiles just saved (fast mode: informative)
    name="auto-budgets-$b"
    [ "$b" = cuda ] && name="$name (info)"
    step "$name" 900 "$arbor" check-lossless --backend "$b" --datasets humaneval,gsm8k --limit "$limit" \
        --max-new 128 --methods pld-auto,tr-auto,goose-auto
done
# Medusa: its heads scored by the device's output head (arb_ctx_output_head), when the cache holds
# a heads file (the preset's default path is <cache>/heads/medusa-<model>.<sha12>.gguf)
cache=${ARBOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/arbor}
if compgen -G "$cache/heads/medusa-*.gguf" > /dev/null; then
    step "heads-cuda (info)" 900 "$arbor" check-lossless --backend cuda --datasets humaneval,gsm8k --limit "$limit" \
        --max-new 128 --methods medusa
    step heads-cuda-exact 900 "$arbor" check-lossless --backend cuda-exact --datasets humaneval,gsm8k \
        --limit "$limit" --max-new 128 --methods medusa
fi
step run-gpu-json 1800 "$arbor" run configs/gpu.json --limit "$limit" --db "$out/gpu.db" --quiet
step report-table3 60 "$arbor" report --db "$out/gpu.db" --table table3
echo "outputs in $out" | tee -a "$out/summary.txt"
exit $failed
