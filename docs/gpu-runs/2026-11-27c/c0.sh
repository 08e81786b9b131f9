#!/bin/bash
# stage: unpack the bundle and keep model part 1 on this machine for c2.sh
R=$PWD W=/tmp/w
mkdir -p $W/out && cd $W && tar xf $R/gpu-in/b.tar.xz && cp $R/gpu-in/m0 $W/m0 && echo staged && nvidia-smi -L
