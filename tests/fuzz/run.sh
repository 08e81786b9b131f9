#!/bin/sh
# run.sh — build the libFuzzer GGUF target with clang (ASan + UBSan) in its own build
# directory and run a bounded campaign from a generated seed corpus.
#
#   tests/fuzz/run.sh [SECONDS=60] [BUILD_DIR=build-fuzz]
#
# The corpus grows in BUILD_DIR/fuzz-corpus across runs; crashes are written to
# BUILD_DIR/fuzz-artifacts/ (reproduce: BUILD_DIR/tests/fuzz/fuzz_gguf FILE).
# Exit status: 0 when the campaign ends without a finding.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-60}
bdir=${2:-$root/build-fuzz}
case $bdir in /*) ;; *) bdir=$root/$bdir ;; esac
if [ ! -f "$bdir/build.ninja" ]; then
    CC=clang meson setup "$bdir" "$root" -Dfuzz=true -Dcuda=disabled --buildtype=debugoptimized >/dev/null
fi
ninja -C "$bdir" -j2 tests/fuzz/fuzz_gguf tests/fuzz/make_seeds >/dev/null
mkdir -p "$bdir/fuzz-seeds" "$bdir/fuzz-corpus" "$bdir/fuzz-artifacts"
"$bdir/tests/fuzz/make_seeds" "$bdir/fuzz-seeds"
log=$bdir/fuzz-artifacts/last-run.log
set +e
"$bdir/tests/fuzz/fuzz_gguf" -max_total_time="$secs" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
    -dict="$root/tests/fuzz/gguf.dict" -print_final_stats=1 \
    -artifact_prefix="$bdir/fuzz-artifacts/" "$bdir/fuzz-corpus" "$bdir/fuzz-seeds" >"$log" 2>&1
rc=$?
set -e
grep -E '^(INFO: seed corpus|#[0-9]+ +DONE|Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY)' "$log" || tail -20 "$log"
echo "fuzz_gguf: exit $rc, corpus $(ls "$bdir/fuzz-corpus" | wc -l) files, log $log"
exit $rc
