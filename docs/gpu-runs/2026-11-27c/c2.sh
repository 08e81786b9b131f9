#!/bin/bash
# call 2 (same warm machine): the default model from parts 1-3, the gpu suite with it (default
# and all fused variants), default-model A/B benches, check-lossless per mode (fixed, auto, medusa),
# configs/gpu.json default and all fused
set -u
R=$PWD W=/tmp/w D=/tmp/w/out
[ -d $W/arbor-gpu ] && [ -f $W/m0 ] || { echo "c2: a fresh machine: part 1 and the bundle are gone"; exit 3; }
mkdir -p $W/models $W/cache/heads $D
M=$W/models/SmolLM2-135M-Instruct.Q4_1.gguf
cat $W/m0 $R/gpu-in/m1 $R/gpu-in/m2 > $M
cp $R/gpu-in/medusa-*.gguf $W/cache/heads/ 2>/dev/null
. $W/arbor-gpu/env.sh
export ARBOR_MODEL=$M ARBOR_CACHE=$W/cache
cd $W/arbor-gpu || exit 3
{ sha256sum $M; ls $W/cache/heads; } > $D/c2-info.txt 2>&1
sha256sum $M | grep -q b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 || { echo "c2: model sha256 mismatch"; exit 3; }
T0=$SECONDS
st() { local n=$1 l=$2; shift 2; if [ $((SECONDS - T0)) -gt ${BUDGET:-300} ]; then echo "$n skipped (budget)" >> $D/c2-info.txt; return; fi
  local t=$SECONDS; timeout $l "$@" > $D/c2-$n.txt 2>&1; echo "$n rc $? t $((SECONDS - t))" | tee -a $D/c2-info.txt; }
ALL="ARBOR_CUDA_MERGE=fused ARBOR_CUDA_GLU=fused ARBOR_CUDA_QKV=fused"
B="arbor bench engine --steps 512 --prefill 128 --reps 2"
st msuite 150 test_gpu --verbose=1 -j1
st bdx-prof 30 $B --backend cuda-exact --save-profile
st bdf-prof 30 $B --backend cuda --save-profile
for r in 1 2 3; do
  st bd-base-r$r 30 $B --backend cuda-exact
  st bd-merge-r$r 30 env ARBOR_CUDA_MERGE=parallel $B --backend cuda-exact
  st bd-mfused-r$r 30 env ARBOR_CUDA_MERGE=fused $B --backend cuda-exact
  st bd-glu-r$r 30 env ARBOR_CUDA_GLU=fused $B --backend cuda-exact
  st bd-qkv-r$r 30 env ARBOR_CUDA_QKV=fused $B --backend cuda-exact
  st bd-all-r$r 30 env $ALL $B --backend cuda-exact
done
st bdf-all 30 env $ALL $B --backend cuda
L="arbor check-lossless --datasets humaneval,gsm8k --limit 5 --max-new 128"
st lossless-exact 120 $L --backend cuda-exact --methods pld,tr,goose
st lossless-exact-all 120 env $ALL $L --backend cuda-exact --methods pld,tr,goose
st lossless-fast 120 $L --backend cuda --methods pld,tr,goose
st auto-exact 120 $L --backend cuda-exact --methods pld-auto,tr-auto,goose-auto
st heads-exact 120 $L --backend cuda-exact --methods medusa
st heads-fast 120 $L --backend cuda --methods medusa
st run 120 arbor run configs/gpu.json --limit 5 --db $D/gpu.db --quiet
st report 30 arbor report --db $D/gpu.db --table table3
st run-all 120 env $ALL arbor run configs/gpu.json --limit 5 --db $D/gpu-all.db --quiet
st report-all 30 arbor report --db $D/gpu-all.db --table table3
st msuite-all 150 env $ALL test_gpu --verbose=1 -j1
tar -C $D -czf $OUT/c2.tar.gz . ; cp $D/c2-info.txt $OUT/
grep -h -E 'Synthesis|FAIL' $D/c2-*suite*.txt | head -30
for f in $D/c2-bd*.txt; do echo "$(basename $f) $(grep -E '^decode' $f | head -1 | cut -c1-40) $(grep -E '^ *wide' $f | head -1 | cut -c1-70)"; done
grep -h -i -E 'mismatch|total' $D/c2-lossless*.txt $D/c2-auto*.txt $D/c2-heads*.txt | head -30
cat $D/c2-report.txt $D/c2-report-all.txt | head -60
