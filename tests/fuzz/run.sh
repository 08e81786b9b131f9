#!/bin/sh
# run.sh — build the libFuzzer targets with clang (ASan + UBSan) in their own build directory
# and run a bounded campaign of each from a generated seed corpus.
#
#   tests/fuzz/run.sh [SECONDS=60] [BUILD_DIR=build-fuzz] [TARGET...]
#
# Targets: gguf (GGUF reader), config (JSON config parser), dataset (dataset record
# parsers); all three by default, SECONDS each. Seeds are made at run time: GGUF files by
# make_seeds, configs/*.json, and the first records of each dataset file found in
# $ARBOR_DATA (nothing from a dataset is committed). The corpus grows in
# BUILD_DIR/fuzz-corpus-TARGET across runs; crashes are written to BUILD_DIR/fuzz-artifacts/
# (reproduce: BUILD_DIR/tests/fuzz/fuzz_TARGET FILE).
# Exit status: 0 when every campaign ends without a finding.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-60}
bdir=${2:-$root/build-fuzz}
[ $# -gt 2 ] && shift 2 || set -- gguf config dataset
case $bdir in /*) ;; *) bdir=$root/$bdir ;; esac
# a failed setup or build shows its last lines (the campaign's own output stays in its log)
quiet() {
    out=$("$@" 2>&1) || { printf '%s\n' "$out" | tail -40 >&2; echo "run.sh: failed: $*" >&2; exit 1; }
}
if [ ! -f "$bdir/build.ninja" ]; then
    quiet env CC=clang meson setup "$bdir" "$root" -Dfuzz=true -Dcuda=disabled --buildtype=debugoptimized
fi
status=0
for t in "$@"; do
    quiet ninja -C "$bdir" -j2 "tests/fuzz/fuzz_$t" tests/fuzz/make_seeds tests/fuzz/make_dataset_seeds
    seeds=$bdir/fuzz-seeds-$t corpus=$bdir/fuzz-corpus-$t
    mkdir -p "$seeds" "$corpus" "$bdir/fuzz-artifacts"
    dict=
    case $t in
    gguf) "$bdir/tests/fuzz/make_seeds" "$seeds"; dict=-dict=$root/tests/fuzz/gguf.dict ;;
    config) cp "$root"/configs/*.json "$seeds"/ ;;
    dataset)
        if [ -n "${ARBOR_DATA:-}" ]; then "$bdir/tests/fuzz/make_dataset_seeds" "$ARBOR_DATA" "$seeds"
        else echo "fuzz_dataset: ARBOR_DATA unset: no dataset seeds"; fi ;;
    *) echo "run.sh: unknown target $t (gguf, config, dataset)" >&2; exit 2 ;;
    esac
    log=$bdir/fuzz-artifacts/last-run-$t.log
    set +e
    "$bdir/tests/fuzz/fuzz_$t" -max_total_time="$secs" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
        $dict -print_final_stats=1 -artifact_prefix="$bdir/fuzz-artifacts/$t-" "$corpus" "$seeds" >"$log" 2>&1
    rc=$?
    set -e
    grep -E '^(INFO: seed corpus|#[0-9]+ +DONE|Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY)' "$log" || tail -20 "$log"
    echo "fuzz_$t: exit $rc, corpus $(ls "$corpus" | wc -l) files, log $log"
    [ $rc -eq 0 ] || status=$rc
done
exit $status
