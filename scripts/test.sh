#!/usr/bin/env bash
# scripts/test.sh — the whole test suite from a fresh machine: install, build, fetch the
# default model and Gemma-3 270M, run the unit + model suites, then the unit suite under ASan+UBSan,
# then the three libFuzzer targets for 20 s each.
# The first stage checks the engine boundary (scripts/check_boundary.sh).
#   usage: scripts/test.sh            (ARBOR_DATA defaults to ../shared/datasets if present)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
if [ -z "${ARBOR_DATA:-}" ] && [ -d ../shared/datasets ]; then
  export ARBOR_DATA=$(cd ../shared/datasets && pwd)
fi
status=0
summary=()
log=$(mktemp); trap 'rm -f "$log"' EXIT
stage() {  # stage NAME CMD...   (output also goes to $log, for the totals at the end)
  local name=$1; shift
  echo "=== $name"
  local t0=$SECONDS
  if "$@" 2>&1 | tee -a "$log"; then summary+=("| $name | ok | $((SECONDS - t0)) s |")
  else summary+=("| $name | FAILED | $((SECONDS - t0)) s |"); status=1; fi
}
werror=(-Dwerror=true)
stage "engine boundary" scripts/check_boundary.sh
stage "release build" scripts/setup.sh build-release --buildtype=release "${werror[@]}"
stage "fetch model" ./build-release/harness/arbor fetch-model --quiet
stage "fetch gemma3-270m" ./build-release/harness/arbor fetch-model gemma3-270m --quiet
stage "unit + model tests" meson test -C build-release --suite unit --suite model --print-errorlogs --num-processes 2
# UBSan as meson's b_sanitize gives it, plus float-cast-overflow (a float converted to an
# integer type that cannot hold it: undefined, and not part of -fsanitize=undefined)
fcast=-fsanitize=float-cast-overflow
stage "asan+ubsan build" scripts/setup.sh build-asan --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
  -Dc_args=$fcast -Dc_link_args=$fcast "${werror[@]}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
stage "unit tests under asan+ubsan" meson test -C build-asan --suite unit --print-errorlogs --num-processes 2
# The libFuzzer targets (clang, ASan+UBSan): built, so that a harness change they do not
# link with fails here, and run briefly each from their generated seeds (a finding fails).
stage "fuzz targets, 20 s each" tests/fuzz/run.sh 20 build-fuzz
echo
echo "| stage | result | time |"
echo "|---|---|---|"
printf '%s\n' "${summary[@]}"
# One plain closing line over every test stage (meson prints "Ok: N" / "Fail: N" per run).
passed=$(awk '/^Ok:/ {n += $2} END {print n + 0}' "$log")
failed=$(awk '/^(Fail|Timeout|Unexpected Pass):/ {n += $NF} END {print n + 0}' "$log")
skipped=$(awk '/^Skipped:/ {n += $2} END {print n + 0}' "$log")
echo
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit $status
