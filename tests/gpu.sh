#!/bin/sh
# tests/gpu.sh - what `make test-gpu` runs on a machine with GPUs: every
# tests/gpu_*.cu and tests/compile_cuda.cu built and run, then once under
# compute-sanitizer (memcheck, racecheck); examples/minimal.cu built the same
# way, run plainly and under memcheck. Ends with "N passed, N failed".
# T=name (make test-gpu T=gpu_engine, T=tests/gpu_engine.cu, T=minimal): only
# that one file.
# Without a visible GPU (nvidia-smi lists none, or CUDA_VISIBLE_DEVICES is set
# and empty) nothing here can run: it says "no GPU visible" once and exits 77
# (automake's "skipped"), building nothing.
set -u
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU' || { [ -n "${CUDA_VISIBLE_DEVICES+set}" ] && [ -z "$CUDA_VISIBLE_DEVICES" ]; }; then
    echo "tests/gpu.sh: no GPU visible (nvidia-smi -L lists none, or CUDA_VISIBLE_DEVICES is empty): skipped (exit 77)"
    exit 77
fi
B=${BUILD:-build}
NVCC=${NVCC:-nvcc}; GPU_ARCH=${GPU_ARCH:-sm_90}; NCCL_HOME=${NCCL_HOME:-}
SANITIZER=${SANITIZER:-compute-sanitizer}
mkdir -p "$B/g" "$B/log"
pass=0; fail=0
NCCL_INC=""; NCCL_LIB=""
if [ -n "$NCCL_HOME" ]; then
    NCCL_INC="-I$NCCL_HOME/include"
    NCCL_LIB="-L$NCCL_HOME/lib -L$NCCL_HOME/lib64 -Xlinker -rpath=$NCCL_HOME/lib -Xlinker -rpath=$NCCL_HOME/lib64"
fi
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}

. tests/lib.sh # step, run, pick, known

known tests/compile_cuda.cu tests/gpu_*.cu examples/minimal.cu
nvidia-smi -L 2>/dev/null | sed 's/^/gpu: /'
for cu in $(pick tests/compile_cuda.cu $(ls tests/gpu_*.cu 2>/dev/null)); do
    n=$(basename "$cu" .cu)
    # GPU_SKIP_BUILD=1: reuse the binaries of an earlier run (a second pass with other GPUs visible)
    if [ "${GPU_SKIP_BUILD:-0}" != 1 ] || [ ! -x "$B/g/$n" ]; then
        step "build-$n" "$NVCC" -std=c++17 -O2 -lineinfo -arch="$GPU_ARCH" -I. $NCCL_INC -o "$B/g/$n" "$cu" $NCCL_LIB -lnccl -lcublasLt -lcublas
    fi
    [ -x "$B/g/$n" ] || continue
    ZERO_GPU_EXPORT="$PWD/$B/g/model.safetensors" run "$n" "$B/g/$n"
    # under the sanitizers: one GPU (one rank), quick cases
    CUDA_VISIBLE_DEVICES=0 ZERO_TEST_QUICK=1 run "memcheck-$n" "$SANITIZER" --error-exitcode 1 --report-api-errors no --tool memcheck "$B/g/$n"
    CUDA_VISIBLE_DEVICES=0 ZERO_TEST_QUICK=1 ZERO_TEST_RACECHECK=1 run "racecheck-$n" "$SANITIZER" --error-exitcode 1 --report-api-errors no --tool racecheck "$B/g/$n"
done
# examples/minimal.cu, the first GPU program the docs show (a scratch directory for its checkpoint)
if [ -f examples/minimal.cu ] && { [ -z "$T" ] || [ "$T" = minimal ]; }; then
    if [ "${GPU_SKIP_BUILD:-0}" != 1 ] || [ ! -x "$B/g/minimal" ]; then
        step "build-minimal" "$NVCC" -std=c++17 -O2 -lineinfo -arch="$GPU_ARCH" -I. $NCCL_INC -o "$B/g/minimal" examples/minimal.cu $NCCL_LIB -lnccl -lcublas
    fi
    if [ -x "$B/g/minimal" ]; then
        rm -rf "$B/g/minimal.ckpt" && mkdir -p "$B/g/minimal.ckpt"
        run "minimal" "$B/g/minimal" "$B/g/minimal.ckpt"
        rm -rf "$B/g/minimal.ckpt" && mkdir -p "$B/g/minimal.ckpt"
        CUDA_VISIBLE_DEVICES=0 ZERO_TEST_QUICK=1 run "memcheck-minimal" "$SANITIZER" --error-exitcode 1 --report-api-errors no --tool memcheck "$B/g/minimal" "$B/g/minimal.ckpt"
    fi
fi
# the export of gpu_engine's resumed model, read by Python's safetensors (where installed)
if { [ -z "$T" ] || [ "$T" = gpu_engine ]; } && [ -f "$B/g/model.safetensors" ] && python3 -c "import safetensors, numpy" 2>/dev/null; then
    run "safetensors-load" python3 -c "
import numpy as np, sys
from safetensors.numpy import load_file
d = load_file('$B/g/model.safetensors')
names = sorted(d, key=lambda k: int(k[1:]))
got = np.concatenate([d[k].reshape(-1) for k in names]).astype(np.float32)
want = np.fromfile('$B/g/model.safetensors.expect', dtype=np.float32)
ok = got.shape == want.shape and np.array_equal(got.view(np.uint32), want.view(np.uint32))
print('safetensors: %d tensors, %d values, %s' % (len(names), got.size, 'bitwise equal' if ok else 'DIFFERENT'))
print('%d passed, %d failed' % (1 if ok else 0, 0 if ok else 1))
sys.exit(0 if ok else 1)"
fi
# torchrun --no-python starts the ranks itself (its store holds MASTER_PORT)
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && ngpu=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
if { [ -z "$T" ] || [ "$T" = gpu_engine ]; } && command -v torchrun >/dev/null 2>&1 && [ "$ngpu" -ge 2 ] && [ -x "$B/g/gpu_engine" ]; then
    ZERO_TEST_QUICK=1 run "torchrun-gpu_engine" torchrun --no-python --nproc-per-node 2 "$B/g/gpu_engine"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
