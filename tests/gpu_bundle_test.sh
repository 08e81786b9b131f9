#!/bin/bash
# tests/gpu_bundle_test.sh SRC BUILD — scripts/gpu_bundle.sh on this build: the tarball unpacks
# elsewhere; its arbor and test_gpu load every library from the bundle except the C/C++
# runtime and cuBLAS (a library the bundle lacks fails here); env.sh sets ARBOR_DATA to the
# bundled datasets; run.sh without a GPU refuses with exit 2 and says why; bad options exit 2;
# --split leaves the model in parts beside the tarball, which assemble.sh joins (in order only).
# Exit 77 (meson: skipped) for a build without CUDA.
set -u
src=$1 build=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! ldd "$build/harness/arbor" | grep -q libcudart; then
    echo "skipped: $build was built without CUDA"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/data/humaneval" "$tmp/data/gsm8k"
echo '{}' > "$tmp/data/humaneval/HumanEval.jsonl"
echo '{}' > "$tmp/data/gsm8k/test.jsonl"
bash "$src/scripts/gpu_bundle.sh" --build "$build" --out "$tmp/b.tar.gz" --data "$tmp/data" ||
    fail "gpu_bundle.sh exited $?"
mkdir "$tmp/x" && tar -C "$tmp/x" -xzf "$tmp/b.tar.gz" || fail "the tarball does not unpack"
B=$tmp/x/arbor-gpu
for f in bin/arbor bin/test_gpu run.sh env.sh scripts/gpu_check.sh configs/gpu.json data/gsm8k/test.jsonl; do
    [ -e "$B/$f" ] || fail "the bundle lacks $f"
done
(
    unset ARBOR_DATA ARBOR_MODEL
    . "$B/env.sh"
    [ "$(command -v arbor)" = "$B/bin/arbor" ] || fail "env.sh: arbor on PATH is $(command -v arbor)"
    [ "${ARBOR_DATA:-}" = "$B/data" ] || fail "env.sh: ARBOR_DATA=${ARBOR_DATA:-} (want $B/data)"
    arbor --version | grep -q '^arbor ' || fail "the bundled arbor does not run"
    for exe in "$B/bin/arbor" "$B/bin/test_gpu"; do
        ldd "$exe" | grep -q 'not found' && fail "$(basename "$exe"): $(ldd "$exe" | grep 'not found')"
        ldd "$exe" | awk '/=> \// {print $1, $3}' | while read -r name path; do
            case "$path" in "$B/lib/"*) continue ;; esac
            case "$name" in
            ld-linux* | libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | libresolv.so* | \
                libstdc++.so* | libgcc_s.so* | libcuda.so* | libcublas*) ;;
            *) fail "$(basename "$exe") loads $name from $path, not from the bundle" ;;
            esac
        done || exit 1
    done
) || exit 1
if ! nvidia-smi -L > /dev/null 2>&1; then
    out=$("$B/run.sh" 2>&1)
    rc=$?
    [ $rc -eq 2 ] || fail "run.sh without a GPU exited $rc (want 2): $out"
    echo "$out" | grep -q 'no NVIDIA GPU' || fail "run.sh without a GPU said: $out"
fi
# --split: the model beside the tarball in parts; assemble.sh joins them (in order) into
# model/, where env.sh finds it, and refuses parts out of order without leaving a model
head -c 2500000 /dev/urandom > "$tmp/m.gguf"
bash "$src/scripts/gpu_bundle.sh" --build "$build" --out "$tmp/s.tar.gz" --model "$tmp/m.gguf" --split 1 > /dev/null ||
    fail "--split exited $?"
[ "$(ls "$tmp"/s.tar.gz.model.* | wc -l)" -eq 3 ] || fail "--split 1 of 2.5 MB: $(ls "$tmp"/s.tar.gz.model.*)"
mkdir "$tmp/s" && tar -C "$tmp/s" -xzf "$tmp/s.tar.gz" || fail "the split bundle does not unpack"
S=$tmp/s/arbor-gpu
[ ! -e "$S/model" ] || fail "--split left the model in the tarball"
out=$("$S/assemble.sh" "$tmp/s.tar.gz.model.001" "$tmp/s.tar.gz.model.000" "$tmp/s.tar.gz.model.002" 2>&1)
[ $? -eq 1 ] && echo "$out" | grep -q 'out of order' || fail "assemble.sh, parts out of order: $out"
[ ! -e "$S/model/m.gguf" ] || fail "assemble.sh left a model from parts out of order"
"$S/assemble.sh" "$tmp"/s.tar.gz.model.* > /dev/null || fail "assemble.sh exited $?"
cmp -s "$tmp/m.gguf" "$S/model/m.gguf" || fail "assemble.sh: the joined model differs"
(unset ARBOR_MODEL; . "$S/env.sh"; [ "${ARBOR_MODEL:-}" = "$S/model/m.gguf" ]) || fail "env.sh: no ARBOR_MODEL after assemble.sh"
out=$(bash "$src/scripts/gpu_bundle.sh" --build "$build" --out "$tmp/t.tar.gz" --split 1 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -q 'split needs --model' || fail "--split without --model: $out"
out=$(bash "$src/scripts/gpu_bundle.sh" --build "$build" --out "$tmp/b.zip" 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -q 'b.zip' || fail "--out b.zip: $out"
out=$(bash "$src/scripts/gpu_bundle.sh" --build "$tmp/none" 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -q 'not an executable' || fail "--build without binaries: $out"
out=$(bash "$src/scripts/gpu_bundle.sh" --build "$build" --data "$tmp/data" --datasets humaneval,mbpp --out "$tmp/c.tar" 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -q 'no mbpp/' || fail "a missing dataset: $out"
echo "gpu bundle: ok ($(du -h "$tmp/b.tar.gz" | cut -f1))"
