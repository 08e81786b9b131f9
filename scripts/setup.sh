#!/usr/bin/env bash
# scripts/setup.sh — install what arbor needs on a fresh Debian (bookworm) machine,
# configure and build. Idempotent: skips packages already present.
#   usage: scripts/setup.sh [BUILD_DIR] [extra meson setup args...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}; shift || true

pkgs=(meson ninja-build pkg-config gcc libsqlite3-dev libcjson-dev libcriterion-dev zlib1g-dev
      gnuplot-nox sqlite3 python3-pip clang libclang-rt-14-dev
      libdivsufsort-dev libpython3.11-minimal libpython3.11-stdlib)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" > /dev/null || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# pip may be missing on minimal images even when python3 is there.
python3 -m pip --version >/dev/null 2>&1 || { echo "setup: python3 -m pip not available" >&2; exit 1; }

if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$@"
fi
ninja -C "$build"
