#!/usr/bin/env bash
# scripts/check_boundary.sh — the engine boundary (docs/ARCHITECTURE.md): files under
# harness/ and datasets/ may include, from the engine, only the public headers in
# engine/include/. Prints each violation as FILE:LINE: and exits 1 if there is one.
#   usage: scripts/check_boundary.sh [SOURCE_ROOT]      (run by scripts/test.sh and
#          as the `boundary` test of the unit suite)
#
# Why a script when engine_dep already exports only engine/include/: the top-level
# config_inc puts the source root on every include path, so "engine/gguf.h" or
# "../engine/quant.h" would still compile. Each quoted include is resolved the way the
# compiler does (the including file's folder, then harness/, datasets/, the source
# root); one that lands inside engine/ but outside engine/include/ is a violation, and
# so is any include, quoted or <angled>, naming an internal engine header that no
# harness file provides.
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
cd "$root"

declare -A internal=() # basename -> 1 for every engine header outside engine/include/
while IFS= read -r h; do internal[$(basename "$h")]=1; done \
    < <(find engine -path engine/include -prune -o -type f \( -name '*.h' -o -name '*.cuh' -o -name '*.inc' \) -print)

bad=0
while IFS= read -r f; do
    n=0
    while IFS= read -r line; do
        n=$((n + 1))
        [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*([\"\<])([^\"\>]+)[\"\>] ]] || continue
        kind=${BASH_REMATCH[1]} inc=${BASH_REMATCH[2]} hit=""
        if [[ $kind == '"' ]]; then
            for dir in "$(dirname "$f")" harness datasets . engine/include; do
                [[ -f $dir/$inc ]] || continue
                hit=$(realpath --relative-to="$root" "$dir/$inc")
                break
            done
        fi
        if [[ -n $hit ]]; then
            [[ $hit == engine/* && $hit != engine/include/* ]] || continue
        elif [[ -z ${internal[$(basename "$inc")]:-} ]]; then
            continue # a system or generated header (arb_config.h, arb_git_rev.h)
        fi
        echo "$f:$n: includes internal engine header '$inc' (only engine/include/ is public)"
        bad=1
    done < "$f"
done < <(find harness datasets -type f \( -name '*.c' -o -name '*.h' \) | sort)

for m in harness/meson.build datasets/meson.build; do
    if grep -n "include_directories([^)]*engine" "$m"; then
        echo "$m: adds an engine folder to the include path (use engine_dep)"
        bad=1
    fi
done
[[ $bad == 0 ]] && echo "boundary: ok (harness/ and datasets/ include only engine/include/)"
exit $bad
