#!/bin/bash
# call 1: unpack the bundle, keep model part 1, run the synthetic gpu suite (default and all
# fused variants), the 8B A/B benches of the kernel variants (exact mode, 3 alternated rounds)
set -u
R=$PWD W=/tmp/w D=/tmp/w/out
mkdir -p $W $D && cd $W && tar xf $R/gpu-in/b.tar.xz && cp $R/gpu-in/m0 $W/m0 || exit 3
. $W/arbor-gpu/env.sh
unset ARBOR_MODEL
export ARBOR_CACHE=$W/cache
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; arbor --version; nproc; } > $D/c1-info.txt 2>&1
T0=$SECONDS
st() { local n=$1 l=$2; shift 2; if [ $((SECONDS - T0)) -gt ${BUDGET:-330} ]; then echo "$n skipped (budget)" >> $D/c1-info.txt; return; fi
  local t=$SECONDS; timeout $l "$@" > $D/c1-$n.txt 2>&1; echo "$n rc $? t $((SECONDS - t))" | tee -a $D/c1-info.txt; }
ALL="ARBOR_CUDA_MERGE=fused ARBOR_CUDA_GLU=fused ARBOR_CUDA_QKV=fused"
st suite 150 test_gpu --verbose=1 -j1
st synth 200 arbor synth-model --shape llama-8b --type q4_0 --out /tmp/m8.gguf
for r in 1 2 3; do
  st b8-base-r$r 40 arbor bench engine --model /tmp/m8.gguf --backend cuda-exact --steps 512 --prefill 128 --reps 2
  st b8-merge-r$r 40 env ARBOR_CUDA_MERGE=parallel arbor bench engine --model /tmp/m8.gguf --backend cuda-exact --steps 512 --prefill 128 --reps 2
  st b8-mfused-r$r 40 env ARBOR_CUDA_MERGE=fused arbor bench engine --model /tmp/m8.gguf --backend cuda-exact --steps 512 --prefill 128 --reps 2
  st b8-glu-r$r 40 env ARBOR_CUDA_GLU=fused arbor bench engine --model /tmp/m8.gguf --backend cuda-exact --steps 512 --prefill 128 --reps 2
  st b8-qkv-r$r 40 env ARBOR_CUDA_QKV=fused arbor bench engine --model /tmp/m8.gguf --backend cuda-exact --steps 512 --prefill 128 --reps 2
  st b8-all-r$r 40 env $ALL arbor bench engine --model /tmp/m8.gguf --backend cuda-exact --steps 512 --prefill 128 --reps 2
done
st b8f-base 40 arbor bench engine --model /tmp/m8.gguf --backend cuda --steps 512 --prefill 128 --reps 2
st b8f-all 40 env $ALL arbor bench engine --model /tmp/m8.gguf --backend cuda --steps 512 --prefill 128 --reps 2
st suite-all 150 env $ALL test_gpu --verbose=1 -j1
rm -f /tmp/m8.gguf
tar -C $D -czf $OUT/c1.tar.gz . ; cp $D/c1-info.txt $OUT/
grep -h -E '^decode|Synthesis|FAIL' $D/c1-*.txt | head -60
for f in $D/c1-b8*.txt; do echo "$(basename $f) $(grep -E '^decode' $f | head -1 | cut -c1-40) $(grep -E '64 nodes =' $f | head -1)"; done
